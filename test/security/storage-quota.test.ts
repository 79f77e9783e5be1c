// Per-user storage quotas on a real process (issue 31, item 7): user A fills
// its quota and is refused with a message naming it, the limit and how to raise
// it, while user B still writes; deleting gives A room back; an administrator's
// setting raises A's limit; the counts survive a restart. Journal jobs count
// the same way.
import { describe, expect, it } from 'vitest';
import { untilCommandVersion, startLeader } from '../server/fixture.js';
import { WireClient } from '../server/wire-client.js';
import type { VeraProcess } from '../support/vera-process.js';
import { endEachTest, securedServer } from './secured.js';

let vp: VeraProcess | null = null;
const wires: WireClient[] = [];
endEachTest(wires, () => vp, () => (vp = null));

async function as(p: VeraProcess, user: string): Promise<WireClient> {
  const w = await WireClient.connect(p.url, 'json');
  wires.push(w);
  await w.hello({ timeoutMs: 30_000, user, password: `${user}-pw` });
  return w;
}

const push = (w: WireClient, path: string, data: unknown = 'x'): Promise<{ ok?: boolean; result?: { item: { index: number } }; error?: { code: string; message: string } }> =>
  w.request('push', { path, data, persistent: true, watch: false }) as never;

describe('per-user storage quotas', () => {
  it('refuses the user past its quota while others write, gives the room back on delete, and holds it across a restart', async () => {
    vp = await securedServer({ args: ['--items-per-user', '5'] });
    const root = await as(vp, 'root');
    await root.call('auth.userGrant', { name: 'bob', role: 'reader' });
    // Quotas ride on command version 9, which a new cluster reaches moments after electing itself.
    await untilCommandVersion(() => root.call('auth.userQuota', { name: 'alice', items: null }));
    const alice = await as(vp, 'alice');
    const bob = await as(vp, 'bob');

    const indexes: number[] = [];
    for (let i = 0; i < 5; i++) indexes.push(((await alice.call('push', { path: '/pub/a', data: i, persistent: true, watch: false })) as { item: { index: number } }).item.index);
    const over = await push(alice, '/pub/a');
    expect(over.error).toMatchObject({ code: 'QUOTA_EXCEEDED', message: expect.stringMatching(/user alice stores 5 items and may store at most 5 .*vera user quota alice --items N/) });
    expect(((await alice.call('get', { path: '/pub/a' })) as { items: unknown[] }).items).toHaveLength(5);
    // Bob is not held back by what alice stores.
    for (let i = 0; i < 3; i++) expect((await push(bob, '/pub/b')).error).toBeUndefined();

    // A delete gives the room back.
    await alice.call('delete', { path: '/pub/a', index: indexes[0] });
    expect((await push(alice, '/pub/a')).error).toBeUndefined();
    expect((await push(alice, '/pub/a')).error?.code).toBe('QUOTA_EXCEEDED');

    // An administrator raises alice's quota; auth.users shows what each stores.
    await root.call('auth.userQuota', { name: 'alice', items: 6 });
    expect((await push(alice, '/pub/a')).error).toBeUndefined();
    const users = (await root.call('auth.users', {})) as { users: Array<{ name: string; stored: { items: number }; quota?: { items: number | null } }> };
    expect(users.users.find((u) => u.name === 'alice')).toMatchObject({ stored: { items: 6 }, quota: { items: 6, bytes: null } });
    expect(users.users.find((u) => u.name === 'bob')).toMatchObject({ stored: { items: 3 } });

    // After a restart the counts are as they were: alice is still full.
    for (const w of wires.splice(0)) w.terminate();
    const dataDir = vp.dataDir;
    await vp.stop();
    vp = await startLeader({ dataDir, args: ['--items-per-user', '5'] });
    const again = await as(vp, 'alice');
    expect((await push(again, '/pub/a')).error?.code).toBe('QUOTA_EXCEEDED');
    expect((await push(await as(vp, 'bob'), '/pub/b')).error).toBeUndefined();
  });

  it('counts journal jobs: a user that fills its quota with jobs is refused whole while another adds, and a done frees room', async () => {
    vp = await securedServer({ args: ['--items-per-user', '5'] });
    const root = await as(vp, 'root');
    await root.call('auth.userGrant', { name: 'bob', role: 'reader' });
    await root.call('auth.roleGrant', { name: 'reader', prefix: 'journal:jobs', perms: ['read', 'write'] });
    await untilCommandVersion(() => root.call('auth.userQuota', { name: 'alice', items: null }));
    await root.call('journal.create', { name: 'jobs' });
    const alice = await as(vp, 'alice');
    const bob = await as(vp, 'bob');
    const add = (w: WireClient, keys: string[]): Promise<{ error?: { code: string; message: string } }> =>
      w.request('journal.add', { name: 'jobs', items: keys.map((key) => ({ key, data: key })) }) as never;
    const counts = async (): Promise<{ waiting: number; processing: number }> => ((await root.call('journal.show', { name: 'jobs' })) as { counts: { waiting: number; processing: number } }).counts;

    expect((await add(alice, ['a1', 'a2', 'a3'])).error).toBeUndefined();
    expect((await add(alice, ['a4', 'a5'])).error).toBeUndefined();
    // Two more would pass five: the add is refused whole, naming alice, her limit and how to raise it.
    const over = await add(alice, ['a6', 'a7']);
    expect(over.error).toMatchObject({ code: 'QUOTA_EXCEEDED', message: expect.stringMatching(/user alice stores 5 items and may store at most 5 .*vera user quota alice --items N/) });
    expect(await counts()).toMatchObject({ waiting: 5 });
    // Bob is not held back by alice's jobs.
    expect((await add(bob, ['b1', 'b2', 'b3'])).error).toBeUndefined();
    expect(await counts()).toMatchObject({ waiting: 8 });

    // A job done gives alice room for one more.
    const claim = (await alice.call('journal.claim', { name: 'jobs', max: 1 })) as { lease: number; items: Array<{ key: string }> };
    expect(claim.items.map((i) => i.key)).toEqual(['a1']);
    expect((await add(alice, ['a6'])).error?.code).toBe('QUOTA_EXCEEDED');
    await alice.call('journal.done', { name: 'jobs', key: 'a1', lease: claim.lease });
    expect((await add(alice, ['a6'])).error).toBeUndefined();
    expect((await add(alice, ['a7'])).error?.code).toBe('QUOTA_EXCEEDED');
    const users = (await root.call('auth.users', {})) as { users: Array<{ name: string; stored: { items: number } }> };
    expect(users.users.find((u) => u.name === 'alice')).toMatchObject({ stored: { items: 5 } });
    expect(users.users.find((u) => u.name === 'bob')).toMatchObject({ stored: { items: 3 } });
  });
});
