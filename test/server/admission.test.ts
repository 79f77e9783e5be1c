// Connections that never say hello, against a real server. Found by an
// adversary: 486 idle sockets at a 512 open-file limit starved LevelDB ("Too many
// open files") and the member exited 70. Now the client port shares descriptors
// out so storage always has its own, one address cannot take them all, a socket
// that says nothing is closed after the hello timeout, and until its hello a
// connection may send only small frames.

import { connect as tcpConnect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../src/client/index.js';
import { pollUntil } from '../support/poll.js';
import { killAll, VeraProcess } from '../support/vera-process.js';
import { packMsgpack, WireClient } from './wire-client.js';
import { waitForLeadership } from './fixture.js';

const sockets: Socket[] = [];
let client: VeraClient | null = null;

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await client?.close().catch(() => undefined);
  client = null;
  await killAll();
});

/** Opens a raw TCP socket from `localAddress` (any 127/8 address is loopback) that sends nothing; resolves once connected or refused. */
function idleSocket(port: number, localAddress: string): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: '127.0.0.1', port, localAddress });
    sockets.push(socket);
    socket.on('error', () => undefined);
    socket.once('connect', () => resolve(socket));
    socket.once('close', () => resolve(socket));
  });
}

const isOpen = (s: Socket): boolean => !s.destroyed && s.readyState === 'open';

describe('connections before hello', () => {
  it('under a 256 open-file limit, 400 idle sockets from one address are turned away and writes go on', async () => {
    const vp = await VeraProcess.start({ openFileLimit: 256, args: ['--connections-per-address', '64', '--hello-timeout', '60s'] });
    await waitForLeadership(vp);
    const budget = vp.logs.find((l) => l.event === 'fd-budget')!;
    expect(budget).toMatchObject({ openFileLimit: 256, levelMaxOpenFiles: 64 });
    const connections = Number(budget.clientConnections);
    expect(connections).toBeLessThan(256 - 64);

    const flood = await Promise.all(Array.from({ length: 400 }, () => idleSocket(vp.clientPort, '127.0.0.2')));
    // The server closes what it does not admit; the ones it kept stay open.
    const kept = await pollUntil('the refused sockets to be closed', async () => {
      const open = flood.filter(isOpen).length;
      return open <= 64 ? open : undefined;
    });
    expect(kept).toBe(64);

    // Another address still gets in, and enough writes to make LevelDB open new files all commit.
    client = await connect(vp.url);
    const big = 'x'.repeat(900 * 1024);
    for (let i = 0; i < 8; i++) await client.push('/after-flood', `${i}${big}`, { persistent: true, watch: false });
    const items = (await client.get('/after-flood')).items;
    expect(items).toHaveLength(8);
    expect(vp.logs.some((l) => l.event === 'storage-failed')).toBe(false);
    expect(vp.logs.filter((l) => l.event === 'connection-refused').length).toBeLessThanOrEqual(10);
  });

  it('a WebSocket that never says hello is closed after the hello timeout; a raw socket that sends nothing too', async () => {
    const vp = await VeraProcess.start({ args: ['--hello-timeout', '400ms'] });
    await waitForLeadership(vp);
    const silent = await WireClient.connect(vp.url, 'msgpack');
    const raw = await idleSocket(vp.clientPort, '127.0.0.1');
    const closed = await silent.waitClose(5000);
    expect(closed.code).toBe(4005);
    expect(closed.reason).toMatch(/no hello within 400 ms/);
    await pollUntil('the raw socket to be closed', async () => (isOpen(raw) ? undefined : true), 5000);

    // One that says hello in time is not closed by the timer: past the timeout (a wait that is the point
    // of the check, not a stand-in for synchronisation) it still answers.
    const talker = await WireClient.connect(vp.url, 'msgpack');
    await talker.hello({ timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 800));
    expect((await talker.request('ping')).ok).toBe(true);
    expect(talker.closed).toBeNull();
  });

  it('before its hello a connection may send only small frames; after it the full frame limit applies', async () => {
    const vp = await VeraProcess.start();
    await waitForLeadership(vp);
    const early = await WireClient.connect(vp.url, 'msgpack');
    early.sendRaw(packMsgpack({ id: 1, op: 'push', path: '/p', data: 'y'.repeat(100 * 1024) }));
    expect((await early.waitClose(5000)).code).toBe(1009);

    const late = await WireClient.connect(vp.url, 'msgpack');
    await late.hello({ timeoutMs: 30_000 });
    const pushed = await late.request('push', { path: '/p', data: 'y'.repeat(100 * 1024) });
    expect(pushed.ok).toBe(true);
  });
});
