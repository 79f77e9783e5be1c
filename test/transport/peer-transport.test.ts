import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Packr } from 'msgpackr';
import pino from 'pino';
import { WebSocketServer } from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { DialerHandshake } from '../../src/raft/transport/auth.js';
import { encodeMessages, MAX_TERM_JUMP, packFrame } from '../../src/raft/transport/codec.js';
import { INBOUND_HANDSHAKE_MS, PeerTransport, PeerTransportError } from '../../src/raft/transport/peer-transport.js';
import type { AppendRequest, Message } from '../../src/raft/types.js';
import { CLUSTER, freePort, heartbeat, makeNode, RawPeer, SECRET, withDeadline, type TestNode } from './helpers.js';

const open: Array<PeerTransport> = [];
const rawPeers: RawPeer[] = [];

/** Starts the node's transport and closes it after the test. */
async function started(node: TestNode): Promise<TestNode> {
  open.push(node.transport);
  await node.transport.start();
  return node;
}

function raw(port: number, path?: string): RawPeer {
  const peer = new RawPeer(port, path);
  rawPeers.push(peer);
  return peer;
}

afterEach(async () => {
  await Promise.all(rawPeers.splice(0).map((p) => p.terminate()));
  await Promise.all(open.splice(0).map((t) => t.close()));
});

async function ports(...ids: string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const id of ids) out[id] = await freePort();
  return out;
}

describe('PeerTransport between real sockets', () => {
  it('two transports exchange messages both ways, in order', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p));
    const b = await started(makeNode('b', p));
    for (let t = 1; t <= 5; t++) a.transport.send(heartbeat('a', 'b', t));
    b.transport.send(heartbeat('b', 'a', 9));
    expect((await b.sink.waitForCount(5)).map((m) => m.term)).toEqual([1, 2, 3, 4, 5]);
    expect(await a.sink.waitForCount(1)).toEqual([heartbeat('b', 'a', 9)]);
    expect(a.transport.status().peers.b).toMatchObject({ connected: true, queuedMessages: 0, droppedMessages: 0 });
    expect(b.transport.status().inbound).toEqual(['a']);
  });

  it('three transports all reach each other', async () => {
    const p = await ports('n1', 'n2', 'n3');
    const nodes = await Promise.all(['n1', 'n2', 'n3'].map((id) => started(makeNode(id, p))));
    for (const from of nodes) for (const to of nodes) if (from !== to) from.transport.send(heartbeat(from.id, to.id, 1));
    for (const node of nodes) {
      const got = await node.sink.waitForCount(2);
      expect(got.map((m) => m.from).sort()).toEqual(nodes.filter((n) => n !== node).map((n) => n.id).sort());
      expect(got.every((m) => m.to === node.id)).toBe(true);
    }
  });

  /** Nodes a and b, with a's link to b up (one heartbeat through it), and the frames it had sent by then. */
  async function linkUp() {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p));
    const b = await started(makeNode('b', p));
    a.transport.send(heartbeat('a', 'b', 1));
    await b.sink.waitForCount(1);
    return { a, b, framesBefore: a.transport.status().peers.b!.framesSent };
  }

  it('coalesces messages sent in one tick into one frame', async () => {
    const { a, b, framesBefore } = await linkUp();
    for (let t = 2; t <= 21; t++) a.transport.send(heartbeat('a', 'b', t));
    expect((await b.sink.waitForCount(21)).map((m) => m.term)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
    expect(a.transport.status().peers.b!.framesSent - framesBefore).toBe(1);
  });

  it('flush() writes what was sent in this tick at once, in one frame, not at the end of the turn', async () => {
    const { a, b, framesBefore } = await linkUp();
    a.transport.send(heartbeat('a', 'b', 2));
    a.transport.send(heartbeat('a', 'b', 3));
    a.transport.flush();
    expect(a.transport.status().peers.b).toMatchObject({ queuedMessages: 0, framesSent: framesBefore + 1 });
    a.transport.flush(); // nothing queued: no empty frame
    expect((await b.sink.waitForCount(3)).map((m) => m.term)).toEqual([1, 2, 3]);
    expect(a.transport.status().peers.b!.framesSent).toBe(framesBefore + 1);
  });

  it('delivers messages queued for a peer that comes up late', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p));
    for (let t = 1; t <= 3; t++) a.transport.send(heartbeat('a', 'b', t));
    await a.logger.waitFor('peer.unreachable', { peer: 'b' });
    expect(a.transport.status().peers.b).toMatchObject({ connected: false, queuedMessages: 3 });
    const b = await started(makeNode('b', p));
    expect((await b.sink.waitForCount(3)).map((m) => m.term)).toEqual([1, 2, 3]);
  });

  it('bounds the queue of an unreachable peer by dropping the oldest messages', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p, { limits: { maxQueueMessages: 4, maxQueueBytes: 1 << 20, maxFrameBytes: 64 * 1024 } }));
    for (let t = 1; t <= 10; t++) a.transport.send(heartbeat('a', 'b', t));
    expect(a.transport.status().peers.b).toMatchObject({ queuedMessages: 4, droppedMessages: 6 });
    expect(a.logger.events('peer.queueOverflow')).toHaveLength(1);
    const b = await started(makeNode('b', p));
    expect((await b.sink.waitForCount(4)).map((m) => m.term)).toEqual([7, 8, 9, 10]);
    expect(a.transport.status().peers.b?.queuedMessages).toBe(0);
  });

  it('bounds the queue by bytes too', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p, { limits: { maxQueueMessages: 1000, maxQueueBytes: 3000, maxFrameBytes: 64 * 1024 } }));
    for (let t = 1; t <= 50; t++) a.transport.send(heartbeat('a', 'b', t));
    const { queuedBytes, queuedMessages, droppedMessages } = a.transport.status().peers.b!;
    expect(queuedBytes).toBeLessThanOrEqual(3000);
    expect(queuedMessages + droppedMessages).toBe(50);
    expect(droppedMessages).toBeGreaterThan(0);
    const b = await started(makeNode('b', p));
    const got = await b.sink.waitForCount(queuedMessages);
    expect(got.map((m) => m.term)).toEqual(Array.from({ length: queuedMessages }, (_, i) => 51 - queuedMessages + i));
  });

  it('reconnects to a peer that restarts', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p));
    const b1 = await started(makeNode('b', p));
    a.transport.send(heartbeat('a', 'b', 1));
    b1.transport.send(heartbeat('b', 'a', 1));
    await b1.sink.waitForCount(1);
    await a.sink.waitForCount(1);

    await b1.transport.close();
    await a.logger.waitFor('peer.disconnected', { peer: 'b' });
    a.transport.send(heartbeat('a', 'b', 2));

    const b2 = await started(makeNode('b', p));
    expect(await b2.sink.waitForCount(1)).toEqual([heartbeat('a', 'b', 2)]);
    expect(b1.sink.messages).toHaveLength(1);
    // And the restarted peer reaches us again on a fresh inbound connection.
    b2.transport.send(heartbeat('b', 'a', 2));
    expect((await a.sink.waitForCount(2))[1]).toEqual(heartbeat('b', 'a', 2));
  });

  it('dials a peer at once when that peer dials in, instead of waiting out its backoff', async () => {
    const p = await ports('a', 'b');
    // A backoff far longer than the test: a's link to b may reach b only by being told b is up.
    const a = await started(makeNode('a', p, { reconnect: { initialDelayMs: 600_000, maxDelayMs: 600_000 } }));
    a.transport.send(heartbeat('a', 'b', 1));
    await a.logger.waitFor('peer.unreachable', { peer: 'b' });
    const b = await started(makeNode('b', p));
    b.transport.send(heartbeat('b', 'a', 1)); // b dials a (its link is fresh)
    await a.sink.waitForCount(1);
    expect((await b.sink.waitForCount(1)).map((m) => m.term)).toEqual([1]);
    expect(a.transport.status().peers.b).toMatchObject({ connected: true, queuedMessages: 0 });
  });

  it('splits an append larger than a frame into consecutive appends', async () => {
    const p = await ports('a', 'b');
    const limits = { maxQueueMessages: 1000, maxQueueBytes: 1 << 20, maxFrameBytes: 4096 };
    const a = await started(makeNode('a', p, { limits }));
    const b = await started(makeNode('b', p, { limits }));
    const entries = Array.from({ length: 20 }, (_, i) => ({
      index: 101 + i, term: 7, kind: 'command' as const, data: new Uint8Array(1000).fill(i),
    }));
    const big: AppendRequest = { type: 'app', from: 'a', to: 'b', term: 7, prevIndex: 100, prevTerm: 6, commit: 90, entries };
    a.transport.send(big);
    // Wait until every entry has arrived, whatever number of pieces that took.
    let got: Message[] = [];
    for (let n = 1; ; n++) {
      got = await b.sink.waitForCount(n);
      if (got.flatMap((m) => (m.type === 'app' ? m.entries : [])).length === entries.length) break;
    }
    expect(got.length).toBeGreaterThan(1);
    const apps = got as AppendRequest[];
    expect(apps.flatMap((m) => m.entries)).toEqual(entries);
    expect(apps[0]).toMatchObject({ prevIndex: 100, prevTerm: 6 });
    for (let i = 1; i < apps.length; i++) expect(apps[i]!.prevIndex).toBe(apps[i - 1]!.entries.at(-1)!.index);
  });

  it('drops and logs messages to an unknown peer', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p));
    a.transport.send(heartbeat('a', 'zz', 1));
    a.transport.send(heartbeat('a', 'zz', 2));
    expect(a.logger.events('peer.unknownDestination')).toHaveLength(1);
    expect(a.transport.status().peers).not.toHaveProperty('zz');
  });

  it('talks to a member added later and stops talking to a removed one', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', { a: p.a! }));
    const b = await started(makeNode('b', p));
    a.transport.addPeer({ id: 'b', host: '127.0.0.1', port: p.b! });
    a.transport.send(heartbeat('a', 'b', 1));
    expect(await b.sink.waitForCount(1)).toEqual([heartbeat('a', 'b', 1)]);
    expect(() => a.transport.addPeer({ id: 'b', host: '127.0.0.1', port: p.b! })).toThrow(PeerTransportError);
    await a.transport.removePeer('b');
    a.transport.send(heartbeat('a', 'b', 2));
    expect(a.logger.events('peer.unknownDestination')).toHaveLength(1);
  });

  it('fails to start with a clear error when the peer port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const node = makeNode('a', { a: port });
      const err = await node.transport.start().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PeerTransportError);
      expect(err).toMatchObject({ code: 'listen', message: `peer port 127.0.0.1:${port} is already in use` });
      await node.transport.close();
    } finally {
      await new Promise<void>((r) => blocker.close(() => r()));
    }
  });

  it('refuses bad options with a typed error', () => {
    const base = makeNode('a', { a: 1, b: 2 });
    expect(base.transport).toBeInstanceOf(PeerTransport);
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ selfId: '' }, /selfId/],
      [{ peers: [{ id: 'a', host: 'h', port: 1 }] }, /must not include this node/],
      [{ peers: [{ id: 'b', host: 'h', port: 1 }, { id: 'b', host: 'h', port: 2 }] }, /listed twice/],
      [{ peers: [{ id: 'b', host: 'h', port: 0 }] }, /port must be an integer port in 1..65535/],
      [{ peers: [{ id: 'b', host: 'h:99/x', port: 2 }] }, /unusable host/],
      [{ peers: [{ id: 'b', host: 'bad host', port: 2 }] }, /unusable host/],
      [{ listen: { host: '127.0.0.1', port: 70000 } }, /listen.port/],
      [{ secret: '' }, /secret must not be empty/],
      [{ clusterId: '' }, /cluster id/],
      [{ limits: { maxQueueMessages: 0, maxQueueBytes: 1, maxFrameBytes: 4096 } }, /limits.maxQueueMessages/],
      [{ limits: { maxQueueMessages: 1, maxQueueBytes: 1, maxFrameBytes: 100 } }, /maxFrameBytes must be at least 4096/],
      [{ reconnect: { initialDelayMs: 100, maxDelayMs: 1 } }, /maxDelayMs/],
    ];
    for (const [override, message] of bad) {
      const attempt = (): unknown => makeNode('a', { a: 1, b: 2 }, override as never);
      expect(attempt).toThrow(PeerTransportError);
      expect(attempt).toThrow(message);
    }
  });

  it('accepts a pino logger', async () => {
    const p = await ports('a');
    const node = await started(makeNode('a', p, { logger: pino({ level: 'silent' }) }));
    expect(node.transport.address.port).toBe(p.a);
  });

  it('leaves nothing running after close: a process using it exits by itself', async () => {
    // The real test of "no open handles": the event loop empties and the process ends on its
    // own, with no forced exit. A leaked socket or timer would keep it alive until the deadline.
    const transportUrl = new URL('../../src/raft/transport/peer-transport.ts', import.meta.url).href;
    const script = `
      import WebSocket from 'ws';
      import { createServer } from 'node:net';
      const { PeerTransport } = await import(${JSON.stringify(transportUrl)});
      const quiet = { debug() {}, info() {}, warn() {}, error() {} };
      const got = [];
      let delivered;
      const arrived = new Promise((r) => (delivered = r));
      const make = (id) => new PeerTransport({
        selfId: id, listen: { host: '127.0.0.1', port: 0 }, peers: [], secret: 's', clusterId: 'c',
        onMessage: (m) => { got.push(m); delivered(); }, logger: quiet, reconnect: { initialDelayMs: 5, maxDelayMs: 20 },
        handshakeTimeoutMs: 60_000, // longer than the test's deadline: only close() may end the stranger
      });
      const a = make('a'), b = make('b');
      await a.start(); await b.start();
      a.addPeer({ id: 'b', ...b.address }); b.addPeer({ id: 'a', ...a.address });
      // A member that never comes up, so a keeps a redial timer going.
      const dead = createServer(); await new Promise((r) => dead.listen(0, '127.0.0.1', r));
      const deadPort = dead.address().port; await new Promise((r) => dead.close(r));
      a.addPeer({ id: 'c', host: '127.0.0.1', port: deadPort });
      a.send({ type: 'timeoutNow', from: 'a', to: 'c', term: 1 });
      // A stranger stuck in the handshake, so b holds an unauthenticated inbound socket.
      const stranger = new WebSocket('ws://127.0.0.1:' + b.address.port + '/vera/peer');
      stranger.on('error', () => {});
      await new Promise((r) => stranger.once('open', r));
      a.send({ type: 'timeoutNow', from: 'a', to: 'b', term: 1 });
      await arrived;
      await Promise.all([a.close(), b.close()]);
      console.log('closed after', got.length, 'message');
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const deadline = setTimeout(() => child.kill('SIGKILL'), 15_000);
    const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
    clearTimeout(deadline);
    expect({ code, signal, out: out.trim() }).toEqual({ code: 0, signal: null, out: 'closed after 1 message' });
  });
});

describe('PeerTransport refuses misbehaving peers', () => {
  it('delivers nothing between members with different secrets, and both close the connection', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p));
    const b = await started(makeNode('b', p, { secret: 'another-secret' }));
    a.transport.send(heartbeat('a', 'b', 1));
    b.transport.send(heartbeat('b', 'a', 1));
    // Each side, as listener, catches the other's bad proof and closes; each dialer hears the refusal.
    await b.logger.waitFor('peer.authFailed', { direction: 'inbound' });
    await a.logger.waitFor('peer.authFailed', { direction: 'inbound' });
    await a.logger.waitFor('peer.refused', { peer: 'b' });
    await b.logger.waitFor('peer.refused', { peer: 'a' });
    expect(a.sink.messages).toEqual([]);
    expect(b.sink.messages).toEqual([]);
    expect(a.transport.status()).toMatchObject({ inbound: [], peers: { b: { connected: false } } });
  });

  it('never sends messages to a listener that cannot prove the secret', async () => {
    // An impostor at b's address that accepts any proof and answers with a made-up one.
    const impostor = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/vera/peer' });
    await once(impostor, 'listening');
    const frames: unknown[] = [];
    const closed = new Promise<number>((resolve) => {
      impostor.on('connection', (ws) => {
        ws.on('message', (data) => {
          const frame = new Packr({ useRecords: false }).unpack(data as Buffer) as { t: string };
          frames.push(frame.t);
          if (frame.t === 'hello') ws.send(packFrame({ t: 'challenge', cluster: CLUSTER, from: 'b', nonce: Buffer.alloc(32, 1) }));
          if (frame.t === 'proof') ws.send(packFrame({ t: 'welcome', proof: Buffer.alloc(32, 2) }));
        });
        ws.on('close', (code) => resolve(code));
      });
    });
    try {
      const port = (impostor.address() as { port: number }).port;
      const a = await started(makeNode('a', { a: await freePort(), b: port }));
      a.transport.send(heartbeat('a', 'b', 1));
      expect(await closed).toBe(4001);
      await a.logger.waitFor('peer.authFailed', { direction: 'outbound', peer: 'b' });
      expect(frames.slice(0, 2)).toEqual(['hello', 'proof']);
      expect(frames).not.toContain('msgs');
      expect(a.transport.status().peers.b).toMatchObject({ connected: false, framesSent: 0, queuedMessages: 1 });
    } finally {
      for (const client of impostor.clients) client.terminate();
      await new Promise<void>((r) => impostor.close(() => r()));
    }
  });

  it('closes a raw client with the wrong secret before it can send anything', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p));
    const client = raw(p.a!);
    expect(await client.authenticate('b', 'a', 'wrong-secret')).toBe(false);
    expect((await client.closed).code).toBe(4001);
    expect(a.sink.messages).toEqual([]);
  });

  it('closes a raw client from another cluster', async () => {
    const p = await ports('a', 'b');
    await started(makeNode('a', p));
    const client = raw(p.a!);
    await client.opened;
    client.send(new DialerHandshake({ secret: SECRET, clusterId: 'someone-else', selfId: 'b' }, 'a').hello());
    const closed = await client.closed;
    expect(closed).toMatchObject({ code: 4001 });
    expect(closed.reason).toMatch(/cluster id mismatch/);
  });

  it('drops an authenticated peer that sends a malformed frame, delivering nothing from it', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p));
    const client = raw(p.a!);
    expect(await client.authenticate('b', 'a')).toBe(true);
    // One good message and one bad one in the same frame: neither may be delivered.
    client.send(packFrame({ t: 'msgs', m: [heartbeat('b', 'a', 1), { ...heartbeat('b', 'a', 2), term: -1 }] }));
    expect((await client.closed).code).toBe(4002);
    await a.logger.waitFor('peer.protocolError', { direction: 'inbound', peer: 'b' });
    expect(a.sink.messages).toEqual([]);
  });

  it('drops a member whose message jumps more than MAX_TERM_JUMP above our term, delivering nothing from that frame', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p, { currentTerm: () => 7 }));
    const client = raw(p.a!);
    expect(await client.authenticate('b', 'a')).toBe(true);
    client.send(encodeMessages([heartbeat('b', 'a', 7 + MAX_TERM_JUMP)]));
    expect(await a.sink.waitForCount(1)).toEqual([heartbeat('b', 'a', 7 + MAX_TERM_JUMP)]);
    client.send(encodeMessages([heartbeat('b', 'a', 8), heartbeat('b', 'a', Number.MAX_SAFE_INTEGER)]));
    expect((await client.closed).code).toBe(4002);
    const logged = await a.logger.waitFor('peer.protocolError', { direction: 'inbound', peer: 'b' });
    expect(logged.obj.err).toMatch(/more than 16777216 above this member's term 7/);
    expect(a.sink.messages).toHaveLength(1);
  });

  it('drops an authenticated peer whose message claims another sender', async () => {
    const p = await ports('a', 'b', 'c');
    const a = await started(makeNode('a', p));
    const client = raw(p.a!);
    expect(await client.authenticate('b', 'a')).toBe(true);
    client.send(encodeMessages([heartbeat('c', 'a', 1)]));
    expect((await client.closed).code).toBe(4001);
    expect(a.logger.events('peer.authFailed')[0]?.obj.err).toMatch(/claiming to be from c/);
    expect(a.sink.messages).toEqual([]);
  });

  it('drops a peer that sends messages before authenticating', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p));
    const client = raw(p.a!);
    await client.opened;
    client.send(encodeMessages([heartbeat('b', 'a', 1)]));
    expect((await client.closed).code).toBe(4002);
    expect(a.sink.messages).toEqual([]);
  });

  it('drops a peer that sends a text frame', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p));
    const client = raw(p.a!);
    expect(await client.authenticate('b', 'a')).toBe(true);
    client.send('{"type":"heartbeat"}');
    expect((await client.closed).code).toBe(4002);
    expect(a.sink.messages).toEqual([]);
  });

  it('drops a connection that does not authenticate in time', async () => {
    const p = await ports('a');
    const a = await started(makeNode('a', p, { handshakeTimeoutMs: 50 }));
    const client = raw(p.a!);
    await client.opened;
    expect((await client.closed).code).toBe(1006); // terminated, no close frame
    expect(a.logger.events('peer.handshakeTimeout')).toHaveLength(1);
  });

  it('refuses a WebSocket on another path', async () => {
    const p = await ports('a');
    await started(makeNode('a', p));
    const client = raw(p.a!, '/not-the-peer-path');
    expect((await client.closed).code).toBe(1006);
  });

  it('a valid peer still gets through while a stranger is refused', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p));
    const stranger = raw(p.a!);
    expect(await stranger.authenticate('b', 'a', 'wrong-secret')).toBe(false);
    const b = await started(makeNode('b', p));
    b.transport.send(heartbeat('b', 'a', 3));
    expect(await a.sink.waitForCount(1)).toEqual([heartbeat('b', 'a', 3)]);
  });
});

describe('PeerTransport under a flood of unauthenticated sockets', () => {
  /** Opens `count` idle sockets from `from` and waits until each is open or already closed. */
  async function idleSockets(port: number, count: number, from?: string): Promise<RawPeer[]> {
    const peers = Array.from({ length: count }, () => {
      const peer = new RawPeer(port, undefined, from);
      rawPeers.push(peer);
      return peer;
    });
    await Promise.all(peers.map((peer) => Promise.race([peer.opened, peer.closed]).catch(() => undefined)));
    return peers;
  }

  /** Resolves with the first `count` of `peers` to be closed, in the order they closed. */
  function firstClosed(peers: readonly RawPeer[], count: number): Promise<RawPeer[]> {
    const closed: RawPeer[] = [];
    return withDeadline(
      new Promise((resolve) => {
        for (const peer of peers) {
          void peer.closed.then(() => {
            closed.push(peer);
            if (closed.length === count) resolve([...closed]);
          });
        }
      }),
      `${count} sockets to be closed`,
    );
  }

  it('lets one stranger address hold only maxPendingPerAddress slots, and logs the refusals a few lines at a time', async () => {
    const p = await ports('a');
    const a = await started(makeNode('a', p, { maxPendingPerAddress: 3 }));
    const strangers = await idleSockets(p.a!, 40, '127.0.0.2');
    // Each socket was accepted or refused when its upgrade completed, before it saw 'open'.
    expect(a.transport.status().pendingHandshakes).toBe(3);
    const closed = await firstClosed(strangers, 37);
    // The three admitted are the first three: a full per-address quota refuses the newcomer.
    expect(strangers.slice(0, 3).some((s) => closed.includes(s))).toBe(false);
    const refusals = a.logger.events('peer.tooManyHandshakes');
    expect(refusals.length).toBeLessThanOrEqual(5);
    expect(refusals[0]!.msg).toContain('127.0.0.2');
  });

  it('evicts the oldest idle socket so that a member redialing gets in when every slot is taken from its own address', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p, { maxPendingHandshakes: 8 }));
    // 127.0.0.1 is member b's address, so the per-address limit does not apply: the stranger fills all 8 slots.
    const strangers = await idleSockets(p.a!, 8);
    expect(a.transport.status().pendingHandshakes).toBe(8);
    const b = await started(makeNode('b', p));
    b.transport.send(heartbeat('b', 'a', 7));
    expect(await a.sink.waitForCount(1)).toEqual([heartbeat('b', 'a', 7)]);
    // b's socket took the oldest stranger's slot.
    expect((await strangers[0]!.closed).code).toBe(1006);
    expect(a.logger.events('peer.handshakeEvicted').length).toBeGreaterThanOrEqual(1);
  });

  it('evicts a socket that said nothing before one that sent a hello', async () => {
    const p = await ports('a', 'b');
    const a = await started(makeNode('a', p, { maxPendingHandshakes: 2 }));
    const [hello] = await idleSockets(p.a!, 1);
    const challenge = hello!.nextFrame();
    hello!.send(new DialerHandshake({ secret: SECRET, clusterId: CLUSTER, selfId: 'b' }, 'a').hello());
    await challenge;
    const [silent] = await idleSockets(p.a!, 1);
    const [newcomer] = await idleSockets(p.a!, 1);
    expect(await firstClosed([hello!, silent!, newcomer!], 1)).toEqual([silent]);
    expect(a.transport.status().pendingHandshakes).toBe(2);
    expect(a.logger.events('peer.handshakeEvicted')).toHaveLength(1);
  });

  it('drops an idle inbound socket after INBOUND_HANDSHAKE_MS even when the dial deadline is longer', async () => {
    const p = await ports('a');
    const a = await started(makeNode('a', p, { handshakeTimeoutMs: 60_000 }));
    const client = raw(p.a!);
    await client.opened;
    const opened = performance.now();
    expect((await client.closed).code).toBe(1006);
    expect(performance.now() - opened).toBeLessThan(INBOUND_HANDSHAKE_MS + 1000);
    expect(a.logger.events('peer.handshakeTimeout')).toHaveLength(1);
  });
});
