// What a server sends is bounded by what its client reads, against a real server.
// Found by an adversary: a WebSocket client that sent gets of a large list and
// never read its socket grew the server from 0.7 to 3 GB; 60 pipelined HTTP reads
// on a socket that never read grew it from 1.1 to 3.8 GB; a list over the 16 MiB
// frame limit could not be read at all (the client library went into a reconnect
// loop) and a resync of a watch on `/` was the whole database in one frame.
// Now every outbound byte counts against the connection: reads wait for room,
// requests stop being read past a mark, the socket is dropped past a bound, and
// large lists and resyncs travel in frames of at most `replyBytes` of items.

import { connect as tcpConnect, type Socket } from 'node:net';
import { readFile } from 'node:fs/promises';
import WebSocket from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../src/client/index.js';
import { pollUntil } from '../support/poll.js';
import { killAll, VeraProcess } from '../support/vera-process.js';
import { startLeader } from './fixture.js';
import { packMsgpack, WireClient } from './wire-client.js';

const MiB = 1024 * 1024;
/** The server's default frame limit (PROTOCOL.md), which no frame it sends may pass either. */
const FRAME_LIMIT = 16 * MiB;
/** Data of one item: just under the 1 MiB data limit. */
const BIG = 'x'.repeat(1_000_000);

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await killAll();
});

async function rssMiB(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(status);
  if (match === null) throw new Error(`no ${field} for ${pid}`);
  return Number(match[1]) / 1024;
}

async function client(vp: VeraProcess): Promise<VeraClient> {
  const c = await connect(vp.url, { requestTimeoutMs: 60_000 });
  cleanups.push(() => c.close().catch(() => undefined));
  return c;
}

/** `count` items of about 1 MB each on `path`. */
async function fill(c: VeraClient, path: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await c.push(path, `${i}:${BIG}`, { persistent: true, watch: false });
}

/** A raw WebSocket that has said hello and then stops reading its socket. */
async function deafSocket(vp: VeraProcess): Promise<WebSocket> {
  const ws = new WebSocket(`${vp.url}/v1/connect`, { perMessageDeflate: false });
  cleanups.push(() => ws.terminate());
  ws.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const helloReply = new Promise<void>((resolve) => ws.once('message', () => resolve()));
  ws.send(packMsgpack({ id: 1, op: 'hello', timeoutMs: 60_000 }));
  await helloReply;
  (ws as unknown as { _socket: Socket })._socket.pause();
  return ws;
}

describe('output to a client is bounded by what it reads', () => {
  it('pipelined gets on a WebSocket that never reads: the server holds about one reply, and others are served meanwhile', async () => {
    const vp = await startLeader();
    const pid = vp.proc.pid!;
    const writer = await client(vp);
    await fill(writer, '/big', 6); // 6 MB: under the reply bound, so every get is answered whole
    const before = await rssMiB(pid, 'VmRSS');

    const deaf = await deafSocket(vp);
    for (let id = 2; id < 152; id++) deaf.send(packMsgpack({ id, op: 'get', path: '/big' })); // 150 x 6 MB of replies asked for

    // Others are served while it sits there: a get of the same list and a write.
    const other = await client(vp);
    expect((await other.get('/big')).items).toHaveLength(6);
    await other.push('/other', 'still writing', { persistent: true, watch: false });
    const after = await rssMiB(pid, 'VmHWM');
    console.log(`[output] 150 unread gets of a 6 MB list: server peak RSS grew ${(after - before).toFixed(0)} MiB`);
    // Before the bound: 1.6 GB more, replies queued for a socket nobody reads.
    expect(after - before).toBeLessThan(200);
  });

  it('a WebSocket whose unread replies pass the output bound is dropped', async () => {
    const vp = await startLeader();
    const writer = await client(vp);
    await fill(writer, '/big', 6);
    const deaf = await deafSocket(vp);
    // Tiny requests with large replies: each exact watch answers with the whole 6 MB list.
    for (let id = 2; id < 42; id++) deaf.send(packMsgpack({ id, op: 'watch', path: '/big' }));
    const dropped = await vp.waitForLog((l) => l.event === 'client-output-backlog', 30_000);
    expect(Number(dropped.buffered)).toBeGreaterThan(64 * MiB);
    expect(Number(dropped.buffered)).toBeLessThan(64 * MiB + 2 * FRAME_LIMIT);
    // The server is fine and the list intact.
    expect((await writer.get('/big')).items).toHaveLength(6);
  });

  it('60 pipelined HTTP reads on a socket that never reads hold about one page, and the socket is closed', async () => {
    const vp = await startLeader();
    const pid = vp.proc.pid!;
    const writer = await client(vp);
    await fill(writer, '/big', 6);
    const before = await rssMiB(pid, 'VmRSS');

    const socket = tcpConnect({ host: '127.0.0.1', port: vp.clientPort });
    cleanups.push(() => void socket.destroy());
    socket.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.pause();
    let requests = '';
    for (let i = 0; i < 60; i++) requests += `GET /v1/data/big HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`;
    socket.write(requests);
    // Served one at a time at the reader's pace; past 16 waiting, the socket is closed.
    socket.resume(); // let 'close' be seen; what arrives is dropped unread
    socket.on('data', () => socket.pause());
    await closed;
    expect((await writer.get('/big')).items).toHaveLength(6);
    const after = await rssMiB(pid, 'VmHWM');
    console.log(`[output] 60 unread pipelined HTTP reads of a 6 MB list: server peak RSS grew ${(after - before).toFixed(0)} MiB`);
    expect(after - before).toBeLessThan(200);
  });
});

describe('large lists and resyncs travel in bounded frames', () => {
  it('a 20 MB list: a plain get is TOO_LARGE, a streamed get comes in frames under the limit from one read, the client library and HTTP read it whole', async () => {
    const vp = await startLeader();
    const writer = await client(vp);
    await fill(writer, '/huge', 20);

    const wire = await WireClient.connect(vp.url, 'msgpack');
    cleanups.push(() => void wire.close());
    await wire.hello();
    const plain = await wire.request('get', { path: '/huge' });
    expect(plain.ok).toBe(false);
    expect(plain.error?.code).toBe('TOO_LARGE');
    expect(plain.error?.message).toMatch(/stream/);

    const id = wire.newId();
    const from = wire.frames.length;
    wire.send({ id, op: 'get', path: '/huge', stream: true });
    await wire.waitFrame((f) => f.value?.id === id && f.value.more === undefined, 'the last frame of the streamed get', from, 30_000);
    const parts = wire.frames.slice(from).filter((f) => f.value?.id === id);
    expect(parts.length).toBeGreaterThan(2);
    for (const part of parts) expect(part.bytes).toBeLessThan(FRAME_LIMIT);
    expect(parts.slice(0, -1).every((p) => p.value?.more === true)).toBe(true);
    expect(new Set(parts.map((p) => p.value?.index)).size).toBe(1); // one read, one index
    const streamed = parts.flatMap((p) => p.value?.items as Array<{ data: string }>);
    expect(streamed.map((i) => i.data.split(':')[0])).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));

    const viaLibrary = await writer.get('/huge');
    expect(viaLibrary.items.map((i) => i.data)).toEqual(streamed.map((i) => i.data));

    const http = await fetch(`${vp.httpUrl}/v1/data/huge`);
    expect(http.status).toBe(200);
    const body = (await http.json()) as { index: number; items: Array<{ data: string }> };
    expect(body.items.map((i) => i.data)).toEqual(streamed.map((i) => i.data));
  });

  it('a resync of a watch on / is sent in frames under the limit, and the client library assembles it', async () => {
    const vp = await startLeader();
    const writer = await client(vp);
    // 10 lists of 2 MB and one list of 10 MB (split across frames): 30 MB in all.
    for (let l = 0; l < 10; l++) await fill(writer, `/r/${l}`, 2);
    await fill(writer, '/r/whole', 10);

    // Two sessions watch everything: one through raw frames (to see their sizes), one through the client library.
    const wire1 = await WireClient.connect(vp.url, 'msgpack');
    const { session: wireSession, resume: wireResume } = await wire1.hello({ timeoutMs: 30_000 });
    expect((await wire1.request('watch', { path: '/', prefix: true })).ok).toBe(true);
    const watcher = await connect(vp.url, { requestTimeoutMs: 60_000, timeoutMs: 30_000 });
    cleanups.push(() => watcher.close().catch(() => undefined));
    await watcher.watch('/', { prefix: true });
    const resyncs: Array<ReadonlyArray<{ path: string; items: readonly unknown[] }>> = [];
    watcher.on('resync', (lists) => resyncs.push(lists));

    // A restarted leader has no event log to replay from: resuming a session gets a resync.
    await vp.stop();
    const again = await VeraProcess.start({ dataDir: vp.dataDir, clientPort: vp.clientPort, args: ['--session-timeout-max', '60s'] });
    await again.waitForLog((l) => l.event === 'role-changed' && l.role === 'leader');

    const wire = await WireClient.connect(again.url, 'msgpack');
    cleanups.push(() => void wire.close());
    await wire.hello({ session: wireSession, resume: wireResume });
    await wire.waitFrame((f) => f.value?.op === 'notify' && Array.isArray(f.value.resync) && f.value.more === undefined, 'the last resync frame', 0, 30_000);
    const frames = wire.frames.filter((f) => f.value?.op === 'notify');
    expect(frames.length).toBeGreaterThan(3);
    for (const f of frames) expect(f.bytes).toBeLessThan(FRAME_LIMIT);
    expect(frames.slice(0, -1).every((f) => f.value?.more === true)).toBe(true);
    const items = new Map<string, number>();
    for (const f of frames) for (const list of f.value!.resync as Array<{ path: string; items: unknown[] }>) items.set(list.path, (items.get(list.path) ?? 0) + list.items.length);
    expect(items.get('/r/whole')).toBe(10);
    for (let l = 0; l < 10; l++) expect(items.get(`/r/${l}`)).toBe(2);

    // The library client (its connection was cut by the restart) resumes too and gets the resync as one.
    await pollUntil('the library client to apply the resync', async () => (resyncs.length > 0 ? true : undefined), 30_000);
    const whole = resyncs[0]!.find((l) => l.path === '/r/whole');
    expect(whole?.items).toHaveLength(10);
    expect(resyncs[0]!.filter((l) => l.path === '/r/whole')).toHaveLength(1);
  });
});
