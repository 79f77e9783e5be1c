// An operator places a user on a named node (Tokenserver's allocate_user.py EMAIL
// NODE), as one entry on a real state machine: created there, moved there with its
// values, or left where it is; load equals current records after each step.
import { afterEach, describe, expect, it } from 'vitest';
import type { AssignValue } from '../../../src/families/assign/apply.js';
import { AssignHarness, SERVICE } from './harness.js';

let h: AssignHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

type Placed = Extract<AssignValue, { op: 'place' }>;

async function place(email: string, node: string): Promise<Placed> {
  const v = await h!.ok({ op: 'place', service: SERVICE, email, node });
  if (v.op !== 'place') throw new Error(`place gave ${v.op}`);
  await h!.checkInvariants();
  return v;
}

describe('placing a user on a named node', () => {
  it('creates an unknown user there, moves a known one with its values, and leaves one already there', async () => {
    h = await AssignHarness.open();
    await h.service();
    await h.addNode('https://a', 10);
    await h.addNode('https://b', 10);
    // Unknown: its first record on b, although a would rank first (both empty, a sorts first).
    const created = await place('new@example.com', 'https://b');
    expect(created).toMatchObject({ created: true, moved: true, user: { node: 'https://b', generation: 0, clientState: '' } });
    expect(h.node('https://b')).toMatchObject({ load: 1, available: 9 });
    // Known, on a: moved to b with generation, keys-changed-at and client state kept.
    const first = await h.login('u@example.com', { generation: 5, keysChangedAt: 4, clientState: 'aa' });
    expect(first.user.node).toBe('https://a');
    const moved = await place('u@example.com', 'https://b');
    expect(moved).toMatchObject({ created: false, moved: true, user: { node: 'https://b', generation: 5, keysChangedAt: 4, clientState: 'aa', oldClientStates: [], firstSeenAt: first.user.firstSeenAt } });
    expect(moved.user.uid).toBeGreaterThan(first.user.uid);
    expect(h.node('https://a')).toMatchObject({ load: 0 });
    expect(h.node('https://b')).toMatchObject({ load: 2, available: 8 });
    // Already there: nothing changes, not even the counters.
    const again = await place('u@example.com', 'https://b');
    expect(again).toMatchObject({ moved: false, user: { uid: moved.user.uid } });
    expect(h.node('https://b')).toMatchObject({ load: 2, available: 8 });
    // The user's next request is answered from b, the check still made against its values.
    expect((await h.login('u@example.com', { generation: 5, keysChangedAt: 4, clientState: 'aa' })).user).toMatchObject({ uid: moved.user.uid, node: 'https://b' });
    expect((await h.refused('u@example.com', { generation: 4, keysChangedAt: 4, clientState: 'aa' })).refused).toBe('invalid-generation');
  });

  it('moves a decommissioned user too, and refuses an unknown node, a retired user and a full record history, changing nothing', async () => {
    h = await AssignHarness.open();
    await h.service();
    await h.addNode('https://a', 10);
    await h.addNode('https://b', 10);
    const u = await h.login('d@example.com', { generation: 3, keysChangedAt: 3, clientState: 'bb' });
    await h.ok({ op: 'decommission', service: SERVICE, node: 'https://a', max: 1000 });
    expect(await place('d@example.com', 'https://b')).toMatchObject({ moved: true, user: { node: 'https://b', generation: 3 } });
    expect((await h.run({ op: 'place', service: SERVICE, email: 'd@example.com', node: 'https://nowhere' })) as object).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    await h.ok({ op: 'retire', email: 'd@example.com' });
    const before = await h.users();
    expect((await h.run({ op: 'place', service: SERVICE, email: 'd@example.com', node: 'https://a' })) as object).toMatchObject({ ok: false, code: 'CONFLICT' });
    expect(await h.users()).toEqual(before);
    expect(u.user.uid).toBeGreaterThan(0);
    // A user with 100 records is refused until purge (the records-per-user bound).
    await h.login('many@example.com', { generation: 1, keysChangedAt: 1, clientState: 's1' });
    for (let i = 2; i <= 100; i++) await h.login('many@example.com', { generation: i, keysChangedAt: i, clientState: `s${i}` });
    expect((await h.run({ op: 'place', service: SERVICE, email: 'many@example.com', node: 'https://b' })) as object).toMatchObject({ ok: false, code: 'QUOTA_EXCEEDED' });
    await h.checkInvariants();
  });

});
