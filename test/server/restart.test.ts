// Crash and restart of a real `vera` process on the same data directory: every
// acknowledged write survives kill -9 with its index; sessions survive too, the
// restarted leader gives each the full timeout again, so a client that comes back
// keeps its items and one that never does loses them no earlier than that.

import { Agent, request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { killAll, type VeraProcess } from '../support/vera-process.js';
import { dataUrl, httpJson, keepSending, openSession, startLeader } from './fixture.js';
import { WireClient, type ChangeEvent, type Item, type NotifyFrame } from './wire-client.js';

const TIMEOUT_MS = 3000;

const dataDirs: VeraProcess[] = [];
afterEach(async () => {
  await killAll();
  for (const vp of dataDirs.splice(0)) vp.removeData();
});

/** Replays notify frames into a view of one list: a resync replaces it, events add and remove items. */
function viewOf(path: string, frames: readonly NotifyFrame[]): Item[] {
  const items = new Map<number, Item>();
  let floor = 0;
  for (const frame of frames) {
    for (const list of frame.resync ?? []) {
      if (list.path !== path) continue;
      items.clear();
      for (const i of list.items) items.set(i.index, i);
      floor = list.index;
    }
    for (const e of frame.events ?? ([] as ChangeEvent[])) {
      if (e.path !== path || e.index <= floor) continue;
      if (e.type === 'push') items.set(e.item.index, e.item);
      else items.delete(e.item.index);
    }
  }
  return [...items.values()].sort((a, b) => a.index - b.index);
}

describe('restart', () => {
  it('after kill -9, acknowledged items keep their index, a resumed session keeps its items, an abandoned one expires at full timeout', async () => {
    const first = await startLeader();
    dataDirs.push(first);
    const keeper = await openSession(first, 'msgpack', { timeoutMs: TIMEOUT_MS });
    const abandoned = await openSession(first, 'json', { timeoutMs: TIMEOUT_MS });
    const P = '/restart/persistent';
    const E = '/restart/ephemeral';

    // Pipelined persistent pushes from both sessions, all acknowledged.
    const ids = Array.from({ length: 20 }, (_, n) => {
      const s = n % 2 === 0 ? keeper : abandoned;
      const id = s.client.newId();
      s.client.send({ id, op: 'push', path: P, data: { n }, persistent: true, watch: false });
      return { s, id };
    });
    const acked = (await Promise.all(ids.map(({ s, id }) => s.client.waitReply(id)))).map((f) => f.value!.item as Item);
    expect(acked).toHaveLength(20);
    const keeperItem = (await keeper.client.call('push', { path: E, data: 'keeper' })).item as Item;
    const abandonedItems = [
      (await abandoned.client.call('push', { path: E, data: 'abandoned-1' })).item as Item,
      (await abandoned.client.call('push', { path: E, data: 'abandoned-2' })).item as Item,
    ];
    // More pushes in flight at the moment of the crash: each may or may not survive, but never twice or altered.
    for (let n = 0; n < 10; n++) keeper.client.send({ id: keeper.client.newId(), op: 'push', path: P, data: { inflight: n }, persistent: true, watch: false });
    await first.kill9();

    const spawnedAt = performance.now();
    const second = await startLeader({ dataDir: first.dataDir });
    dataDirs.push(second);

    // The keeper comes back within its timeout and keeps talking.
    const back = await WireClient.connect(second.url, 'msgpack');
    const hello = await back.hello({ session: keeper.hello.session, resume: keeper.hello.resume });
    expect(hello.session).toBe(keeper.hello.session);
    expect(hello.timeoutMs).toBe(TIMEOUT_MS);

    const watcher = await openSession(second, 'json');
    const watched = await watcher.client.call('watch', { path: E });
    // Nothing expired yet: the restarted leader started every session's clock afresh.
    expect(watched.items).toStrictEqual([...abandonedItems, keeperItem].sort((a, b) => a.index - b.index));

    const expiry = watcher.client.waitEvents(2, TIMEOUT_MS + 10_000);
    const events = await keepSending(() => back.send({ id: back.newId(), op: 'ping' }), TIMEOUT_MS / 5, expiry);
    const arrived = watcher.client.eventArrival((e) => e.type === 'delete')!;
    expect(events).toStrictEqual(abandonedItems.map((i) => ({ index: expect.any(Number), type: 'delete', path: E, item: i })));
    // The abandoned session got its full timeout again, counted from no earlier than the restart.
    expect(arrived - spawnedAt).toBeGreaterThanOrEqual(TIMEOUT_MS);

    // Every acknowledged persistent item is there with the same index and data; in-flight ones at most once each.
    const persisted = (await httpJson(second, dataUrl(P, 'linearizable'))).body.items as Item[];
    for (const a of acked) expect(persisted).toContainEqual(a);
    const extra = persisted.filter((p) => !acked.some((a) => a.index === p.index));
    for (const x of extra) expect(x).toMatchObject({ owner: null, data: { inflight: expect.any(Number) } });
    expect(new Set(extra.map((x) => JSON.stringify(x.data))).size).toBe(extra.length);
    expect(persisted.map((p) => p.index)).toEqual([...persisted.map((p) => p.index)].sort((a, b) => a - b));

    // The resumed session kept its item; its notifications (replay or resync) converge on the list.
    expect((await back.call('get', { path: E })).items).toStrictEqual([keeperItem]);
    const m = (await back.call('push', { path: E, data: 'after-restart', persistent: true })).item as Item;
    await back.waitEvent((e) => e.index === m.index, 'the keeper\'s own push after the restart');
    expect(viewOf(E, back.notifies())).toStrictEqual([keeperItem, m]);

    const gone = await WireClient.connect(second.url, 'json');
    expect((await gone.request('hello', { session: abandoned.hello.session })).error?.code).toBe('SESSION_EXPIRED');
    await gone.close();
    await back.call('bye');
    await watcher.client.call('bye');
  });

  it('a clean stop is not held up by a keep-alive HTTP client that keeps polling, nor by an open session', async () => {
    const vp = await startLeader();
    dataDirs.push(vp);
    const s = await openSession(vp, 'msgpack');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const poll = (): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port: vp.clientPort, path: '/v1/status', agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
    // A health checker on one kept-alive connection: it polls until the server is gone.
    let answered = 0;
    const polling = (async () => {
      for (;;) {
        try {
          if ((await poll()) === 200) answered++;
        } catch {
          return;
        }
      }
    })();
    while (answered < 5) await poll().then(() => undefined);
    expect(await vp.stop()).toBe(0);
    await polling;
    agent.destroy();
    // The session's connection was closed with "going away", not cut.
    expect((await s.client.waitClose()).code).toBe(1001);
  });

  it('a clean stop exits 0 and a restart serves the same data', async () => {
    const first = await startLeader();
    dataDirs.push(first);
    const s = await openSession(first, 'json');
    const pushed = [];
    for (const n of [1, 2, 3]) pushed.push((await s.client.call('push', { path: '/restart/clean', data: n, persistent: true })).item as Item);
    await s.client.call('bye');
    await s.client.close();
    expect(await first.stop()).toBe(0);

    const second = await startLeader({ dataDir: first.dataDir });
    dataDirs.push(second);
    const again = await openSession(second, 'msgpack');
    expect((await again.client.call('get', { path: '/restart/clean' })).items).toStrictEqual(pushed);
    await again.client.call('bye');
  });
});
