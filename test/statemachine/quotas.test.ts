// Quotas carried in commands and judged in apply: every member reaches the same
// verdict (whether it counted usage before or opens the store fresh), a refused
// command changes nothing, and deleting or closing gives the room back.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { recordBatches } from '../support/batches.js';
import { itemKey, itemRange } from '../../src/families/lists/keys.js';
import type { Command, PushQuota } from '../../src/families/core-commands.js';
import { StateMachine } from '../../src/statemachine/state-machine.js';
import type { ApplyOutcome } from '../../src/statemachine/types.js';
import { EntryFeed, openTempDb, type TempDb } from './helpers.js';
import { liveSessions } from '../../src/families/sessions/queries.js';
import { watchesOf } from '../../src/families/watches/queries.js';
import { REGISTRY } from '../../src/families/registry.js';

let tmp: TempDb;
let sm: StateMachine;
let feed: EntryFeed;

beforeEach(async () => {
  tmp = await openTempDb();
  sm = await StateMachine.open(tmp.db, REGISTRY);
  feed = new EntryFeed();
});
afterEach(async () => {
  await tmp.cleanup();
});

const LOOSE: PushQuota = { watches: 1000, items: 1000, bytes: 1 << 30, listItems: 1000 };
const run = (c: Command): Promise<ApplyOutcome> => sm.apply(feed.command(c));
const open = (session: string, remote = `10.0.0.1:${session.length}`, perAddress = 1000): Promise<ApplyOutcome> =>
  run({ op: 'openSession', session, timeoutMs: 5000, remote, quota: { sessionsPerAddress: perAddress } });
const push = (session: string, path: string, quota: Partial<PushQuota>, extra: { persistent?: boolean; watch?: boolean; data?: unknown } = {}): Promise<ApplyOutcome> =>
  run({ op: 'push', session, path, data: extra.data ?? 'x', persistent: extra.persistent ?? false, watch: extra.watch ?? false, quota: { ...LOOSE, ...quota } });
const watch = (session: string, path: string, watches: number): Promise<ApplyOutcome> => run({ op: 'watch', session, path, prefix: false, quota: { watches } });

async function listLength(path: string): Promise<number> {
  let n = 0;
  for await (const _ of tmp.db.keys(itemRange(path))) n++;
  return n;
}

function refused(outcome: ApplyOutcome, pattern: RegExp): void {
  expect(outcome.result.ok).toBe(false);
  if (outcome.result.ok) return;
  expect(outcome.result.code).toBe('QUOTA_EXCEEDED');
  expect(outcome.result.message).toMatch(pattern);
}

/** Restarts the state machine on the same store: every lazily kept count starts over. */
async function restart(): Promise<void> {
  sm = await StateMachine.open(await tmp.reopen(), REGISTRY);
}

describe('quotas judged in apply', () => {
  it('watches per session: the one past the limit is refused, re-watching is free, and a push that would watch is refused whole', async () => {
    await open('S');
    for (const p of ['/a', '/b', '/c']) expect((await watch('S', p, 3)).result.ok).toBe(true);
    refused(await watch('S', '/d', 3), /holds 3 watches.*--watches-per-session 3/);
    expect((await watch('S', '/a', 3)).result.ok).toBe(true);
    refused(await push('S', '/e', { watches: 3 }, { watch: true }), /holds 3 watches/);
    expect(await listLength('/e')).toBe(0);
    expect((await push('S', '/e', { watches: 3 }, { watch: false })).result.ok).toBe(true);
    expect(watchesOf(sm, 'S')).toHaveLength(3);
    await run({ op: 'unwatch', session: 'S', path: '/b', prefix: false });
    expect((await watch('S', '/d', 3)).result.ok).toBe(true);
  });

  it('sessions per client address, counted by host without the port, and given back when a session closes or after a restart', async () => {
    expect((await open('A', '10.0.0.1:1000', 2)).result.ok).toBe(true);
    expect((await open('B', '10.0.0.1:1001', 2)).result.ok).toBe(true);
    refused(await open('C', '10.0.0.1:1002', 2), /10\.0\.0\.1 already has 2 sessions.*--sessions-per-address 2/);
    expect(liveSessions(sm).has('C')).toBe(false);
    expect((await open('D', '[::1]:1002', 2)).result.ok).toBe(true);
    expect((await open('E', '10.0.0.2:1002', 2)).result.ok).toBe(true);
    await restart();
    refused(await open('C', '10.0.0.1:1003', 2), /already has 2 sessions/);
    await run({ op: 'closeSession', session: 'A', reason: 'bye' });
    expect((await open('C', '10.0.0.1:1003', 2)).result.ok).toBe(true);
  });

  it('ephemeral items and bytes per session: persistent items do not count, deletes and a restart keep the count exact', async () => {
    await open('S');
    for (let i = 0; i < 3; i++) expect((await push('S', `/l${i}`, { items: 3 })).result.ok).toBe(true);
    refused(await push('S', '/l9', { items: 3 }), /owns 3 ephemeral items.*--items-per-session 3/);
    expect((await push('S', '/l9', { items: 3 }, { persistent: true })).result.ok).toBe(true);
    const first = (await tmp.db.get(itemKey('/l0', 2)))!;
    await restart();
    refused(await push('S', '/l9', { items: 3 }), /owns 3 ephemeral items/);
    expect((await run({ op: 'delete', session: 'S', path: '/l0', index: 2 })).result.ok).toBe(true);
    expect((await push('S', '/l9', { items: 3 })).result.ok).toBe(true);

    // Bytes: the session owns three stored values of `first.byteLength` each (same owner, same data).
    const owned = 3 * first.byteLength;
    refused(await push('S', '/more', { items: 100, bytes: owned + first.byteLength - 1 }), new RegExp(`hold ${owned} bytes; ${first.byteLength} more.*--bytes-per-session`));
    expect((await push('S', '/more', { items: 100, bytes: owned + first.byteLength })).result.ok).toBe(true);
  });

  it('items per list: a full list refuses pushes from anyone until an item goes, and closing a session frees its items there', async () => {
    await open('A');
    await open('B');
    expect((await push('A', '/q', { listItems: 3 })).result.ok).toBe(true);
    expect((await push('A', '/q', { listItems: 3 })).result.ok).toBe(true);
    expect((await push('B', '/q', { listItems: 3 }, { persistent: true })).result.ok).toBe(true);
    refused(await push('B', '/q', { listItems: 3 }), /\/q holds 3 items.*--items-per-list/);
    await restart();
    refused(await push('B', '/q', { listItems: 3 }), /\/q holds 3 items/);
    await run({ op: 'closeSession', session: 'A', reason: 'expired' });
    expect(await listLength('/q')).toBe(1);
    expect((await push('B', '/q', { listItems: 3 })).result.ok).toBe(true);
    expect((await push('B', '/q', { listItems: 3 })).result.ok).toBe(true);
    refused(await push('B', '/q', { listItems: 3 }), /holds 3 items/);
  });

  it('applies entries without a quota (written before quotas existed) as before', async () => {
    await run({ op: 'openSession', session: 'S', timeoutMs: 5000, remote: '10.0.0.1:1' });
    for (let i = 0; i < 5; i++) {
      expect((await run({ op: 'watch', session: 'S', path: `/w${i}`, prefix: false })).result.ok).toBe(true);
      expect((await run({ op: 'push', session: 'S', path: '/p', data: i, persistent: false, watch: true })).result.ok).toBe(true);
    }
    expect(await listLength('/p')).toBe(5);
  });
});

describe('quotas and batched apply', () => {
  it('judges a push the same whether its entries are applied one by one or in one batch with unwritten entries before it', async () => {
    const other = await openTempDb();
    try {
      const entries = new EntryFeed();
      const commands: Command[] = [
        { op: 'openSession', session: 'S', timeoutMs: 5000, remote: '10.0.0.1:1' },
        // Written before quotas existed: no quota, so nothing counts the list when they are planned.
        { op: 'push', session: 'S', path: '/q', data: 1, persistent: true, watch: false },
        { op: 'push', session: 'S', path: '/q', data: 2, persistent: true, watch: false },
        ...[3, 4, 5].map((data): Command => ({ op: 'push', session: 'S', path: '/q', data, persistent: true, watch: false, quota: { ...LOOSE, listItems: 3 } })),
      ];
      const batch = commands.map((c) => entries.command(c));
      const oneByOne = await StateMachine.open(other.db, REGISTRY);
      const single = [];
      for (const e of batch) single.push((await oneByOne.apply(e)).result.ok);
      const together = (await sm.applyMany(batch)).map((o) => o.result.ok);
      expect(single).toEqual([true, true, true, true, false, false]);
      expect(together).toEqual(single);
      expect(await sm.digest()).toBe(await oneByOne.digest());
    } finally {
      await other.cleanup();
    }
  });
});

describe('usage counts kept in memory (issue 32)', () => {
  /** Counts the store's reads from now on: iterators (keys, values, entries) and point reads. */
  function countReads(): { readonly n: () => number } {
    const spies = [vi.spyOn(tmp.db, 'keys'), vi.spyOn(tmp.db, 'iterator'), vi.spyOn(tmp.db, 'values'), vi.spyOn(tmp.db, 'get'), vi.spyOn(tmp.db, 'getMany')];
    return { n: () => spies.reduce((sum, s) => sum + s.mock.calls.length, 0) };
  }

  it('pushes to new lists, judged against every quota, read nothing and share one batch', async () => {
    const entries = [feed.command({ op: 'openSession', session: 'S', timeoutMs: 5000, remote: '10.0.0.1:1' })];
    for (let i = 0; i < 50; i++) {
      entries.push(feed.command({ op: 'push', session: 'S', path: `/new/k${i}`, data: i, persistent: i % 2 === 0, watch: false, quota: { ...LOOSE, listItems: 1 } }));
    }
    const reads = countReads();
    const batches = recordBatches(tmp.db);
    const outcomes = await sm.applyMany(entries);
    expect(outcomes.every((o) => o.result.ok)).toBe(true);
    expect(reads.n()).toBe(0);
    expect(batches).toHaveLength(1);
    expect(await listLength('/new/k49')).toBe(1);
  });

  it('after a restart the counts are back from the store: a full list, a session at its limit and a kv length compare are judged without reading it', async () => {
    await open('A');
    for (let i = 0; i < 3; i++) expect((await push('A', '/full', { listItems: 3 })).result.ok).toBe(true);
    expect((await push('A', '/other', {}, { data: 'x'.repeat(100) })).result.ok).toBe(true);
    await restart();
    const reads = countReads();
    refused(await push('A', '/full', { listItems: 3 }, { persistent: true }), /\/full holds 3 items/);
    refused(await push('A', '/third', { items: 4 }), /owns 4 ephemeral items/);
    expect((await push('A', '/third', { items: 5 })).result.ok).toBe(true);
    const txn = await run({ family: 'kv', op: 'txn', session: 'A', compare: [{ path: '/full', target: 'length', cmp: '=', value: 3 }], success: [], failure: [], quota: LOOSE } as unknown as Command);
    expect(txn.result).toMatchObject({ ok: true, value: { succeeded: true } });
    expect(reads.n()).toBe(0);
  });
});
