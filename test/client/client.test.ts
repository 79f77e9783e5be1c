import { afterEach, describe, expect, it } from 'vitest';
import { connect, VeraError, type ChangeEvent, type VeraClient } from '../../src/client/index.js';
import type { ClientEvents } from '../../src/client/index.js';
import { FakeServer } from './fake-server.js';
import { client, server, stopAll } from './harness.js';
import { RangeClient } from '../../src/families/range/client.js';

afterEach(stopAll);

/** Resolves with the arguments of the next emission of `name`. */
function next<K extends keyof ClientEvents>(c: VeraClient, name: K): Promise<Parameters<ClientEvents[K]>> {
  return new Promise((resolve) => {
    const off = c.on(name, ((...args: Parameters<ClientEvents[K]>) => {
      off();
      resolve(args);
    }) as ClientEvents[K]);
  });
}

/** Resolves once `count` events have been seen, with all of them. */
function collectEvents(c: VeraClient): { events: ChangeEvent[]; until: (count: number) => Promise<ChangeEvent[]> } {
  const events: ChangeEvent[] = [];
  const waiters: Array<{ count: number; resolve: (e: ChangeEvent[]) => void }> = [];
  c.on('event', (e) => {
    events.push(e);
    for (const w of waiters.filter((w) => events.length >= w.count)) w.resolve(events);
  });
  return {
    events,
    until: (count) => (events.length >= count ? Promise.resolve(events) : new Promise((resolve) => waiters.push({ count, resolve }))),
  };
}

async function rejection(promise: Promise<unknown>): Promise<VeraError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(VeraError);
    return error as VeraError;
  }
  throw new Error('expected the promise to reject');
}

describe('client basics', () => {
  for (const encoding of ['msgpack', 'json'] as const) {
    it(`opens a session, pushes and reads back [${encoding}]`, async () => {
      const s = await server();
      const c = await client(s.url, { encoding });
      expect(c.session).toBe('s1');
      expect(c.state).toBe('open');

      const item = await c.push('/demo', { hello: 'world' }, { persistent: true });
      expect(item).toEqual({ index: 1, owner: null, data: { hello: 'world' } });
      await c.push('/demo/child', [1, 2, 3]);
      expect(await c.get('/demo')).toEqual({ index: 2, items: [item] });
      expect(await c.ls('/')).toEqual({ index: 2, children: ['demo'] });
      expect(await c.ls('/demo')).toEqual({ index: 2, children: ['child'] });

      // Every frame went in the chosen encoding.
      expect(s.received.every((r) => r.binary === (encoding === 'msgpack'))).toBe(true);
      expect(s.received.map((r) => r.request.op).slice(0, 5)).toEqual(['hello', 'push', 'push', 'get', 'ls']);
    });
  }

  it('accepts a URL with or without the /v1/connect path', async () => {
    const s = await server();
    const c = await client(`${s.url}/v1/connect`);
    expect(c.serverUrl).toBe(`${s.url}/v1/connect`);
    const bare = await client(s.url.replace('ws://', ''));
    expect(bare.serverUrl).toBe(`${s.url}/v1/connect`);
  });

  it('close() says bye, which ends the session and its ephemeral items', async () => {
    const s = await server();
    const owner = await connect(s.url);
    const reader = await client(s.url);
    await owner.push('/eph', 'mine');
    await owner.close();
    expect(owner.state).toBe('closed');
    expect(s.received.some((r) => r.request.op === 'bye' && r.session === 's1')).toBe(true);
    expect((await reader.get('/eph')).items).toEqual([]);
    await expect(owner.get('/eph')).rejects.toMatchObject({ code: 'UNAVAILABLE' });
  });

  it('rejects when no server can be reached in time', async () => {
    const s = await FakeServer.start();
    const url = s.url;
    await s.stop();
    const started = performance.now();
    const error = await rejection(connect(url, { connectTimeoutMs: 200, backoff: { initialMs: 5, maxMs: 20 } }));
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.message).toMatch(/could not connect to .* within 200 ms/);
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe('finding the leader', () => {
  it('follows NOT_LEADER to the leader named in the error', async () => {
    const leader = await server({ name: 'n2' });
    const follower = await server({ name: 'n1' });
    follower.helloMode = { kind: 'redirect', leader: leader.url };
    const c = await client(follower.url);
    expect(c.serverUrl).toBe(`${leader.url}/v1/connect`);
    expect(follower.received.map((r) => r.request.op)).toEqual(['hello']);
    await c.push('/x', 1);
    expect(leader.received.map((r) => r.request.op)).toEqual(['hello', 'push']);
  });

  it('retries NO_LEADER no sooner than retryAfterMs', async () => {
    const s = await server();
    s.helloMode = { kind: 'noLeader', retryAfterMs: 60, times: 2 };
    const c = await client(s.url);
    expect(c.state).toBe('open');
    const hellos = s.received.filter((r) => r.request.op === 'hello');
    expect(hellos).toHaveLength(3);
    // Timers may fire a millisecond early; the backoff alone (5-20 ms) would be far shorter.
    expect(hellos[1]!.at - hellos[0]!.at).toBeGreaterThanOrEqual(58);
    expect(hellos[2]!.at - hellos[1]!.at).toBeGreaterThanOrEqual(58);
  });

  it('moves to the leader when a request is answered NOT_LEADER, and resends it there', async () => {
    const first = await server({ name: 'n1' });
    const second = await server({ name: 'n2', state: first.state });
    const c = await client(first.url);
    await c.push('/a', 'x', { persistent: true });
    first.failNext('get', { code: 'NOT_LEADER', message: 'lost leadership', hints: { leader: second.url } });
    const resumed = next(c, 'connected');

    const read = await c.get('/a');
    expect(read.items.map((i) => i.data)).toEqual(['x']);
    const [info] = await resumed;
    expect(info).toMatchObject({ url: `${second.url}/v1/connect`, session: 's1', resumed: true });
    expect(second.received.map((r) => r.request)).toMatchObject([{ op: 'hello', session: 's1', resume: 'token-s1' }, { op: 'get', path: '/a' }]);
  });
});

describe('connection loss', () => {
  it('reconnects, resumes the session, resends reads and fails writes in flight as UNAVAILABLE', async () => {
    const s = await server();
    const c = await client(s.url);
    await c.push('/r', 'before', { persistent: true });
    s.holdOps.add('get');
    s.holdOps.add('push');
    const read = c.get('/r');
    const write = c.push('/w', 'lost?');
    await s.waitFor((r) => r.request.op === 'push' && r.request.path === '/w');
    await s.waitFor((r) => r.request.op === 'get');
    s.holdOps.clear();
    const disconnected = next(c, 'disconnected');
    const resumed = next(c, 'connected');

    s.dropAll();

    const writeError = await rejection(write);
    expect(writeError.code).toBe('UNAVAILABLE');
    expect(writeError.message).toMatch(/push may or may not have been applied/);
    expect((await read).items.map((i) => i.data)).toEqual(['before']);
    expect((await disconnected)[0]).toMatch(/closed by the server|connection/);
    expect((await resumed)[0]).toMatchObject({ session: 's1', resumed: true });
    const hellos = s.received.filter((r) => r.request.op === 'hello').map((r) => r.request);
    expect(hellos).toEqual([{ id: expect.any(Number), op: 'hello' }, { id: expect.any(Number), op: 'hello', session: 's1', resume: 'token-s1' }]);
    expect(s.received.filter((r) => r.request.op === 'get')).toHaveLength(2);
    expect(c.state).toBe('open');
  });

  it("resends a family's read in flight when the connection drops, as it does a get", async () => {
    const s = await server();
    const c = await client(s.url);
    await c.push('/r', 'kept', { persistent: true });
    s.holdOps.add('range.items');
    const read = new RangeClient(c).items('/r');
    await s.waitFor((r) => (r.request.op as string) === 'range.items');
    s.holdOps.clear();
    s.dropAll();
    expect((await read).items.map((i) => i.data)).toEqual(['kept']);
    expect(s.received.filter((r) => (r.request.op as string) === 'range.items')).toHaveLength(2);
  });

  it('queues requests made while reconnecting and sends them on the resumed session', async () => {
    const s = await server();
    const c = await client(s.url);
    const disconnected = next(c, 'disconnected');
    s.helloMode = { kind: 'noLeader', retryAfterMs: 30, times: 1 };
    s.dropAll();
    await disconnected;
    expect(c.state).toBe('reconnecting');
    const item = await c.push('/q', 'queued');
    expect(item.owner).toBe('s1');
    const push = s.received.find((r) => r.request.op === 'push');
    expect(push?.session).toBe('s1');
  });

  it('presumes a silent server dead and resumes elsewhere', async () => {
    const hung = await server({ name: 'n1', sessionTimeoutMs: 150 });
    const healthy = await server({ name: 'n2', sessionTimeoutMs: 150, state: hung.state });
    const c = await client([hung.url, healthy.url]);
    const disconnected = next(c, 'disconnected');
    const resumed = next(c, 'connected');
    hung.silent = true;
    expect((await disconnected)[0]).toMatch(/no frame from the server for \d+ ms/);
    // The hung server accepts the socket but never answers hello, so the client moves on.
    expect((await resumed)[0]).toMatchObject({ url: `${healthy.url}/v1/connect`, session: 's1', resumed: true });
  });

  it('after losing a connection, tries the other servers before the one it lost', async () => {
    const first = await server({ name: 'n1' });
    const second = await server({ name: 'n2', state: first.state });
    const c = await client([first.url, second.url]);
    expect(c.serverUrl).toBe(`${first.url}/v1/connect`);
    const resumed = next(c, 'connected');
    first.dropAll();
    expect((await resumed)[0]).toMatchObject({ url: `${second.url}/v1/connect`, session: 's1', resumed: true });
    expect(first.received.filter((r) => r.request.op === 'hello')).toHaveLength(1);
  });

  it('a first connect shares its budget among the servers: one that never answers cannot use it all up', async () => {
    const hung = await server({ name: 'n1' });
    const healthy = await server({ name: 'n2', state: hung.state });
    hung.silent = true;
    const c = await client([hung.url, healthy.url], { connectTimeoutMs: 3000 });
    expect(c.serverUrl).toBe(`${healthy.url}/v1/connect`);
    expect(hung.received.filter((r) => r.request.op === 'hello')).toHaveLength(1);
  });

  it('reports an expired session once, and fails everything after it', async () => {
    const s = await server();
    const c = await client(s.url);
    const iterator = c.events();
    const pending = iterator.next();
    const expired = next(c, 'sessionExpired');
    s.expire('s1'); // deletes the session and drops its connection; the resume is refused

    const [error] = await expired;
    expect(error).toBeInstanceOf(VeraError);
    expect(error.code).toBe('SESSION_EXPIRED');
    expect(c.state).toBe('expired');
    await expect(pending).rejects.toMatchObject({ code: 'SESSION_EXPIRED' });
    await expect(c.get('/a')).rejects.toMatchObject({ code: 'SESSION_EXPIRED' });
  });

  it('stops, rather than fight, when another connection resumes its session', async () => {
    const s = await server();
    const first = await client(s.url);
    const failed = next(first, 'failed');
    const second = await client(s.url, { session: first.session, resume: first.resumeToken! });
    expect(second.session).toBe('s1');
    const [error] = await failed;
    expect(error.message).toMatch(/session s1 was resumed on another connection/);
    expect(first.state).toBe('closed');
    expect(s.received.filter((r) => r.request.op === 'hello')).toHaveLength(2);
  });

  it('resumes only with the resume token: without it, connect opens a new session', async () => {
    const s = await server();
    const first = await client(s.url);
    expect(first.resumeToken).toBe('token-s1');
    const bare = await client(s.url, { session: first.session });
    expect(bare.session).toBe('s2');
    expect(first.state).toBe('open'); // nobody took its session
    expect(s.received.filter((r) => r.request.op === 'hello').map((r) => r.request)).toEqual([
      { id: expect.any(Number), op: 'hello' },
      { id: expect.any(Number), op: 'hello' },
    ]);
  });

  it('a session that got no resume token is lost with its connection: the client reports it expired rather than resume by id', async () => {
    const s = await server();
    s.resumeTokens = false;
    const c = await client(s.url);
    expect(c.resumeToken).toBeNull();
    const expired = next(c, 'sessionExpired');
    s.dropAll();
    const [error] = await expired;
    expect(error).toMatchObject({ code: 'SESSION_EXPIRED', message: expect.stringMatching(/cannot be resumed: the server gave no resume token/) });
    expect(c.state).toBe('expired');
    expect(s.received.filter((r) => r.request.op === 'hello')).toHaveLength(1);
  });

  it('refuses to connect with a session the server no longer knows', async () => {
    const s = await server();
    const error = await rejection(connect(s.url, { session: 'gone', resume: 'token-gone' }));
    expect(error.code).toBe('SESSION_EXPIRED');
    expect(error.message).toMatch(/session gone has expired/);
  });
});

describe('heartbeats and notifications', () => {
  it('pings at a third of the session timeout, acknowledging processed notifications', async () => {
    const s = await server({ sessionTimeoutMs: 150 });
    const watcher = await client(s.url);
    const writer = await client(s.url);
    const seen = collectEvents(watcher);
    await watcher.watch('/hb');
    const item = await writer.push('/hb', 'tick', { persistent: true });
    await seen.until(1);
    expect(seen.events[0]).toEqual({ index: item.index, type: 'push', path: '/hb', item });

    const ping = await s.waitFor((r) => r.session === 's1' && r.request.op === 'ping' && r.request.ack === item.index);
    expect(ping.request).toMatchObject({ op: 'ping', ack: item.index });
    // Pings keep coming at about timeout/3 (50 ms). Averaged over three gaps so one
    // slow tick on a busy machine does not decide; the watchdog allows 2/3 (100 ms).
    const pingsAfter = () => s.received.filter((p) => p.session === 's1' && p.request.op === 'ping' && p.at > ping.at);
    await s.waitFor(() => pingsAfter().length >= 3);
    const third = pingsAfter()[2]!;
    expect((third.at - ping.at) / 3).toBeLessThan(100);
    expect(s.acked('s1')).toBe(item.index);
  });

  it('does not acknowledge an event an iterator consumer is still working on', async () => {
    const s = await server({ sessionTimeoutMs: 150 });
    const watcher = await client(s.url);
    const writer = await client(s.url);
    const iterator = watcher.events();
    await watcher.watch('/it');
    const item = await writer.push('/it', 1, { persistent: true });

    const first = await iterator.next();
    expect(first.value).toMatchObject({ type: 'push', index: item.index });
    // The consumer holds the event: pings after this point must not acknowledge it.
    const mark = s.received.length;
    const busy = await s.waitFor((r) => r.session === 's1' && r.request.op === 'ping', mark);
    expect(busy.request).not.toHaveProperty('ack');

    const second = iterator.next(); // asking for more means the first one is done
    const acked = await s.waitFor((r) => r.session === 's1' && r.request.op === 'ping' && r.request.ack === item.index, mark);
    expect(acked.request).toMatchObject({ ack: item.index });
    await iterator.return!();
    await expect(second).resolves.toEqual({ done: true, value: undefined });
  });

  it('drops events re-sent after a resume and delivers the rest once', async () => {
    const s = await server({ sessionTimeoutMs: 60_000 }); // no pings, so nothing is acknowledged
    const watcher = await client(s.url);
    const writer = await client(s.url);
    const seen = collectEvents(watcher);
    await watcher.watch('/d');
    for (const n of [1, 2, 3]) await writer.push('/d', n, { persistent: true });
    await seen.until(3);
    expect(s.acked('s1')).toBe(0);

    const resumed = next(watcher, 'connected');
    s.dropAll();
    await resumed; // the server re-sends all three events right after the hello reply
    await writer.push('/d', 4, { persistent: true });
    const events = await seen.until(4);
    expect(events.map((e) => e.item.data)).toEqual([1, 2, 3, 4]);
    expect(new Set(events.map((e) => e.index)).size).toBe(4);
  });

  it('hands resyncs to callbacks and to iterators', async () => {
    const s = await server();
    const c = await client(s.url);
    const iterator = c.events();
    const resynced = next(c, 'resync');
    const items = [{ index: 7, owner: null, data: 'x' }];
    s.resync('s1', [{ path: '/rs', index: 9, items }]);
    expect((await resynced)[0]).toEqual([{ path: '/rs', index: 9, items }]);
    expect((await iterator.next()).value).toEqual({ type: 'resync', path: '/rs', index: 9, items });
    await iterator.return!();
  });
});

describe('pipelining and errors', () => {
  it('matches replies that come back out of order to their requests', async () => {
    const s = await server();
    const c = await client(s.url);
    const paths = ['/p/a', '/p/b', '/p/c', '/p/d', '/p/e'];
    for (const path of paths) await c.push(path, path, { persistent: true });
    s.holdOps.add('get');
    const reads = paths.map((path) => c.get(path));
    await s.waitFor(() => s.heldCount() === paths.length);
    expect(s.heldCount()).toBe(paths.length);
    s.holdOps.clear();
    s.release('reverse');
    const results = await Promise.all(reads);
    expect(results.map((r) => r.items[0]?.data)).toEqual(paths);
    const ids = s.received.filter((r) => r.request.op === 'get').map((r) => r.request.id);
    expect(new Set(ids).size).toBe(paths.length);
  });

  it('throws server errors as VeraError with the protocol code and hints', async () => {
    const s = await server();
    const c = await client(s.url);
    const missing = await rejection(c.delete('/nothing', 42));
    expect(missing).toMatchObject({ code: 'NOT_FOUND', message: 'no item 42 in /nothing' });

    const first = await c.push('/cas', 'a', { ifLastIndex: 0 });
    const conflict = await rejection(c.push('/cas', 'b', { ifLastIndex: 0 }));
    expect(conflict.code).toBe('CONFLICT');
    expect(await c.push('/cas', 'b', { ifLastIndex: first.index })).toMatchObject({ data: 'b' });

    const other = await client(s.url);
    const forbidden = await rejection(other.delete('/cas', first.index));
    expect(forbidden.code).toBe('FORBIDDEN');

    s.failNext('push', { code: 'UNAVAILABLE', message: 'leadership lost', hints: { retryAfterMs: 10 } });
    const unknown = await rejection(c.push('/u', 1));
    expect(unknown).toMatchObject({ code: 'UNAVAILABLE', message: 'leadership lost', hints: { retryAfterMs: 10 } });
  });

  it('sends a write again, no sooner than retryAfterMs, when it was refused before it was proposed (UNAVAILABLE, reason not-proposed)', async () => {
    const s = await server();
    const c = await client(s.url);
    s.failNext('push', { code: 'UNAVAILABLE', message: 'too many writes are waiting to commit; retry shortly', hints: { retryAfterMs: 40, reason: 'not-proposed' } });
    s.failNext('push', { code: 'UNAVAILABLE', message: 'leadership is being transferred', hints: { retryAfterMs: 40, reason: 'not-proposed' } });
    expect(await c.push('/busy', 1, { persistent: true })).toMatchObject({ data: 1 });
    const pushes = s.received.filter((r) => r.request.op === 'push');
    expect(pushes).toHaveLength(3);
    // Timers may fire a millisecond early; the backoff alone (5-20 ms) would be shorter.
    expect(pushes[1]!.at - pushes[0]!.at).toBeGreaterThanOrEqual(38);
    expect(pushes[2]!.at - pushes[1]!.at).toBeGreaterThanOrEqual(38);
    expect(s.state.lists.get('/busy')?.map((i) => i.data)).toEqual([1]);
  });

  it('retries reads answered UNAVAILABLE and any request answered NO_LEADER or RATE_LIMITED', async () => {
    const s = await server();
    const c = await client(s.url);
    s.failNext('get', { code: 'UNAVAILABLE', message: 'try again', hints: { retryAfterMs: 5 } });
    s.failNext('push', { code: 'NO_LEADER', message: 'election', hints: { retryAfterMs: 5 } });
    s.failNext('push', { code: 'RATE_LIMITED', message: 'slow down', hints: { retryAfterMs: 5 } });
    expect((await c.get('/none')).items).toEqual([]);
    expect(await c.push('/ok', 1)).toMatchObject({ data: 1 });
    expect(s.received.filter((r) => r.request.op === 'push')).toHaveLength(3);
  });

  it('rejects invalid arguments locally with BAD_REQUEST, before sending anything', async () => {
    const s = await server();
    const c = await client(s.url);
    const sent = s.received.length;
    await expect(c.get('relative')).rejects.toMatchObject({ code: 'BAD_REQUEST', message: expect.stringMatching(/path must start with/) });
    await expect(c.push('/a', new Date())).rejects.toMatchObject({ code: 'BAD_REQUEST', message: expect.stringMatching(/^data: unsupported value \(Date\)/) });
    await expect(c.delete('/a', -1)).rejects.toMatchObject({ code: 'BAD_REQUEST', message: expect.stringMatching(/index must be/) });
    expect(s.received.length).toBe(sent);
  });

  it('times a request out with TIMEOUT when no reply comes', async () => {
    const s = await server();
    const c = await client(s.url, { requestTimeoutMs: 100 });
    s.holdOps.add('push');
    const error = await rejection(c.push('/slow', 1));
    expect(error.code).toBe('TIMEOUT');
    expect(error.message).toMatch(/push got no reply within 100 ms; it may or may not have been applied/);
  });
});
