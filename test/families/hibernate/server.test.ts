// Hibernation on a real `vera` process: a unit frozen by hand is still listed by
// `ls`, every kind of operation on it (a get, many concurrent gets, a push, an
// HTTP read) thaws it first and then sees exactly what it would have seen, one
// thaw however many requests arrive (counted by the metrics), a watcher's
// stream has no trace of the freeze or the thaw, and the CLI.
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../../src/client/client.js';
import type { ClientEvent } from '../../../src/client/notifications.js';
import { HibernateClient } from '../../../src/families/hibernate/client.js';
import { RangeClient } from '../../../src/families/range/client.js';
import { main } from '../../../src/cli/main.js';
import { captureIO } from '../../client/cli-io.js';
import { openSession, startLeader, untilCommandVersion, waitForLeadership } from '../../server/fixture.js';
import { WireClient } from '../../server/wire-client.js';
import { pollUntil } from '../../support/poll.js';
import { VeraProcess } from '../../support/vera-process.js';

let vp: VeraProcess | null = null;
const clients: VeraClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await vp?.stop();
  vp = null;
});

async function start(args: readonly string[] = []): Promise<{ vp: VeraProcess; client: VeraClient; hib: HibernateClient }> {
  vp = await startLeader({ args });
  const client = await connect(vp.url, { timeoutMs: 10_000 });
  clients.push(client);
  const hib = new HibernateClient(client);
  await untilCommandVersion(() => hib.units());
  return { vp, client, hib };
}

async function metric(vp: VeraProcess, name: string): Promise<number> {
  const text = await fetch(`${vp.httpUrl}/metrics`).then((r) => r.text());
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`no metric ${name}`);
  return Number(line.split(' ')[1]);
}

describe('hibernation on a server', () => {
  it('a frozen unit stays listed; concurrent reads thaw it once and see what they would have seen', async () => {
    const { vp, client, hib } = await start();
    await client.push('/users/alice', { name: 'alice' }, { persistent: true, watch: false });
    await client.push('/users/alice/bookmarks', 'b1', { persistent: true, watch: false });
    await client.push('/users/alice/bookmarks', 'b2', { persistent: true, watch: false });
    await client.push('/users/bob', 'bob', { persistent: true, watch: false });
    const before = await client.get('/users/alice/bookmarks');

    expect(await hib.freeze('/users/alice')).toMatchObject({ unit: '/users/alice', frozen: true, items: 3 });
    expect(await hib.units()).toMatchObject([{ unit: '/users/alice', items: 3, lists: [{ path: '/users/alice' }, { path: '/users/alice/bookmarks', items: 2 }] }]);
    expect((await client.ls('/users')).children).toEqual(['alice', 'bob']);
    expect(await metric(vp, 'vera_hibernate_units_frozen')).toBe(1);

    const other = await connect(vp.url, { timeoutMs: 10_000 });
    clients.push(other);
    const reads = await Promise.all(Array.from({ length: 20 }, (_, k) => (k % 2 === 0 ? client : other).get('/users/alice/bookmarks')));
    for (const r of reads) expect(r.items).toEqual(before.items);
    // The reads started the thaw and did not wait for it (they read the cold file): it ends soon after.
    await pollUntil('the thaw the reads started', async () => ((await hib.units()).length === 0 ? true : undefined), 10_000);
    expect(await metric(vp, 'vera_hibernate_thaws_total')).toBe(1);
    expect((await client.get('/users/alice')).items.map((i) => i.data)).toEqual([{ name: 'alice' }]);
  });

  it('a read of a large frozen unit starts its thaw and answers from the cold file without waiting for the paced steps; a push waits for them', async () => {
    const { client, hib } = await start();
    const ITEMS = 20_000; // 80 thaw steps of 250, at least 4 ms apart: the thaw takes over 0.3 s however fast each step is
    for (let n = 0; n < ITEMS; n += 500) await Promise.all(Array.from({ length: 500 }, (_, k) => client.push('/users/erin/log', n + k, { persistent: true, watch: false })));
    const range = new RangeClient(client);
    const before = await range.items('/users/erin/log', { limit: 10 });
    expect(await hib.freeze('/users/erin')).toMatchObject({ frozen: true, items: ITEMS });

    const read = await range.items('/users/erin/log', { limit: 10 });
    expect(read.items).toEqual(before.items);
    // Answered while the unit is still Frozen: its thaw's steps are still going.
    expect((await hib.units()).map((u) => u.unit)).toEqual(['/users/erin']);
    // A push waits for the thaw, then lands after every item.
    const pushed = await client.push('/users/erin/log', 'last', { persistent: true, watch: false });
    expect(await hib.units()).toEqual([]);
    expect(pushed.index).toBeGreaterThan(before.items[9]!.index);
    expect((await range.items('/users/erin/log', { after: pushed.index - 1 })).items.map((i) => i.data)).toEqual(['last']);
  });

  it('freezes several units in one request and entry; a bad list of paths is refused whole', async () => {
    const { vp, client, hib } = await start();
    for (const u of ['a', 'b', 'c']) await client.push(`/users/${u}/items`, u, { persistent: true, watch: false });
    await expect(hib.freezeMany(['/users/a', '/users/a'])).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(hib.freezeMany(['/users/a', '/users/a/items'])).rejects.toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('overlap') });
    await expect(hib.freezeMany(Array.from({ length: 65 }, (_, n) => `/u/${n}`))).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    expect(await hib.units()).toEqual([]);
    expect(await hib.freezeMany(['/users/a', '/users/b', '/users/none'])).toEqual([
      { unit: '/users/a', frozen: true, items: 1, bytes: expect.any(Number) },
      { unit: '/users/b', frozen: true, items: 1, bytes: expect.any(Number) },
      { unit: '/users/none', frozen: false, why: 'empty' },
    ]);
    const units = await hib.units();
    expect(units.map((u) => [u.unit, u.state])).toEqual([['/users/a', 'frozen'], ['/users/b', 'frozen']]);
    // One freeze began them both.
    expect(units[0]).toMatchObject({ frozenAt: (units[1] as { frozenAt: number }).frozenAt });
    // Listed a page at a time.
    expect(await hib.unitsPage({ limit: 1 })).toMatchObject({ units: [{ unit: '/users/a' }], next: '/users/a' });
    const second = await hib.unitsPage({ after: '/users/a', limit: 1 });
    expect(second).toMatchObject({ units: [{ unit: '/users/b' }] });
    expect(second.next).toBeUndefined();
    await expect(hib.unitsPage({ limit: 0 })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(hib.unitsPage({ limit: 1001 })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    expect(await metric(vp, 'vera_hibernate_freezes_total')).toBe(2);
    // A defrag rewrites the db (giving back what the freezes deleted) and changes nothing a client sees.
    const defrag = await fetch(`${vp.httpUrl}/v1/defrag`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(defrag.status).toBe(200);
    expect(await defrag.json()).toMatchObject({ defragmented: true });
    expect((await client.get('/users/c/items')).items.map((i) => i.data)).toEqual(['c']);
    expect((await client.get('/users/b/items')).items.map((i) => i.data)).toEqual(['b']);
  });

  it('a push and a linearizable HTTP read thaw too (a stale one reads the cold file); a watcher sees the push and nothing of the freeze or thaw', async () => {
    const { vp, client, hib } = await start();
    await client.push('/users/carol/notes', 'n1', { persistent: true, watch: false });
    const watcher = await connect(vp.url, { timeoutMs: 10_000 });
    clients.push(watcher);
    const events: ClientEvent[] = [];
    const stream = watcher.events();
    void (async () => {
      for await (const e of stream) events.push(e);
    })();
    await watcher.watch('/users/carol/notes');

    expect(await hib.freeze('/users/carol')).toMatchObject({ frozen: true });
    const pushed = await client.push('/users/carol/notes', 'n2', { persistent: true, watch: false });
    expect((await client.get('/users/carol/notes')).items.map((i) => i.data)).toEqual(['n1', 'n2']);
    // Wait for the watcher to hear of the push (bounded), then check it heard nothing else.
    const deadline = Date.now() + 10_000;
    while (!events.some((e) => 'item' in e && e.item?.index === pushed.index) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(events.map((e) => ('type' in e ? [e.type, e.path, 'item' in e ? e.item?.data : null] : e))).toEqual([['push', '/users/carol/notes', 'n2']]);

    expect(await hib.freeze('/users/carol')).toMatchObject({ frozen: true });
    // A stale HTTP read (the default) is served from the cold file and thaws nothing; a linearizable one is a use and thaws.
    const res = await fetch(`${vp.httpUrl}/v1/data/users/carol/notes`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { items: Array<{ data: unknown }> }).items.map((i) => i.data)).toEqual(['n1', 'n2']);
    expect(await metric(vp, 'vera_hibernate_thaws_total')).toBe(1);
    const linearizable = await fetch(`${vp.httpUrl}/v1/data/users/carol/notes?consistency=linearizable`);
    expect(((await linearizable.json()) as { items: Array<{ data: unknown }> }).items.map((i) => i.data)).toEqual(['n1', 'n2']);
    await pollUntil('the thaw the linearizable read started', async () => ((await hib.units()).length === 0 ? true : undefined), 10_000);
    expect(await metric(vp, 'vera_hibernate_thaws_total')).toBe(2);
    // A unit with an ephemeral item (a live session's) is not frozen.
    await client.push('/users/dave/presence', 'here');
    expect(await hib.freeze('/users/dave')).toEqual({ unit: '/users/dave', frozen: false, why: 'ephemeral' });
  });

  /** A member, a session that will watch (and go away), and a client that writes. */
  async function watcherAndWriter(): Promise<{ first: VeraProcess; watcher: Awaited<ReturnType<typeof openSession>>; writer: VeraClient }> {
    const first = await startLeader({ args: [] });
    vp = first;
    const watcher = await openSession(first, 'json', { timeoutMs: 60_000 });
    const writer = await connect(first.url, { timeoutMs: 10_000 });
    clients.push(writer);
    return { first, watcher, writer };
  }

  /** Restarts the member on its data and resumes the watcher's session there on a raw connection. */
  async function restartAndResume(first: VeraProcess, hello: { session: string; resume?: string }): Promise<{ second: VeraProcess; back: WireClient }> {
    await first.stop();
    const second = await VeraProcess.start({ dataDir: first.dataDir });
    vp = second;
    await waitForLeadership(second);
    const back = await WireClient.connect(second.url, 'json');
    await back.hello({ session: hello.session, resume: hello.resume });
    return { second, back };
  }

  it('a resync of a watched list in a frozen unit sends its items from the cold file, not an empty list (found by a chaos trial)', async () => {
    const { first, watcher, writer } = await watcherAndWriter();
    const items = [];
    for (const d of ['a', 'b']) items.push(await writer.push('/users/alice/list', d, { persistent: true, watch: false }));
    await watcher.client.call('watch', { path: '/users/alice/list' });
    await untilCommandVersion(() => new HibernateClient(writer).units());
    expect(await new HibernateClient(writer).freeze('/users/alice')).toMatchObject({ frozen: true });
    await writer.close();
    await watcher.client.close();
    // A restart forgets the event log: the resumed session's watched lists come back as a resync.
    const { second, back } = await restartAndResume(first, watcher.hello);
    const lists = await pollUntil('a resync', async () => back.notifies().find((f) => f.resync !== undefined)?.resync);
    expect(lists.find((l) => l.path === '/users/alice/list')?.items.map((i) => i.data)).toEqual(['a', 'b']);
    // Resending what a watcher missed is not a use: the unit stays frozen.
    expect(await metric(second, 'vera_hibernate_thaws_total')).toBe(0);
    await back.close();
  });

  it('a prefix watch above a unit: the resync after a restart carries the frozen unit\'s lists, with what was pushed while the watcher was away', async () => {
    const { first, watcher, writer } = await watcherAndWriter();
    await writer.push('/rs', 'root', { persistent: true, watch: false });
    await watcher.client.call('watch', { path: '/rs', prefix: true });
    await untilCommandVersion(() => new HibernateClient(writer).units());
    await watcher.client.close();
    // While the watcher is away: bob gets a push and is frozen, carol gets a push.
    await writer.push('/rs/bob', 'b1', { persistent: true, watch: false });
    await writer.push('/rs/bob/inbox', 'm1', { persistent: true, watch: false });
    expect(await new HibernateClient(writer).freeze('/rs/bob')).toMatchObject({ frozen: true });
    await writer.push('/rs/carol', 'c1', { persistent: true, watch: false });
    await writer.close();
    // A restart forgets the event log: the resume is answered with a resync.
    const { second, back } = await restartAndResume(first, watcher.hello);
    const lists = await pollUntil('the last resync frame', async () => {
      const frames = back.notifies().filter((f) => f.resync !== undefined);
      return frames.some((f) => (f as { more?: true }).more !== true) ? frames.flatMap((f) => f.resync!) : undefined;
    });
    expect(lists.map((l) => [l.path, l.items.map((i) => i.data)])).toEqual([
      ['/rs', ['root']],
      ['/rs/bob', ['b1']],
      ['/rs/bob/inbox', ['m1']],
      ['/rs/carol', ['c1']],
    ]);
    expect(await metric(second, 'vera_hibernate_units_frozen')).toBe(1);
    await back.close();
  });

  it('the leader freezes units idle past --hibernate-after, not ones in use or holding ephemeral items', async () => {
    const { client, hib } = await start(['--hibernate-roots', '/users,/teams', '--hibernate-after', '1s']);
    await client.push('/users/idle/data', 'cold soon', { persistent: true, watch: false });
    await client.push('/teams/idle', 'cold too', { persistent: true, watch: false });
    await client.push('/users/busy', 'in use', { persistent: true, watch: false });
    await client.push('/users/online/presence', 'here'); // ephemeral: its session is alive
    await client.push('/elsewhere/idle', 'no root', { persistent: true, watch: false });
    // Keep /users/busy in use while the detector runs (pacing, not synchronisation: the poll below decides).
    let using = true;
    const user = (async () => {
      while (using) {
        await client.get('/users/busy');
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    // Frozen ones only: the detector also tries /users/online (idle, but a live session's), whose
    // freeze shows as 'freezing' until its second entry refuses it.
    const frozenNow = async (): Promise<string[]> => (await hib.units()).filter((u) => u.state === 'frozen').map((u) => u.unit);
    const frozen = await pollUntil('the idle units to freeze', async () => {
      const units = await frozenNow();
      return units.includes('/users/idle') && units.includes('/teams/idle') ? units : undefined;
    }, 15_000, 100);
    using = false;
    await user;
    expect(frozen.sort()).toEqual(['/teams/idle', '/users/idle']);
    // What it froze comes back on use.
    expect((await client.get('/users/idle/data')).items.map((i) => i.data)).toEqual(['cold soon']);
    expect(await frozenNow()).toEqual(['/teams/idle']);
  });

  it('has a CLI: vera hibernate PATH, vera hibernate ls, vera thaw PATH', async () => {
    const { vp, client } = await start();
    await client.push('/users/erin', 'e', { persistent: true, watch: false });
    const run = async (...argv: string[]): Promise<{ code: number; out: string }> => {
      const io = captureIO();
      const code = await main([...argv, '--server', vp.url], io);
      return { code, out: io.out() };
    };
    expect(await run('hibernate', '/users/erin')).toMatchObject({ code: 0, out: expect.stringContaining('/users/erin: frozen, 1 items') });
    const listed = await run('hibernate', 'ls', '--json');
    expect(JSON.parse(listed.out)).toMatchObject({ units: [{ unit: '/users/erin', items: 1 }] });
    expect(await run('thaw', '/users/erin')).toMatchObject({ code: 0, out: expect.stringContaining('/users/erin: thawed, 1 items') });
    expect(await run('hibernate', 'ls')).toMatchObject({ code: 0, out: expect.stringContaining('no Frozen or Freezing units') });
    // A unit that does not exist is not frozen, and says so with its exit code.
    expect(await run('hibernate', '/users/nobody')).toMatchObject({ code: 1, out: expect.stringContaining('/users/nobody: not frozen (empty)') });
    // Thawing a list inside a Frozen unit thaws that unit.
    await client.push('/users/erin/bookmarks', 'b', { persistent: true, watch: false });
    expect(await run('hibernate', '/users/erin')).toMatchObject({ code: 0, out: expect.stringContaining('/users/erin: frozen, 2 items') });
    expect(await run('thaw', '/users/erin/bookmarks')).toMatchObject({ code: 0, out: expect.stringContaining('/users/erin/bookmarks: unit /users/erin: thawed, 2 items') });
  });
});
