// The client's side of scale-out (docs/scale-out.md, stage 1): hello's `role` and
// `members`, the ring of servers that starts at a random position and learns the
// members, and close code 4009 (leaderUnreachable).
import { afterEach, describe, expect, it } from 'vitest';
import { type ClientEvents, type ConnectedInfo, type VeraClient } from '../../src/client/index.js';
import { checkResult } from '../../src/client/results.js';
import { MAX_LEARNT_MEMBERS, ServerRing } from '../../src/client/urls.js';
import { CloseCode, type HelloResult } from '../../src/protocol/index.js';
import { FakeServer } from './fake-server.js';
import { client, server, stopAll } from './harness.js';

const HELLO = { session: 's1', timeoutMs: 10_000, node: 'n1', leader: 'n1', term: 1, index: 0 };

afterEach(stopAll);

/** The client's next resumed connection, or a rejection naming where it is after `withinMs`. */
function nextResume(c: VeraClient, withinMs: number): Promise<ConnectedInfo> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no resume within ${withinMs} ms (state ${c.state})`));
    }, withinMs);
    const off = c.on('connected', (info) => {
      if (!info.resumed) return;
      clearTimeout(timer);
      off();
      resolve(info);
    });
  });
}

/** The arguments of the next emission of `name`. */
function next<K extends keyof ClientEvents>(c: VeraClient, name: K): Promise<Parameters<ClientEvents[K]>> {
  return new Promise((resolve) => {
    const off = c.on(name, ((...args: Parameters<ClientEvents[K]>) => {
      off();
      resolve(args);
    }) as ClientEvents[K]);
  });
}

const hellos = (s: FakeServer): number => s.received.filter((r) => r.request.op === 'hello').length;

describe('hello result: role and members', () => {
  it('takes role and members, and roles this client does not know', () => {
    const members = ['ws://127.0.0.1:7001', 'wss://b.example:7002'];
    expect(checkResult('hello', { ...HELLO, role: 'follower', members })).toMatchObject({ role: 'follower', members });
    expect(checkResult('hello', { ...HELLO, role: 'witness' }).role).toBe('witness');
    expect(checkResult('hello', HELLO).members).toBeUndefined();
  });

  // Hints in a shape this client does not know (a later server's) must not keep it from connecting.
  it.each([
    ['a role that is not a string', { role: { name: 'witness', voter: false } }, { role: undefined }],
    ['members that are not a list', { members: 'ws://127.0.0.1:7001' }, { members: undefined }],
    ['members that are not all strings', { members: ['ws://127.0.0.1:7001', 7, { id: 'n2', url: 'ws://127.0.0.1:7002' }] }, { members: ['ws://127.0.0.1:7001'] }],
  ])('ignores %s, keeping the rest of the reply', (_what, extra, expected) => {
    const result = checkResult('hello', { ...HELLO, ...extra });
    expect(result).toMatchObject(HELLO);
    expect({ role: result.role, members: result.members }).toEqual({ role: undefined, members: undefined, ...expected });
  });

  it.each([
    ['a session that is not a string', { session: 1 }, /session is not a string/],
    ['a timeout that is not an integer', { timeoutMs: 1.5 }, /timeoutMs is not a non-negative integer/],
    ['a resume token that is not a string', { resume: ['t'] }, /resume is not a string/],
  ])('still refuses %s as a malformed reply (INTERNAL)', (_what, extra, message) => {
    expect(() => checkResult('hello', { ...HELLO, ...extra })).toThrow(message);
  });

  it('types role as any string, so code switching over it must handle roles it does not know', () => {
    const later: string = 'witness';
    // Compiles only while HelloResult.role is open (tsc checks the tests).
    const hello: HelloResult = { ...HELLO, role: later };
    const role: string | undefined = checkResult('hello', { ...hello }).role;
    expect(role).toBe('witness');
  });

  it('has the close code 4009 for a member that cannot reach the leader', () => {
    expect(CloseCode.leaderUnreachable).toBe(4009);
  });
});

describe('the ring of servers', () => {
  const given = ['ws://a:1', 'ws://b:1', 'ws://c:1', 'ws://d:1'];

  const names = (ring: ServerRing): string[] => ring.all().map((url) => new URL(url).hostname);

  it('keeps the given order with a source that answers 0, and shuffles it with another', () => {
    expect(names(new ServerRing(given, () => 0))).toEqual(['a', 'b', 'c', 'd']);
    expect(new ServerRing(given, () => 0).current()).toBe('ws://a:1/v1/connect');
    expect(names(new ServerRing(given, () => 0.5))).toEqual(['c', 'a', 'd', 'b']);
    // A source outside [0, 1) can neither lose a server nor repeat one.
    for (const odd of [1, -1, Number.NaN, 7.5]) expect(names(new ServerRing(given, () => odd)).sort()).toEqual(['a', 'b', 'c', 'd']);
  });

  // The chance that 200 shuffles all miss one of three outcomes is about (2/3)^200.
  it('spreads where rings start over the servers by default', () => {
    const starts = new Set<string>();
    for (let i = 0; i < 200; i++) starts.add(new ServerRing(given.slice(0, 3)).current());
    expect(starts.size).toBe(3);
  });

  it('spreads the clients of a lost server over the others by default, not all to the one after it', () => {
    const successors = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const ring = new ServerRing(given.slice(0, 3));
      ring.prefer('ws://a:1/v1/connect');
      ring.advance();
      successors.add(ring.current());
    }
    expect([...successors].sort()).toEqual(['ws://b:1/v1/connect', 'ws://c:1/v1/connect']);
  });

  it('spreads over the members a hello names, in a random order too', () => {
    const successors = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const ring = new ServerRing(['ws://given:1']);
      ring.learn(['ws://a:1', 'ws://b:1', 'ws://c:1']);
      ring.advance();
      successors.add(ring.current());
    }
    expect(successors.size).toBe(3);
  });

  it('adds the members a hello names, once each, and ignores those that are not ws:// or wss:// URLs', () => {
    const ring = new ServerRing(['ws://a:1', 'b:1'], () => 0);
    ring.learn(['ws://a:1', 'ws://B:1/', 'wss://c:1', 'http://d:1', 'e:1', 'ws://', 'not a url', 'ws://f:1']);
    expect(ring.all()).toEqual(['ws://a:1/v1/connect', 'ws://b:1/v1/connect', 'wss://c:1/v1/connect', 'ws://f:1/v1/connect']);
    expect(ring.current()).toBe('ws://a:1/v1/connect');
  });

  it('never learns a ws:// member nor follows a ws:// leader hint once a wss:// address was given', () => {
    for (const given of [['wss://a:1'], ['ws://a:1', 'wss://b:1']]) {
      const ring = new ServerRing(given, () => 0);
      ring.learn(['ws://10.0.0.5:1919', 'wss://c:1', 'ws://10.0.0.6:1919']);
      expect(ring.all()).toEqual([...given.map((url) => `${url}/v1/connect`), 'wss://c:1/v1/connect']);
      expect(ring.leaderUrl('ws://10.0.0.5:1919')).toBeNull();
      expect(ring.leaderUrl('wss://c:1')).toBe('wss://c:1/v1/connect');
    }
    // Given only ws://, both are taken: a wss:// member raises the transport.
    const plain = new ServerRing(['ws://a:1'], () => 0);
    plain.learn(['ws://b:1', 'wss://c:1']);
    expect(plain.all()).toEqual(['ws://a:1/v1/connect', 'ws://b:1/v1/connect', 'wss://c:1/v1/connect']);
    expect(plain.leaderUrl('ws://b:1')).toBe('ws://b:1/v1/connect');
  });

  it('holds a member once when a NOT_LEADER hint and a hello name it in different spellings', () => {
    const ring = new ServerRing(['ws://a:1'], () => 0);
    for (const hint of ['ws://Node1:1919', 'ws://[0:0:0:0:0:0:0:1]:80']) ring.add(ring.leaderUrl(hint)!); // as a followed hint is
    ring.learn(['ws://node1:1919', 'ws://[::1]']);
    expect(ring.all()).toEqual(['ws://a:1/v1/connect', 'ws://node1:1919/v1/connect', 'ws://[::1]/v1/connect']);
    // Named by the hello, they are learnt, so a later hello that leaves them out drops them.
    ring.learn([]);
    expect(ring.all()).toEqual(['ws://a:1/v1/connect']);
  });

  it(`takes at most ${MAX_LEARNT_MEMBERS} members from one hello`, () => {
    const ring = new ServerRing(['ws://given:1'], () => 0);
    ring.learn(Array.from({ length: 1000 }, (_, i) => `ws://m${i}:1`));
    expect(ring.all()).toHaveLength(1 + MAX_LEARNT_MEMBERS);
    expect(ring.all()).toContain(`ws://m${MAX_LEARNT_MEMBERS - 1}:1/v1/connect`);
    expect(ring.all()).not.toContain(`ws://m${MAX_LEARNT_MEMBERS}:1/v1/connect`);
  });

  it("a later hello's members replace the ones learnt before, but never the given servers nor the current one", () => {
    const ring = new ServerRing(['ws://a:1', 'ws://b:1'], () => 0);
    ring.learn(['ws://c:1', 'ws://d:1', 'ws://e:1']);
    ring.prefer('ws://d:1/v1/connect');
    ring.learn(['ws://e:1', 'ws://f:1']);
    expect(ring.all()).toEqual(['ws://a:1/v1/connect', 'ws://b:1/v1/connect', 'ws://d:1/v1/connect', 'ws://e:1/v1/connect', 'ws://f:1/v1/connect']);
    expect(ring.current()).toBe('ws://d:1/v1/connect');
    // Once it is no longer current, the member no hello names any more goes; given ones stay.
    ring.prefer('ws://e:1/v1/connect');
    ring.learn([]);
    expect(ring.all()).toEqual(['ws://a:1/v1/connect', 'ws://b:1/v1/connect', 'ws://e:1/v1/connect']);
    ring.prefer('ws://a:1/v1/connect');
    ring.learn([]);
    expect(ring.all()).toEqual(['ws://a:1/v1/connect', 'ws://b:1/v1/connect']);
  });
});

describe('the client over several members', () => {
  it('tries first the server its random source picks', async () => {
    const a = await server({ name: 'n1' });
    const b = await server({ name: 'n2', state: a.state });
    const c = await client([a.url, b.url], { random: () => 0.75 });
    expect(c.serverUrl).toBe(`${b.url}/v1/connect`);
    expect(hellos(a)).toBe(0);
  });

  it('does not follow a NOT_LEADER hint to a ws:// server when it was given a wss:// one', async () => {
    const a = await server({ name: 'n1' });
    const b = await server({ name: 'n2', state: a.state });
    const gone = await server({ name: 'n3' });
    const secure = gone.url.replace(/^ws:/, 'wss:');
    await gone.stop(); // refuses connections: only the hint could lead anywhere
    a.helloMode = { kind: 'redirect', leader: b.url };
    await expect(client([a.url, secure], { connectTimeoutMs: 300 })).rejects.toThrow(/could not connect/);
    expect(hellos(a)).toBeGreaterThan(0);
    expect(hellos(b)).toBe(0);
  });

  it('resumes, after losing its only given server, on a member that server named in its hello', async () => {
    const a = await server({ name: 'n1' });
    const b = await server({ name: 'n2', state: a.state });
    a.helloFields = { role: 'leader', members: [a.url, b.url] };
    const c = await client(a.url);
    const item = await c.push('/q', 'mine');
    const resumed = nextResume(c, 3000);
    await a.stop();
    expect(await resumed).toMatchObject({ url: `${b.url}/v1/connect`, session: c.session, resumed: true });
    // The session goes on there: its ephemeral item is still its own.
    expect((await c.get('/q')).items).toEqual([item]);
  });

  it('with learnMembers off, tries only the servers it was given (a client behind a proxy)', async () => {
    const a = await server({ name: 'n1' });
    const b = await server({ name: 'n2', state: a.state });
    a.helloFields = { role: 'leader', members: [a.url, b.url] };
    const c = await client(a.url, { learnMembers: false });
    await c.push('/q', 'mine');
    // Sent away from its only given server, it resumes there again, never on the member hello named.
    const resumed = nextResume(c, 5_000);
    a.closeAll(CloseCode.leaderUnreachable, 'cannot confirm the session to the leader');
    expect(await resumed).toMatchObject({ url: `${a.url}/v1/connect`, session: c.session, resumed: true });
    expect(hellos(b)).toBe(0);
  });

  it('connects to a member whose role and members it cannot read, and learns the members it can', async () => {
    const a = await server({ name: 'n1' });
    const b = await server({ name: 'n2', state: a.state });
    a.helloFields = { role: { name: 'leader' }, members: [{ id: 'n1', url: a.url }, b.url] };
    const c = await client(a.url, { connectTimeoutMs: 2000 });
    const resumed = nextResume(c, 3000);
    await a.stop();
    expect(await resumed).toMatchObject({ url: `${b.url}/v1/connect`, session: c.session, resumed: true });
  });

  it('on 4009 resumes on another member, its session and watches intact', async () => {
    const timeoutMs = 4000;
    const a = await server({ name: 'n1', sessionTimeoutMs: timeoutMs });
    const hung = await server({ name: 'n2', sessionTimeoutMs: timeoutMs, state: a.state });
    const b = await server({ name: 'n3', sessionTimeoutMs: timeoutMs, state: a.state });
    a.helloFields = { role: 'follower', members: [a.url, hung.url, b.url] };
    const c = await client(a.url);
    await c.watch('/w');
    hung.silent = true;
    const disconnected = next(c, 'disconnected');
    const resumed = nextResume(c, timeoutMs);
    const closedAt = performance.now();
    a.closeAll(CloseCode.leaderUnreachable, 'cannot confirm the session to the leader');
    expect((await disconnected)[0]).toMatch(/4009/);
    expect(await resumed).toMatchObject({ url: `${b.url}/v1/connect`, session: 's1', resumed: true });
    expect(hellos(a)).toBe(1);
    // What is 4009's own: the learnt member that hung got a quarter of the timeout, not two thirds.
    expect(hellos(hung)).toBe(1);
    expect(performance.now() - closedAt).toBeLessThan(timeoutMs / 2);
    // The watch is the session's, so events on it reach the client through the new member.
    const event = next(c, 'event');
    const writer = await client(b.url);
    await writer.push('/w', 'news', { watch: false });
    expect((await event)[0]).toMatchObject({ type: 'push', path: '/w', item: { data: 'news' } });
  });

  it('on 4009 gives each member a quarter of the session timeout, so a hung one cannot use up the half that is left', async () => {
    const timeoutMs = 4000;
    const a = await server({ name: 'n1', sessionTimeoutMs: timeoutMs });
    const hung = await server({ name: 'n2', sessionTimeoutMs: timeoutMs, state: a.state });
    const b = await server({ name: 'n3', sessionTimeoutMs: timeoutMs, state: a.state });
    const c = await client([a.url, hung.url, b.url]);
    hung.silent = true; // accepts the socket, never answers hello: a paused process
    const resumed = nextResume(c, timeoutMs);
    const closedAt = performance.now();
    a.closeAll(CloseCode.leaderUnreachable, 'cannot confirm the session to the leader');
    expect(await resumed).toMatchObject({ url: `${b.url}/v1/connect`, resumed: true });
    expect(hellos(hung)).toBe(1);
    // The member closed with half the timeout left; a third of its timeout per attempt (2/3) would not fit.
    expect(performance.now() - closedAt).toBeLessThan(timeoutMs / 2);
  });

  it('after an ordinary close gives each member two thirds of the session timeout, as before', async () => {
    const timeoutMs = 3000;
    const a = await server({ name: 'n1', sessionTimeoutMs: timeoutMs });
    const hung = await server({ name: 'n2', sessionTimeoutMs: timeoutMs, state: a.state });
    const b = await server({ name: 'n3', sessionTimeoutMs: timeoutMs, state: a.state });
    const c = await client([a.url, hung.url, b.url]);
    hung.silent = true;
    const resumed = nextResume(c, 2 * timeoutMs);
    const closedAt = performance.now();
    a.closeAll(CloseCode.shuttingDown, 'shutting down');
    expect(await resumed).toMatchObject({ url: `${b.url}/v1/connect`, resumed: true });
    expect(hellos(hung)).toBe(1);
    // A lower bound (load only makes it longer): the hung member was waited on for 2T/3, not T/4.
    expect(performance.now() - closedAt).toBeGreaterThanOrEqual((timeoutMs * 2) / 3 - 20);
  });

  it('after a 4009 hurries only until half the timeout has passed, then gives a slow member two thirds again', async () => {
    const timeoutMs = 2000;
    const a = await server({ name: 'n1', sessionTimeoutMs: timeoutMs });
    const slow = await server({ name: 'n2', sessionTimeoutMs: timeoutMs, state: a.state });
    const c = await client([a.url, slow.url]);
    a.silent = true; // sends its clients away, then answers nothing
    // Slower than a quarter of the timeout (500 ms), well within two thirds (1333 ms): a busy leader's attach.
    slow.helloDelayMs = 800;
    const resumed = nextResume(c, 4 * timeoutMs);
    a.closeAll(CloseCode.leaderUnreachable, 'cannot confirm the session to the leader');
    // Had every attempt a quarter, none on the slow member would ever finish.
    expect(await resumed).toMatchObject({ url: `${slow.url}/v1/connect`, resumed: true });
    expect(hellos(slow)).toBeGreaterThanOrEqual(2);
  });
});
