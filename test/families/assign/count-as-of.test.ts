// count as of a time, and where it parts from Tokenserver's count_users (records
// current now and created by then): a user retired, decommissioned or re-keyed
// since that time is still counted at it here, and not upstream.
import { afterEach, describe, expect, it } from 'vitest';
import { countUsers } from '../../../src/families/assign/reads.js';
import { AssignHarness, SERVICE } from './harness.js';

let h: AssignHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

/** Upstream's query restated: records not replaced (now) and created by `at`. */
async function upstreamCount(at: number): Promise<number> {
  return (await h!.users()).filter((u) => u.service === SERVICE && u.replacedAt === 0 && u.createdAt <= at).length;
}

const count = (at: number): Promise<number> => h!.sm.read('count', (db, snapshot) => countUsers(db, snapshot, SERVICE, at));

describe('count as of a time', () => {
  it('counts the users assigned then, where upstream counts records current now and created by then', async () => {
    h = await AssignHarness.open();
    await h.service();
    await h.addNode('https://a', 10);
    for (const e of ['r@x', 'k@x', 's@x']) await h.login(e, { generation: 1, keysChangedAt: 1, clientState: 'aa' });
    const then = h.now;
    h.now += 1000;
    await h.ok({ op: 'retire', email: 'r@x' });
    await h.login('k@x', { generation: 2, keysChangedAt: 2, clientState: 'bb' });
    expect(await count(then)).toBe(3);
    expect(await upstreamCount(then)).toBe(1); // only s@x: r@x retired since, k@x re-keyed since
    expect(await count(h.now)).toBe(2);
    expect(await upstreamCount(h.now)).toBe(2);
  });
});
