// Session lifetimes against a real `vera` process (PROTOCOL.md "Session" and
// "Notifications"): expiry of a client that vanished, resume with replay of
// missed events, and bye. Expiry timing is measured, not assumed: the server
// hears a session's last frame no earlier than the test sent it, so its items
// cannot be deleted before that send time plus the timeout.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { VeraProcess } from '../support/vera-process.js';
import { killAll } from '../support/vera-process.js';
import { ENCODINGS, dataUrl, httpJson, keepSending, openSession, startLeader, type Session } from './fixture.js';
import { WireClient, type Item, type WireEncoding } from './wire-client.js';

const TIMEOUT_MS = 600;
/** How late after its timeout an expiry may be noticed (the brief's bound). */
const EXPIRY_SLACK_MS = 1000;

let vp: VeraProcess;

beforeAll(async () => {
  vp = await startLeader();
});

afterAll(async () => {
  await killAll();
  vp?.removeData();
});

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

async function expectExpired(session: string, encoding: WireEncoding): Promise<void> {
  const c = await WireClient.connect(vp.url, encoding);
  const reply = await c.request('hello', { session });
  expect(reply.error?.code).toBe('SESSION_EXPIRED');
  await c.close();
}

describe.each(ENCODINGS)('sessions over %s', (enc) => {
  const root = `/sess-${enc}`;

  it('a client that vanishes without bye loses its ephemeral items after its timeout, and watchers hear of it', async () => {
    const watcher = await session(enc);
    const dying = await session(enc, { timeoutMs: TIMEOUT_MS });
    expect(dying.hello.timeoutMs).toBe(TIMEOUT_MS);
    const a = `${root}/abrupt/a`;
    const b = `${root}/abrupt/b`;
    const ephA = item(await dying.client.call('push', { path: a, data: 'eph-a' }));
    const ephB = item(await dying.client.call('push', { path: b, data: 'eph-b' }));
    const kept = item(await dying.client.call('push', { path: a, data: 'kept', persistent: true }));
    await watcher.client.call('watch', { path: a });
    await watcher.client.call('watch', { path: b });

    const lastSend = performance.now();
    await dying.client.call('ping'); // the last frame the server hears from this session
    dying.client.terminate();
    const vanishedAt = performance.now();

    const events = await watcher.client.waitEvents(2, TIMEOUT_MS + EXPIRY_SLACK_MS + 2000);
    const arrived = watcher.client.eventArrival((e) => e.type === 'delete')!;
    expect(events).toStrictEqual([
      { index: expect.any(Number), type: 'delete', path: a, item: ephA },
      { index: expect.any(Number), type: 'delete', path: b, item: ephB },
    ]);
    // One committed entry deletes everything the session owned.
    expect(events[0]!.index).toBe(events[1]!.index);
    expect(arrived - lastSend).toBeGreaterThanOrEqual(TIMEOUT_MS);
    expect(arrived - vanishedAt).toBeLessThanOrEqual(TIMEOUT_MS + EXPIRY_SLACK_MS);

    expect((await watcher.client.call('get', { path: a })).items).toStrictEqual([kept]);
    expect((await watcher.client.call('get', { path: b })).items).toStrictEqual([]);
    await expectExpired(dying.hello.session, enc);
  });

  it('a session whose connection stays open but silent expires too', async () => {
    const watcher = await session(enc);
    const silent = await session(enc, { timeoutMs: TIMEOUT_MS });
    const path = `${root}/silent`;
    const eph = item(await silent.client.call('push', { path, data: 'quiet' }));
    await watcher.client.call('watch', { path });
    const lastSend = performance.now();
    await silent.client.call('ping');
    const [event] = await watcher.client.waitEvents(1, TIMEOUT_MS + EXPIRY_SLACK_MS + 2000);
    expect(event).toStrictEqual({ index: expect.any(Number), type: 'delete', path, item: eph });
    expect(watcher.client.eventArrival(() => true)! - lastSend).toBeGreaterThanOrEqual(TIMEOUT_MS);
    await expectExpired(silent.hello.session, enc);
  });

  it('a session that keeps sending frames outlives a silent one with the same timeout', async () => {
    const watcher = await session(enc);
    const busy = await session(enc, { timeoutMs: TIMEOUT_MS });
    const silent = await session(enc, { timeoutMs: TIMEOUT_MS });
    const path = `${root}/keepalive`;
    const busyItem = item(await busy.client.call('push', { path, data: 'busy' }));
    const silentItem = item(await silent.client.call('push', { path, data: 'silent' }));
    await watcher.client.call('watch', { path });
    await silent.client.call('ping');

    // Busy pings every fifth of its timeout until the silent session's items are gone.
    const gone = watcher.client.waitEvent((e) => e.type === 'delete', 'the silent session expiring', TIMEOUT_MS + EXPIRY_SLACK_MS + 2000);
    const deleted = await keepSending(() => busy.client.send({ id: busy.client.newId(), op: 'ping' }), TIMEOUT_MS / 5, gone);
    expect(deleted.item).toStrictEqual(silentItem);
    expect((await busy.client.call('get', { path })).items).toStrictEqual([busyItem]);
    expect(busy.client.frames.filter((f) => f.value?.ok === false)).toEqual([]);
  });

  it('any frame keeps a session alive, even one the server rejects', async () => {
    // PROTOCOL.md: "A session stays alive while any frame arrives within timeoutMs."
    const watcher = await session(enc);
    const sloppy = await session(enc, { timeoutMs: TIMEOUT_MS });
    const silent = await session(enc, { timeoutMs: TIMEOUT_MS });
    const path = `${root}/any-frame`;
    const sloppyItem = item(await sloppy.client.call('push', { path, data: 'sloppy' }));
    const silentItem = item(await silent.client.call('push', { path, data: 'silent' }));
    await watcher.client.call('watch', { path });
    await silent.client.call('ping');

    const gone = watcher.client.waitEvent((e) => e.type === 'delete', 'the silent session expiring', TIMEOUT_MS + EXPIRY_SLACK_MS + 2000);
    const deleted = await keepSending(() => sloppy.client.send({ id: sloppy.client.newId(), op: 'frobnicate' }), TIMEOUT_MS / 5, gone);
    expect(deleted.item, 'the first item deleted must be the silent session\'s, not the one still sending frames').toStrictEqual(silentItem);
    // The silent session's expiry entry is applied; had the sloppy one expired with it, its item would be gone too.
    expect((await watcher.client.call('get', { path })).items).toStrictEqual([sloppyItem]);
    expect(await sloppy.client.call('ping')).toStrictEqual({ index: expect.any(Number) });
  });

  it('resume: items survive a closed connection and the events missed after the last ack arrive, each once', async () => {
    const a = await session(enc, { timeoutMs: 10_000 });
    const b = await session(enc);
    const path = `${root}/resume/list`;
    const own = item(await a.client.call('push', { path, data: 'mine' }));
    const [ownEvent] = await a.client.waitEvents(1);
    expect(ownEvent!.index).toBe(own.index);
    await a.client.call('ping', { ack: own.index });
    await a.client.close(); // no bye: the session lives on

    const b1 = item(await b.client.call('push', { path, data: 'missed-1', persistent: true }));
    const b2 = item(await b.client.call('push', { path, data: 'missed-2', watch: false }));
    await b.client.call('delete', { path, index: b1.index });

    const back = await WireClient.connect(vp.url, enc);
    opened.push({ client: back, hello: a.hello });
    const hello = await back.hello({ session: a.hello.session, resume: a.hello.resume });
    // A resume answers what the first hello did, but for the resume token, which only the session's first hello tells.
    const { resume: _token, ...firstHello } = a.hello;
    expect(hello).toStrictEqual({ ...firstHello, index: expect.any(Number), term: expect.any(Number) });
    const missed = await back.waitEvents(3);
    expect(missed).toStrictEqual([
      { index: b1.index, type: 'push', path, item: b1 },
      { index: b2.index, type: 'push', path, item: b2 },
      { index: expect.any(Number), type: 'delete', path, item: b1 },
    ]);
    // Live delivery continues after the replay, without repeats.
    const m = item(await b.client.call('push', { path, data: 'live', persistent: true, watch: false }));
    await back.waitEvent((e) => e.index === m.index, 'the live event after the replay');
    expect(back.events().map((e) => e.index)).toEqual([b1.index, b2.index, missed[2]!.index, m.index]);
    expect((await back.call('get', { path })).items).toStrictEqual([own, b2, m]);
  });

  it('resume without any ack re-sends everything since the session started (at least once), in the new hello\'s encoding', async () => {
    const a = await session(enc, { timeoutMs: 10_000 });
    const b = await session(enc);
    const path = `${root}/resume/no-ack`;
    const own = item(await a.client.call('push', { path, data: 'mine' }));
    await a.client.waitEvents(1);
    await a.client.close();
    const theirs = item(await b.client.call('push', { path, data: 'theirs', watch: false }));

    const switched: WireEncoding = enc === 'json' ? 'msgpack' : 'json';
    const back = await WireClient.connect(vp.url, switched);
    opened.push({ client: back, hello: a.hello });
    await back.hello({ session: a.hello.session, resume: a.hello.resume });
    expect(await back.waitEvents(2)).toStrictEqual([
      { index: own.index, type: 'push', path, item: own },
      { index: theirs.index, type: 'push', path, item: theirs },
    ]);
    expect(new Set(back.frames.filter((f) => f.value?.op === 'notify').map((f) => f.encoding))).toEqual(new Set([switched]));
  });

  it('bye deletes the session\'s ephemeral items before it answers, in one entry, and watchers hear of it', async () => {
    const leaving = await session(enc);
    const watcher = await session(enc);
    const x = `${root}/bye/x`;
    const y = `${root}/bye/y`;
    const ex = item(await leaving.client.call('push', { path: x, data: 'ex' }));
    const ey = item(await leaving.client.call('push', { path: y, data: 'ey' }));
    const px = item(await leaving.client.call('push', { path: x, data: 'px', persistent: true }));
    await watcher.client.call('watch', { path: x });
    await watcher.client.call('watch', { path: y });

    expect(await leaving.client.request('bye')).toStrictEqual({ id: expect.any(Number), ok: true });
    // The reply came after the delete was committed and applied: even a stale read shows it.
    const [afterX, afterY] = await Promise.all([httpJson(vp, dataUrl(x, 'stale')), httpJson(vp, dataUrl(y, 'stale'))]);
    expect(afterX.body.items).toStrictEqual([px]);
    expect(afterY.body.items).toStrictEqual([]);

    const events = await watcher.client.waitEvents(2);
    expect(events).toStrictEqual([
      { index: expect.any(Number), type: 'delete', path: x, item: ex },
      { index: expect.any(Number), type: 'delete', path: y, item: ey },
    ]);
    expect(events[0]!.index).toBe(events[1]!.index);
    expect(events[0]!.index).toBeLessThanOrEqual(afterX.body.index as number);
    await expectExpired(leaving.hello.session, enc);
  });
});
