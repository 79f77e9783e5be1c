// The behaviour every LogStorage must show, as one vitest suite that each
// implementation runs (test/raft/storage.test.ts). Keeping the two storages on
// one contract is what lets the simulator stand in for LevelDB.

import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type LogStorage, StorageError } from '../../src/raft/storage.js';
import type { ClusterConfig, Entry, EntryKind, HardState } from '../../src/raft/types.js';

export interface StorageHarness {
  /** The storage as first opened. */
  readonly storage: LogStorage;
  /** Closes the current storage and opens the same backing store again, as a restarted process would. */
  reopen(): Promise<LogStorage>;
  /** Makes the next write fail as an I/O error would. */
  failNextWrite(): void;
  dispose(): Promise<void>;
}

export type MakeStorage = (initialConfig: ClusterConfig) => Promise<StorageHarness>;

export const CONFIG: ClusterConfig = { voters: ['n1', 'n2', 'n3'], learners: ['n4'] };

export function entry(index: number, term: number, kind: EntryKind = 'command', text = `i${index}t${term}`): Entry {
  return { index, term, kind, data: new TextEncoder().encode(text) };
}

/** Entries [from, to] all in one term. */
export function run(from: number, to: number, term: number): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) out.push(entry(i, term));
  return out;
}

export function hard(term: number, vote: string | null, commit: number): HardState {
  return { term, vote, commit };
}

async function expectStorageError(promise: Promise<unknown>, code: StorageError['code']): Promise<void> {
  const error: unknown = await promise.then(
    () => new Error('expected the call to fail'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StorageError);
  expect((error as StorageError).code).toBe(code);
}

export function runLogStorageContract(name: string, makeStorage: MakeStorage): void {
  describe(`LogStorage contract: ${name}`, () => {
    let harness: StorageHarness;
    let storage: LogStorage;

    beforeEach(async () => {
      harness = await makeStorage(CONFIG);
      storage = harness.storage;
    });
    afterEach(async () => {
      await harness.dispose();
    });

    async function reopen(): Promise<void> {
      storage = await harness.reopen();
    }

    it('loads a fresh log as empty, starting from the initial config', async () => {
      const loaded = await storage.load();
      expect(loaded).toEqual({ hardState: hard(0, null, 0), snapshot: { index: 0, term: 0, config: CONFIG }, entries: [] });
      await reopen();
      expect((await storage.load()).snapshot.config).toEqual(CONFIG);
    });

    it('appends entries across batches and reads them back after a restart', async () => {
      const first = [entry(1, 1, 'noop', ''), entry(2, 1, 'config', 'cfg'), entry(3, 1)];
      const second = [entry(4, 2, 'command', 'x'.repeat(10_000))];
      await storage.persist(null, first);
      await storage.persist(null, second);
      expect((await storage.load()).entries).toEqual([...first, ...second]);
      await reopen();
      expect((await storage.load()).entries).toEqual([...first, ...second]);
    });

    it('really removes a conflicting suffix when overwriting', async () => {
      await storage.persist(null, run(1, 5, 1));
      await storage.persist(null, run(3, 4, 2));
      const expected = [...run(1, 2, 1), ...run(3, 4, 2)];
      expect((await storage.load()).entries).toEqual(expected);
      await reopen();
      expect((await storage.load()).entries).toEqual(expected);
      // The log now ends at 4: index 6 would leave a gap, index 5 is the next one.
      await expectStorageError(storage.persist(null, [entry(6, 3)]), 'invalidArgument');
      await storage.persist(null, [entry(5, 3)]);
      expect((await storage.load()).entries.map((e) => [e.index, e.term])).toEqual([
        [1, 1],
        [2, 1],
        [3, 2],
        [4, 2],
        [5, 3],
      ]);
    });

    it('overwrites from the first index with a longer suffix', async () => {
      await storage.persist(null, run(1, 3, 1));
      await storage.persist(null, run(1, 6, 2));
      await reopen();
      expect((await storage.load()).entries).toEqual(run(1, 6, 2));
    });

    it('round-trips the hard state; null leaves it unchanged', async () => {
      await storage.persist(hard(3, 'n2', 0), []);
      expect((await storage.load()).hardState).toEqual(hard(3, 'n2', 0));
      await storage.persist(null, run(1, 2, 3));
      await storage.persist(hard(4, null, 2), []);
      await reopen();
      const loaded = await storage.load();
      expect(loaded.hardState).toEqual(hard(4, null, 2));
      expect(loaded.entries).toEqual(run(1, 2, 3));
    });

    it('writes hard state and entries of one call together', async () => {
      await storage.persist(hard(1, 'n1', 1), run(1, 2, 1));
      await reopen();
      expect(await storage.load()).toMatchObject({ hardState: hard(1, 'n1', 1), entries: run(1, 2, 1) });
    });

    it('rejects a gap after the last stored entry and changes nothing', async () => {
      await storage.persist(hard(1, 'n1', 0), run(1, 2, 1));
      await expectStorageError(storage.persist(hard(2, 'n2', 0), [entry(4, 2)]), 'invalidArgument');
      await reopen();
      expect(await storage.load()).toMatchObject({ hardState: hard(1, 'n1', 0), entries: run(1, 2, 1) });
    });

    it('rejects entries that are not contiguous within a call and changes nothing', async () => {
      await storage.persist(null, run(1, 2, 1));
      await expectStorageError(storage.persist(hard(2, 'n2', 0), [entry(3, 2), entry(5, 2)]), 'invalidArgument');
      await expectStorageError(storage.persist(null, [entry(3, 2), entry(3, 2)]), 'invalidArgument');
      expect(await storage.load()).toMatchObject({ hardState: hard(0, null, 0), entries: run(1, 2, 1) });
    });

    it('rejects malformed entries and hard states with clear errors', async () => {
      await storage.persist(null, run(1, 1, 1));
      const bad: [string, HardState | null, Entry[]][] = [
        ['term 0 entry', null, [entry(2, 0)]],
        ['decreasing terms', null, [entry(2, 3), entry(3, 2)]],
        ['index 0', null, [entry(0, 1)]],
        ['unknown kind', null, [{ ...entry(2, 1), kind: 'bogus' as EntryKind }]],
        ['data not bytes', null, [{ ...entry(2, 1), data: 'text' as unknown as Uint8Array }]],
        ['negative term', hard(-1, null, 0), []],
        ['fractional commit', hard(1, null, 0.5), []],
        ['empty vote', hard(1, '', 0), []],
        ['commit beyond the log', hard(1, 'n1', 2), []],
        ['commit beyond the log after this write', hard(1, 'n1', 3), [entry(2, 1)]],
      ];
      for (const [label, hardState, entries] of bad) {
        const error = await storage.persist(hardState, entries).then(
          () => new Error(`${label}: accepted`),
          (e: unknown) => e,
        );
        expect(error, label).toBeInstanceOf(StorageError);
        expect((error as StorageError).code, label).toBe('invalidArgument');
      }
      expect(await storage.load()).toMatchObject({ hardState: hard(0, null, 0), entries: run(1, 1, 1) });
    });

    it('refuses to cut the log below the commit index', async () => {
      await storage.persist(hard(1, 'n1', 3), run(1, 4, 1));
      await expectStorageError(storage.persist(null, run(2, 2, 2)), 'invalidArgument');
      // Replacing only uncommitted entries is fine.
      await storage.persist(null, run(4, 4, 2));
      await reopen();
      expect(await storage.load()).toMatchObject({ hardState: hard(1, 'n1', 3), entries: [...run(1, 3, 1), entry(4, 2)] });
    });

    it('leaves the previous state intact when a write fails, and keeps working after it', async () => {
      await storage.persist(hard(1, 'n1', 1), run(1, 4, 1));
      harness.failNextWrite();
      await expectStorageError(storage.persist(hard(2, 'n2', 1), [...run(2, 3, 2)]), 'io');
      expect(await storage.load()).toMatchObject({ hardState: hard(1, 'n1', 1), entries: run(1, 4, 1) });
      // The failed write did not move the end of the log: 5 is still the next index.
      await storage.persist(null, [entry(5, 1)]);
      await reopen();
      expect(await storage.load()).toMatchObject({ hardState: hard(1, 'n1', 1), entries: run(1, 5, 1) });
    });

    it('keeps its own copy of the data it was given', async () => {
      const input = entry(1, 1, 'command', 'abc');
      await storage.persist(null, [input]);
      input.data.fill(0);
      const loaded = (await storage.load()).entries[0]!;
      expect(new TextDecoder().decode(loaded.data)).toBe('abc');
      loaded.data.fill(0);
      expect(new TextDecoder().decode((await storage.load()).entries[0]!.data)).toBe('abc');
    });

    it('refuses calls once closed', async () => {
      await storage.close();
      await expectStorageError(storage.persist(null, [entry(1, 1)]), 'closed');
      await expectStorageError(storage.load(), 'closed');
    });

    it('matches a plain array model over random append/overwrite sequences', async () => {
      // Each step: how far back from the end the write starts (beyond the end = a gap, to be
      // rejected), how many entries, and which fraction of the new log is committed.
      const step = fc.record({
        back: fc.integer({ min: -1, max: 4 }),
        count: fc.integer({ min: 0, max: 4 }),
        commitShare: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: null }),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(step, { maxLength: 8 }), async (steps) => {
          const h = await makeStorage(CONFIG);
          try {
            let s = h.storage;
            let model: Entry[] = [];
            let modelHard = hard(0, null, 0);
            for (const [n, { back, count, commitShare }] of steps.entries()) {
              const term = n + 1;
              const first = Math.max(1, model.length + 1 - back);
              const entries = count === 0 ? [] : run(first, first + count - 1, term);
              const newLast = count === 0 ? model.length : first + count - 1;
              const hardState = commitShare === null ? null : hard(term, `n${term}`, Math.floor(commitShare * newLast));
              // Writes that must be refused: a gap, or a log ending below the commit index.
              const gap = count > 0 && first > model.length + 1;
              const dropsCommitted = (hardState ?? modelHard).commit > newLast;
              const write = s.persist(hardState, entries);
              if (gap || dropsCommitted) {
                await expectStorageError(write, 'invalidArgument');
                continue;
              }
              await write;
              if (count > 0) model = [...model.slice(0, first - 1), ...entries];
              if (hardState !== null) modelHard = hardState;
            }
            expect(await s.load()).toEqual({ hardState: modelHard, snapshot: { index: 0, term: 0, config: CONFIG }, entries: model });
            s = await h.reopen();
            expect(await s.load()).toEqual({ hardState: modelHard, snapshot: { index: 0, term: 0, config: CONFIG }, entries: model });
          } finally {
            await h.dispose();
          }
        }),
        { numRuns: 25 },
      );
    });
  });
}
