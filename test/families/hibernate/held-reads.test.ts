// Reads of Frozen units at one db snapshot (src/families/hibernate/held-reads.ts):
// the lists below a prefix from the units' records, in path order whatever their
// units' names (`/u/a` holds `/u/a/x`, which sorts after `/u/a-b`), from any
// `after`; and a list's entries from its cold file, each file decoded once for a
// run of reads of one unit, and a file of another freeze refused.
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ColdStore } from '../../../src/families/hibernate/cold-store.js';
import { frozenEntriesAt, frozenListsAt, RecentColdRead } from '../../../src/families/hibernate/held-reads.js';
import { unitKey } from '../../../src/families/hibernate/keys.js';
import { encodeFrozen, type FrozenList } from '../../../src/families/hibernate/records.js';
import { compareUtf8 } from '../../../src/keys/index.js';
import { itemKey } from '../../../src/families/lists/keys.js';
import { openTempDb, type TempDb } from '../../statemachine/helpers.js';

let temp: TempDb | null = null;
afterEach(async () => {
  await temp?.cleanup();
  temp = null;
});

const UNITS: Record<string, readonly string[]> = {
  '/u/a': ['/u/a', '/u/a/x', '/u/a/x/y'],
  '/u/a-b': ['/u/a-b'],
  '/u/a.c': ['/u/a.c/z'],
  '/u/b': ['/u/b/q'],
  '/v/c': ['/v/c'],
};

async function frozenDb(): Promise<{ temp: TempDb; cold: ColdStore }> {
  temp = await openTempDb();
  const cold = await ColdStore.open(join(temp.dir, 'cold'));
  for (const [unit, paths] of Object.entries(UNITS)) {
    const lists: FrozenList[] = paths.map((path, n) => ({ path, newest: 10 + n, items: 1 }));
    const entries = paths.map((path, n) => [itemKey(path, 10 + n), Buffer.from(`value of ${path}`)] as const);
    const bytes = await cold.write({ unit, meta: { frozenAt: 7 }, entries });
    await temp.db.put(unitKey(unit), encodeFrozen({ frozenAt: 7, lists, bytes }));
  }
  return { temp, cold };
}

async function listed(db: TempDb['db'], prefix: string, after?: string): Promise<string[]> {
  const snapshot = db.snapshot();
  try {
    const out: string[] = [];
    for await (const l of frozenListsAt(db, snapshot, prefix, after)) out.push(l.path);
    return out;
  } finally {
    await snapshot.close();
  }
}

describe('reads of Frozen units at a snapshot', () => {
  it('lists the Frozen lists at or below a prefix, in path order, from any after', async () => {
    const { temp } = await frozenDb();
    const all = Object.values(UNITS).flat().sort(compareUtf8);
    expect(await listed(temp.db, '/')).toEqual(all);
    expect(await listed(temp.db, '/u')).toEqual(all.filter((p) => p.startsWith('/u/')));
    expect(await listed(temp.db, '/u/a')).toEqual(['/u/a', '/u/a/x', '/u/a/x/y']);
    // A prefix inside a unit lists that unit's lists below it.
    expect(await listed(temp.db, '/u/a/x')).toEqual(['/u/a/x', '/u/a/x/y']);
    for (const after of all) expect(await listed(temp.db, '/', after), `after ${after}`).toEqual(all.filter((p) => compareUtf8(p, after) > 0));
    expect(await listed(temp.db, '/u/a', '/u/a')).toEqual(['/u/a/x', '/u/a/x/y']);
    expect(await listed(temp.db, '/w')).toEqual([]);
  });

  it('reads a Frozen list from its cold file, decoding a unit\'s file once for a run of reads', async () => {
    const { temp, cold } = await frozenDb();
    const read = vi.spyOn(cold, 'read');
    const recent = new RecentColdRead();
    const snapshot = temp.db.snapshot();
    try {
      const at = (path: string) => frozenEntriesAt(cold, temp.db, snapshot, path, recent);
      expect((await at('/u/a/x'))!.map(([k, v]) => [k, v.toString()])).toEqual([[itemKey('/u/a/x', 11), 'value of /u/a/x']]);
      expect((await at('/u/a'))!).toHaveLength(1);
      expect(await at('/u/a/nothing')).toEqual([]);
      expect(read).toHaveBeenCalledTimes(1);
      expect(await at('/elsewhere')).toBeNull();
      // A file of another freeze of the unit (a thaw and a freeze since the snapshot): asked again, never served.
      await cold.write({ unit: '/u/b', meta: { frozenAt: 99 }, entries: [] });
      await expect(at('/u/b/q')).rejects.toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/ask again$/) });
    } finally {
      await snapshot.close();
    }
  });
});
