// Every op of ../shared/PROTOCOL.md against a real `vera` process, in both
// encodings, with exact result shapes; then notifications and the HTTP endpoints.
// Absence of an event is checked with a marker: events arrive in index order, so
// once a later marker event is in, anything earlier that was due is in too.

import { request as httpRequest } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { VeraProcess } from '../support/vera-process.js';
import { killAll } from '../support/vera-process.js';
import {
  ENCODINGS,
  SESSION_TIMEOUT_MAX_MS,
  SESSION_TIMEOUT_MIN_MS,
  dataUrl,
  httpGet,
  httpJson,
  openSession,
  startLeader,
  status,
  type Session,
} from './fixture.js';
import { WireClient, type Item, type WireEncoding } from './wire-client.js';
import { COMMAND_VERSION } from '../../src/families/registry.js';
import { pollUntil } from '../support/poll.js';

let vp: VeraProcess;

beforeAll(async () => {
  vp = await startLeader();
});

afterAll(async () => {
  await killAll();
  vp?.removeData();
});

// Sessions a test opened are ended after it, so none expires later and disturbs another test.
const opened: Session[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) {
    if (s.client.isOpen) {
      await s.client.request('bye', {}, s.client.encoding, 1000).catch(() => undefined);
      await s.client.close().catch(() => undefined);
    }
  }
});

async function session(encoding: WireEncoding, hello: Record<string, unknown> = {}): Promise<Session> {
  const s = await openSession(vp, encoding, hello);
  opened.push(s);
  return s;
}

const item = (result: Record<string, unknown>): Item => result.item as Item;
const ANY_INDEX = expect.any(Number) as unknown as number;

/** Pushes a persistent marker to `path` and waits until `watcher` has its event; returns the marker item. */
async function marker(pusher: Session, watcher: Session, path: string): Promise<Item> {
  const m = item(await pusher.client.call('push', { path, data: 'marker', persistent: true, watch: false }));
  await watcher.client.waitEvent((e) => e.index === m.index && e.path === path, `the marker event at ${m.index} on ${path}`);
  return m;
}

describe.each(ENCODINGS)('protocol over %s', (enc) => {
  const root = `/conf-${enc}`;
  const other: WireEncoding = enc === 'json' ? 'msgpack' : 'json';

  describe('session ops', () => {
    it('hello answers session, timeoutMs, node, leader, term, index in the request encoding', async () => {
      // A new cluster raises its command version just after its first election; wait for it, so the fields it adds are due.
      await pollUntil('the current command version', async () => (((await status(vp)).commandVersion as { active: number }).active >= COMMAND_VERSION ? true : undefined));
      const c = await WireClient.connect(vp.url, enc);
      const id = c.newId();
      c.send({ id, op: 'hello', timeoutMs: 5000 });
      const reply = await c.waitReply(id);
      expect(reply.encoding).toBe(enc);
      // Exactly the contract's fields, and the resume token extension once the cluster records it
      // (command version 6, raised just after the first election; test/server/resume-token.test.ts).
      expect(reply.value).toStrictEqual({
        id,
        ok: true,
        session: expect.any(String),
        timeoutMs: 5000,
        node: 'n1',
        leader: 'n1',
        term: expect.any(Number),
        index: expect.any(Number),
        ...(reply.value!.resume === undefined ? {} : { resume: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/) }),
        // And from command version 9 (docs/scale-out.md), who answered and where sessions are served: here, the leader alone.
        role: 'leader',
        members: [vp.url],
      });
      const st = await status(vp);
      expect(reply.value!.term).toBe(st.term);
      // Opening a session is a committed write, so the index the hello reflects is past it.
      expect(reply.value!.index).toBeGreaterThanOrEqual(1);
      expect(reply.value!.index).toBeLessThanOrEqual(st.applied);
      opened.push({ client: c, hello: reply.value as never });
    });

    it('hello clamps timeoutMs to the server bounds and defaults to 10000', async () => {
      const low = await session(enc, { timeoutMs: 1 });
      expect(low.hello.timeoutMs).toBe(SESSION_TIMEOUT_MIN_MS);
      const high = await session(enc, { timeoutMs: 10 ** 9 });
      expect(high.hello.timeoutMs).toBe(SESSION_TIMEOUT_MAX_MS);
      const c = await WireClient.connect(vp.url, enc);
      const dflt = await c.hello({});
      opened.push({ client: c, hello: dflt });
      expect(dflt.timeoutMs).toBe(10_000);
      expect(new Set([low.hello.session, high.hello.session, dflt.session]).size).toBe(3);
    });

    it('an op before hello is BAD_REQUEST naming hello, and hello still works afterwards', async () => {
      const c = await WireClient.connect(vp.url, enc);
      for (const [op, args] of [['ping', {}], ['get', { path: `${root}/x` }], ['push', { path: `${root}/x`, data: 1 }], ['bye', {}]] as const) {
        const reply = await c.request(op, args);
        expect(reply).toStrictEqual({ id: expect.any(Number), ok: false, error: { code: 'BAD_REQUEST', message: expect.stringMatching(/hello/) } });
      }
      const hello = await c.hello();
      opened.push({ client: c, hello });
      expect(hello.session).toEqual(expect.any(String));
      // Nothing was pushed by the rejected request.
      const s = await session(enc);
      expect((await s.client.call('get', { path: `${root}/x` })).items).toEqual([]);
    });

    it('serves requests pipelined right behind hello', async () => {
      // PROTOCOL.md: the FIRST frame must be hello, and requests may be pipelined; a push sent
      // right after hello (before its reply) is not a first frame, so it must be served.
      const c = await WireClient.connect(vp.url, enc);
      const helloId = c.newId();
      const pushId = c.newId();
      c.send({ id: helloId, op: 'hello', timeoutMs: 30_000 });
      c.send({ id: pushId, op: 'push', path: `${root}/pipelined-hello`, data: 'right behind hello' });
      const hello = await c.waitReply(helloId);
      opened.push({ client: c, hello: hello.value as never });
      expect(hello.value!.ok).toBe(true);
      const push = await c.waitReply(pushId);
      expect(push.value).toStrictEqual({ id: pushId, ok: true, item: { index: expect.any(Number), owner: hello.value!.session, data: 'right behind hello' } });
    });

    it('a second hello is BAD_REQUEST and the session keeps working', async () => {
      const s = await session(enc);
      const reply = await s.client.request('hello', { timeoutMs: 5000 });
      expect(reply).toStrictEqual({ id: expect.any(Number), ok: false, error: { code: 'BAD_REQUEST', message: expect.stringMatching(/hello/) } });
      const again = await s.client.request('hello', { session: s.hello.session, resume: s.hello.resume });
      expect(again.error?.code).toBe('BAD_REQUEST');
      expect(await s.client.call('ping')).toStrictEqual({ index: ANY_INDEX });
    });

    it('resuming an unknown session answers SESSION_EXPIRED', async () => {
      const c = await WireClient.connect(vp.url, enc);
      const reply = await c.request('hello', { session: 'no-such-session-0123456789' });
      expect(reply).toStrictEqual({ id: expect.any(Number), ok: false, error: { code: 'SESSION_EXPIRED', message: expect.stringMatching(/no-such-session-0123456789/) } });
      await c.close();
    });

    it('ping answers the applied index, with and without ack', async () => {
      const s = await session(enc);
      const p1 = await s.client.request('ping');
      expect(p1).toStrictEqual({ id: expect.any(Number), ok: true, index: expect.any(Number) });
      expect(p1.index).toBeGreaterThanOrEqual(s.hello.index);
      const pushed = item(await s.client.call('push', { path: `${root}/ping`, data: 1 }));
      const p2 = await s.client.request('ping', { ack: pushed.index });
      expect(p2).toStrictEqual({ id: expect.any(Number), ok: true, index: expect.any(Number) });
      expect(p2.index).toBeGreaterThanOrEqual(pushed.index);
    });

    it('bye answers {} and ends the session for good', async () => {
      const s = await session(enc);
      expect(await s.client.request('bye')).toStrictEqual({ id: expect.any(Number), ok: true });
      const c = await WireClient.connect(vp.url, enc);
      const reply = await c.request('hello', { session: s.hello.session, resume: s.hello.resume });
      expect(reply.error?.code).toBe('SESSION_EXPIRED');
      await c.close();
    });

    it('answers a request in its own encoding and notifies in the encoding of hello', async () => {
      const s = await session(enc);
      const id = s.client.newId();
      s.client.send({ id, op: 'ping' }, other);
      expect((await s.client.waitReply(id)).encoding).toBe(other);
      const pushId = s.client.newId();
      s.client.send({ id: pushId, op: 'push', path: `${root}/enc`, data: { x: 1 } }, other);
      const pushReply = await s.client.waitReply(pushId);
      expect(pushReply.encoding).toBe(other);
      await s.client.waitNotify(1);
      expect(s.client.frames.filter((f) => f.value?.op === 'notify').map((f) => f.encoding)).toEqual([enc]);
    });

    it('answers pipelined requests, each under its own id', async () => {
      const s = await session(enc);
      const ids = [0, 1, 2, 3, 4, 5, 6, 7].map(() => s.client.newId());
      ids.forEach((id, i) => s.client.send(i % 2 === 0 ? { id, op: 'push', path: `${root}/pipe`, data: i, persistent: true } : { id, op: 'ping' }));
      const replies = await Promise.all(ids.map((id) => s.client.waitReply(id)));
      replies.forEach((r, i) => {
        expect(r.value!.id).toBe(ids[i]);
        expect(r.value!.ok).toBe(true);
        if (i % 2 === 0) expect((r.value!.item as Item).data).toBe(i);
      });
      const listed = (await s.client.call('get', { path: `${root}/pipe` })).items as Item[];
      expect(listed.map((x) => x.data).sort()).toEqual([0, 2, 4, 6]);
    });
  });

  describe('data ops', () => {
    it('push creates an ephemeral item owned by the session, and a persistent one owned by nobody', async () => {
      const s = await session(enc);
      const data = { name: 'svc-1', tags: ['a', 'b'], port: 8080, ratio: 0.25, ok: true, none: null, text: 'ünïcødé ✓ 𝄞' };
      const eph = await s.client.request('push', { path: `${root}/push/list`, data });
      expect(eph).toStrictEqual({ id: expect.any(Number), ok: true, item: { index: expect.any(Number), owner: s.hello.session, data } });
      const per = await s.client.request('push', { path: `${root}/push/list`, data: 'kept', persistent: true });
      expect(per).toStrictEqual({ id: expect.any(Number), ok: true, item: { index: expect.any(Number), owner: null, data: 'kept' } });
      const a = eph.item as Item;
      const b = per.item as Item;
      expect(b.index).toBeGreaterThan(a.index);
      // Scalars, empty containers and null are data too.
      for (const value of [null, 0, -1.5, '', [], {}, false]) {
        const r = item(await s.client.call('push', { path: `${root}/push/scalars`, data: value, persistent: true }));
        expect(r.data).toStrictEqual(value);
      }
      const got = await s.client.request('get', { path: `${root}/push/list` });
      expect(got).toStrictEqual({ id: expect.any(Number), ok: true, index: expect.any(Number), items: [a, b] });
    });

    it('push with ifLastIndex succeeds on a match and answers CONFLICT otherwise', async () => {
      const s = await session(enc);
      const path = `${root}/cas`;
      const first = item(await s.client.call('push', { path, data: 'first', ifLastIndex: 0 }));
      const lost = await s.client.request('push', { path, data: 'lost', ifLastIndex: 0 });
      expect(lost).toStrictEqual({ id: expect.any(Number), ok: false, error: { code: 'CONFLICT', message: expect.stringContaining(path) } });
      const second = item(await s.client.call('push', { path, data: 'second', ifLastIndex: first.index }));
      const stale = await s.client.request('push', { path, data: 'stale', ifLastIndex: first.index });
      expect(stale.error?.code).toBe('CONFLICT');
      expect(stale.error?.message).toMatch(new RegExp(`${second.index}`));
      // Deleting the newest item makes the previous one the newest again.
      await s.client.call('delete', { path, index: second.index });
      item(await s.client.call('push', { path, data: 'third', ifLastIndex: first.index }));
      const items = (await s.client.call('get', { path })).items as Item[];
      expect(items.map((x) => x.data)).toEqual(['first', 'third']);
    });

    it('get answers index and items, linearizable by default and stale on request', async () => {
      const writer = await session(enc);
      const reader = await session(other);
      const path = `${root}/get/list`;
      const pushed = [];
      for (const n of [1, 2, 3]) pushed.push(item(await writer.client.call('push', { path, data: n, persistent: n === 2 })));
      // Acknowledged writes are visible to a linearizable read sent afterwards, on any connection.
      for (const args of [{ path }, { path, consistency: 'linearizable' }, { path, consistency: 'stale' }]) {
        const got = await reader.client.request('get', args);
        expect(got).toStrictEqual({ id: expect.any(Number), ok: true, index: expect.any(Number), items: pushed });
        expect(got.index).toBeGreaterThanOrEqual(pushed[2]!.index);
      }
      const empty = await reader.client.request('get', { path: `${root}/get/never-written` });
      expect(empty).toStrictEqual({ id: expect.any(Number), ok: true, index: expect.any(Number), items: [] });
    });

    it('ls answers the sorted names below a path that lead to non-empty lists, including for /', async () => {
      const s = await session(enc);
      const base = `${root}/ls`;
      await s.client.call('push', { path: `${base}/zeta/deep/er`, data: 1, persistent: true });
      await s.client.call('push', { path: `${base}/alpha`, data: 1, persistent: true });
      await s.client.call('push', { path: `${base}/Mid`, data: 1, persistent: true });
      const gone = item(await s.client.call('push', { path: `${base}/empty/after/delete`, data: 1, persistent: true }));
      await s.client.call('delete', { path: `${base}/empty/after/delete`, index: gone.index });
      const ls = await s.client.request('ls', { path: base });
      expect(ls).toStrictEqual({ id: expect.any(Number), ok: true, index: expect.any(Number), children: ['Mid', 'alpha', 'zeta'] });
      expect((await s.client.call('ls', { path: `${base}/zeta` })).children).toEqual(['deep']);
      expect((await s.client.call('ls', { path: `${base}/alpha` })).children).toEqual([]);
      expect((await s.client.call('ls', { path: `${base}/nothing/here` })).children).toEqual([]);
      const top = await s.client.request('ls', { path: '/' });
      expect(top).toStrictEqual({ id: expect.any(Number), ok: true, index: expect.any(Number), children: expect.any(Array) });
      const children = top.children as string[];
      expect(children).toContain(root.slice(1));
      expect(children).toEqual([...children].sort());
    });

    it('delete answers {}, NOT_FOUND for no such item, FORBIDDEN for another session\'s ephemeral item', async () => {
      const owner = await session(enc);
      const stranger = await session(enc);
      const path = `${root}/del/list`;
      const mine = item(await owner.client.call('push', { path, data: 'mine' }));
      const shared = item(await owner.client.call('push', { path, data: 'shared', persistent: true }));
      const forbidden = await stranger.client.request('delete', { path, index: mine.index });
      expect(forbidden).toStrictEqual({ id: expect.any(Number), ok: false, error: { code: 'FORBIDDEN', message: expect.stringContaining(`${mine.index}`) } });
      // A persistent item belongs to no session: anyone may delete it.
      expect(await stranger.client.request('delete', { path, index: shared.index })).toStrictEqual({ id: expect.any(Number), ok: true });
      expect(await owner.client.request('delete', { path, index: mine.index })).toStrictEqual({ id: expect.any(Number), ok: true });
      const again = await owner.client.request('delete', { path, index: mine.index });
      expect(again).toStrictEqual({ id: expect.any(Number), ok: false, error: { code: 'NOT_FOUND', message: expect.stringContaining(`${mine.index}`) } });
      const elsewhere = await owner.client.request('delete', { path: `${root}/del/other`, index: shared.index });
      expect(elsewhere.error?.code).toBe('NOT_FOUND');
      expect((await owner.client.call('get', { path })).items).toEqual([]);
    });

    it('watch answers index and items for an exact watch and only index for a prefix watch; unwatch answers {}', async () => {
      const s = await session(enc);
      const path = `${root}/watch/list`;
      const a = item(await s.client.call('push', { path, data: 'a', persistent: true, watch: false }));
      const exact = await s.client.request('watch', { path });
      expect(exact).toStrictEqual({ id: expect.any(Number), ok: true, index: expect.any(Number), items: [a] });
      expect(exact.index).toBeGreaterThan(a.index);
      const prefix = await s.client.request('watch', { path: `${root}/watch`, prefix: true });
      expect(prefix).toStrictEqual({ id: expect.any(Number), ok: true, index: expect.any(Number) });
      const rootWatch = await s.client.request('watch', { path: '/', prefix: true });
      expect(rootWatch).toStrictEqual({ id: expect.any(Number), ok: true, index: expect.any(Number) });
      expect(await s.client.request('unwatch', { path })).toStrictEqual({ id: expect.any(Number), ok: true });
      expect(await s.client.request('unwatch', { path: `${root}/watch`, prefix: true })).toStrictEqual({ id: expect.any(Number), ok: true });
      expect(await s.client.request('unwatch', { path: '/', prefix: true })).toStrictEqual({ id: expect.any(Number), ok: true });
      // Unwatching what is not watched is harmless.
      expect(await s.client.request('unwatch', { path: `${root}/watch/never` })).toStrictEqual({ id: expect.any(Number), ok: true });
    });
  });

  describe('notifications', () => {
    it('an exact watcher gets push and delete events in index order, each once, starting after the watch index', async () => {
      const pusher = await session(enc);
      const watcher = await session(enc);
      const path = `${root}/notify/exact`;
      const before = item(await pusher.client.call('push', { path, data: 'before', persistent: true }));
      const w = await watcher.client.call('watch', { path });
      expect(w.items).toEqual([before]);
      const one = item(await pusher.client.call('push', { path, data: 'one' }));
      const two = item(await pusher.client.call('push', { path, data: 'two', persistent: true }));
      await pusher.client.call('delete', { path, index: before.index });
      await pusher.client.call('push', { path: `${root}/notify/unrelated`, data: 'x' });
      await pusher.client.call('push', { path: `${path}/child`, data: 'an exact watch does not cover children' });
      const m = await marker(pusher, watcher, path);
      const events = watcher.client.events();
      const deleteEvent = events[2];
      expect(events).toStrictEqual([
        { index: one.index, type: 'push', path, item: one },
        { index: two.index, type: 'push', path, item: two },
        { index: expect.any(Number), type: 'delete', path, item: before },
        { index: m.index, type: 'push', path, item: m },
      ]);
      expect(deleteEvent!.index).toBeGreaterThan(two.index);
      expect(events.every((e) => e.index > (w.index as number))).toBe(true);
      for (const n of watcher.client.notifies()) expect(Object.keys(n).sort()).toEqual(['events', 'op']);
    });

    it('a prefix watcher gets the events of every list below its path, and / watches everything', async () => {
      const pusher = await session(enc);
      const watcher = await session(enc);
      const everything = await session(other);
      const base = `${root}/notify/prefix`;
      const w = await watcher.client.call('watch', { path: base, prefix: true });
      const all = await everything.client.call('watch', { path: '/', prefix: true });
      const a = item(await pusher.client.call('push', { path: `${base}/a`, data: 1 }));
      const deep = item(await pusher.client.call('push', { path: `${base}/b/c/d`, data: 2 }));
      const self = item(await pusher.client.call('push', { path: base, data: 'the prefix list itself' }));
      // Same leading characters, different segment: not below the prefix.
      const outside = item(await pusher.client.call('push', { path: `${base}ed-not`, data: 3 }));
      await pusher.client.call('delete', { path: `${base}/a`, index: a.index });
      const m = await marker(pusher, watcher, `${base}/marker`);
      expect(watcher.client.events()).toStrictEqual([
        { index: a.index, type: 'push', path: `${base}/a`, item: a },
        { index: deep.index, type: 'push', path: `${base}/b/c/d`, item: deep },
        { index: self.index, type: 'push', path: base, item: self },
        { index: expect.any(Number), type: 'delete', path: `${base}/a`, item: a },
        { index: m.index, type: 'push', path: `${base}/marker`, item: m },
      ]);
      expect(watcher.client.events().every((e) => e.index > (w.index as number))).toBe(true);
      await everything.client.waitEvent((e) => e.index === m.index, 'the marker on the root watcher');
      const seen = everything.client.events().filter((e) => e.index > (all.index as number));
      expect(seen.map((e) => [e.path, e.type])).toEqual([
        [`${base}/a`, 'push'],
        [`${base}/b/c/d`, 'push'],
        [base, 'push'],
        [`${base}ed-not`, 'push'],
        [`${base}/a`, 'delete'],
        [`${base}/marker`, 'push'],
      ]);
      expect(seen[3]!.item).toStrictEqual(outside);
    });

    it('pushing watches the list from the pushed item on, unless watch is false', async () => {
      const pusher = await session(enc);
      const other1 = await session(enc);
      const path = `${root}/notify/self`;
      const quiet = `${root}/notify/self-quiet`;
      await pusher.client.call('push', { path: quiet, data: 'q', watch: false });
      await other1.client.call('push', { path: quiet, data: 'not for the quiet pusher', persistent: true, watch: false });
      const own = item(await pusher.client.call('push', { path, data: 'own' }));
      const theirs = item(await other1.client.call('push', { path, data: 'theirs', watch: false }));
      await pusher.client.waitEvents(2);
      expect(pusher.client.events()).toStrictEqual([
        { index: own.index, type: 'push', path, item: own },
        { index: theirs.index, type: 'push', path, item: theirs },
      ]);
    });

    it('a list watched several ways at once (push, exact, prefix, /) yields each event once', async () => {
      const s = await session(enc);
      const other1 = await session(enc);
      const path = `${root}/notify/overlap/list`;
      const own = item(await s.client.call('push', { path, data: 'own' }));
      await s.client.call('watch', { path });
      await s.client.call('watch', { path });
      await s.client.call('watch', { path: `${root}/notify/overlap`, prefix: true });
      await s.client.call('watch', { path: '/', prefix: true });
      const theirs = item(await other1.client.call('push', { path, data: 'theirs', watch: false }));
      await other1.client.call('delete', { path, index: theirs.index });
      const m = await marker(other1, s, path);
      expect(s.client.events().map((e) => [e.index, e.type])).toEqual([
        [own.index, 'push'],
        [theirs.index, 'push'],
        [expect.any(Number), 'delete'],
        [m.index, 'push'],
      ]);
    });

    it('after unwatch no more events arrive for that list', async () => {
      const pusher = await session(enc);
      const watcher = await session(enc);
      const path = `${root}/notify/unwatch`;
      const keep = `${root}/notify/unwatch-keep`;
      await watcher.client.call('watch', { path });
      await watcher.client.call('watch', { path: keep });
      const seen = item(await pusher.client.call('push', { path, data: 'seen', persistent: true }));
      await watcher.client.call('unwatch', { path });
      await pusher.client.call('push', { path, data: 'unseen', persistent: true });
      await watcher.client.call('watch', { path: `${root}/notify/p-unwatch`, prefix: true });
      await watcher.client.call('unwatch', { path: `${root}/notify/p-unwatch`, prefix: true });
      await pusher.client.call('push', { path: `${root}/notify/p-unwatch/x`, data: 'unseen', persistent: true });
      const m = await marker(pusher, watcher, keep);
      expect(watcher.client.events()).toStrictEqual([
        { index: seen.index, type: 'push', path, item: seen },
        { index: m.index, type: 'push', path: keep, item: m },
      ]);
    });

    it('another session ending deletes its items and notifies watchers with one index for the whole entry', async () => {
      const dying = await session(enc);
      const watcher = await session(enc);
      const path = `${root}/notify/bye`;
      const a = item(await dying.client.call('push', { path, data: 'a' }));
      const b = item(await dying.client.call('push', { path, data: 'b' }));
      await watcher.client.call('watch', { path });
      await dying.client.call('bye');
      const events = await watcher.client.waitEvents(2);
      expect(events).toStrictEqual([
        { index: expect.any(Number), type: 'delete', path, item: a },
        { index: expect.any(Number), type: 'delete', path, item: b },
      ]);
      expect(events[0]!.index).toBe(events[1]!.index);
    });
  });
});

describe('HTTP endpoints', () => {
  it('GET /v1/data/<path> answers {index, items}, stale by default and linearizable on request', async () => {
    const s = await session('json');
    const path = '/http/list/ünï cødé';
    const a = item(await s.client.call('push', { path, data: { n: 1 }, persistent: true }));
    const b = item(await s.client.call('push', { path, data: [2] }));
    for (const consistency of [undefined, 'stale', 'linearizable'] as const) {
      const r = await httpGet(vp, dataUrl(path, consistency));
      expect(r.status).toBe(200);
      expect(r.contentType).toMatch(/^application\/json/);
      const body = JSON.parse(r.text) as Record<string, unknown>;
      expect(body).toStrictEqual({ index: expect.any(Number), items: [a, b] });
      expect(body.index).toBeGreaterThanOrEqual(b.index);
    }
    expect((await httpJson(vp, dataUrl('/http/never'))).body).toStrictEqual({ index: expect.any(Number), items: [] });
  });

  it('GET /v1/data with a bad path or consistency is a 400 naming the problem', async () => {
    const badPath = await httpJson(vp, '/v1/data/a//b');
    expect(badPath.status).toBe(400);
    expect(badPath.body).toMatchObject({ error: { code: 'BAD_REQUEST', message: expect.stringMatching(/empty segment/) } });
    const badConsistency = await httpJson(vp, '/v1/data/a?consistency=eventual');
    expect(badConsistency.status).toBe(400);
    expect(badConsistency.body).toMatchObject({ error: { code: 'BAD_REQUEST', message: expect.stringMatching(/consistency/) } });
  });

  it('GET /v1/data takes the path as sent, under the WebSocket\'s rule: no `.` or `..` segment, raw or percent-encoded', async () => {
    const s = await session('json');
    await s.client.call('push', { path: '/dots/b', data: 'b', persistent: true });
    // fetch would normalise /a/../b to /b before sending; a raw request sends the target as written.
    for (const target of ['/v1/data/dots/a/../b', '/v1/data/dots/%2e%2e/dots/b', '/v1/data/dots/./b', '/v1/data/../v1/status', '/v1/data/dots/%2E%2E/b']) {
      const r = await rawHttpGet(vp.clientPort, target);
      expect(r.status, target).toBe(400);
      expect(JSON.parse(r.text), target).toMatchObject({ error: { code: 'BAD_REQUEST', message: expect.stringMatching(/segment/) } });
    }
    expect((await rawHttpGet(vp.clientPort, '/v1/data/dots/b')).status).toBe(200);
  });

  it('GET /v1/status names this node, its role, term, commit/applied, the leader and its client URL, and the members', async () => {
    const st = await status(vp);
    expect(st).toMatchObject({
      id: 'n1',
      role: 'leader',
      term: expect.any(Number),
      commit: expect.any(Number),
      applied: expect.any(Number),
      leader: 'n1',
    });
    expect(st.term).toBeGreaterThanOrEqual(1);
    expect(st.applied).toBeLessThanOrEqual(st.commit);
    expect(st.applied).toBeGreaterThanOrEqual(1);
    // The URL a client must use to reach the leader: this very process, on the port it actually bound.
    expect(st.leaderUrl).toBe(vp.url);
    expect(st.members).toEqual([{ id: 'n1', clientUrl: vp.url, voter: true }]);
  });

  it('GET /v1/status says which command version this member applies and which the cluster runs', async () => {
    const st = await status(vp);
    // A lone member supports what it applies, so its first leadership raises the cluster's to that.
    expect(st.commandVersion).toEqual({ applies: COMMAND_VERSION, active: COMMAND_VERSION });
  });

  it('GET /healthz answers 200 while serving', async () => {
    expect((await httpGet(vp, '/healthz')).status).toBe(200);
  });

  it('GET /metrics is Prometheus text with the Raft gauges', async () => {
    (await openSession(vp, 'json')).client.terminate(); // at least one session opened
    const st = await status(vp);
    const r = await httpGet(vp, '/metrics');
    expect(r.status).toBe(200);
    expect(r.contentType).toMatch(/^text\/plain/);
    expect(r.text).toMatch(/^# TYPE vera_raft_term gauge$/m);
    const gauge = (name: string): number => {
      const line = r.text.split('\n').find((l) => l.startsWith(`${name} `));
      if (line === undefined) throw new Error(`no ${name} sample in /metrics:\n${r.text}`);
      return Number(line.slice(name.length + 1));
    };
    expect(gauge('vera_raft_term')).toBe(st.term);
    expect(gauge('vera_raft_is_leader')).toBe(1);
    expect(gauge('vera_raft_commit_index')).toBeGreaterThanOrEqual(st.commit);
    expect(gauge('vera_raft_applied_index')).toBeGreaterThanOrEqual(st.applied);
    // Every sample line is `name{labels} value` with a numeric value.
    for (const line of r.text.split('\n').filter((l) => l !== '' && !l.startsWith('#'))) {
      expect(line).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?[0-9.e+\-]+$|^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? (NaN|\+Inf|-Inf)$/);
    }
    // Each metric has the type its meaning calls for, and what operators of etcd look at first is there.
    const typeOf = (name: string): string | undefined => new RegExp(`^# TYPE ${name} (\\w+)$`, 'm').exec(r.text)?.[1];
    const types: Record<string, string> = {
      vera_linearizable_reads_total: 'counter',
      vera_raft_leader_changes_total: 'counter',
      vera_proposals_total: 'counter',
      vera_proposals_failed_total: 'counter',
      vera_disk_log_sync_seconds: 'histogram',
      vera_apply_seconds: 'histogram',
      vera_propose_seconds: 'histogram',
      vera_peer_lag_entries: 'gauge',
      vera_snapshot_seconds: 'histogram',
      vera_sessions_opened_total: 'counter',
      vera_session_expirations_total: 'counter',
      vera_notify_backlog: 'gauge',
      process_cpu_seconds_total: 'counter',
      nodejs_eventloop_lag_seconds: 'gauge',
    };
    for (const [name, type] of Object.entries(types)) expect(typeOf(name), name).toBe(type);
    // A single member has seen one leader (itself), synced its log and applied entries, and opened our sessions.
    expect(gauge('vera_raft_leader_changes_total')).toBe(1);
    expect(gauge('vera_disk_log_sync_seconds_count')).toBeGreaterThan(0);
    expect(gauge('vera_apply_seconds_count')).toBeGreaterThan(0);
    expect(gauge('vera_sessions_opened_total')).toBeGreaterThan(0);
    expect(r.text).toMatch(/^vera_notify_backlog\{state="live"\} \d+$/m);
  });

  it('unknown endpoints are 404 and the WebSocket lives only at /v1/connect', async () => {
    expect((await httpGet(vp, '/v2/nothing')).status).toBe(404);
    await expect(WireClient.connect(vp.url.replace(/$/, '/elsewhere'), 'json')).rejects.toThrow(/404|Unexpected server response/);
  });
});

/** A GET with the request target sent exactly as given (no URL normalisation). */
function rawHttpGet(port: number, target: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: target, method: 'GET', timeout: 5000 }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${target} timed out`)));
    req.on('error', reject);
    req.end();
  });
}
