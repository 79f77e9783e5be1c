import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Entry } from '../../src/raft/types.js';
import { StateMachine } from '../../src/statemachine/state-machine.js';
import type { ApplyOutcome } from '../../src/statemachine/types.js';
import { EntryFeed, dumpDb, openTempDb } from './helpers.js';
import { Model, PATHS, SESSIONS, stepsArb, type Step } from './model.js';
import { watchersOf, watchesOf } from '../../src/families/watches/queries.js';
import { children, getList, lastIndexOf } from '../../src/families/lists/queries.js';
import { inspectIndexes } from '../../src/families/index-dump.js';
import { REGISTRY } from '../../src/families/registry.js';

/** Resolves steps into entries once, so every state machine is fed identical bytes. */
function entriesFor(steps: Step[]): Entry[] {
  const model = new Model();
  const feed = new EntryFeed();
  return steps.map((step) => {
    const payload = model.resolve(step);
    const entry = 'noop' in payload ? feed.noop() : 'bytes' in payload ? feed.raw(payload.bytes) : feed.command(payload.command);
    model.apply(entry.index, payload);
    return entry;
  });
}

async function observe(sm: StateMachine): Promise<unknown> {
  return {
    applied: sm.appliedIndex,
    indexes: inspectIndexes(sm),
    lists: await Promise.all(PATHS.map((p) => getList(sm, p))),
    children: await children(sm, '/'),
    watchers: PATHS.map((p) => [...watchersOf(sm, p)].sort()),
    watches: SESSIONS.map((s) => watchesOf(sm, s)),
    digest: await sm.digest(),
  };
}

describe('determinism', () => {
  it('two state machines fed the same entries have equal digests and byte-identical dbs', async () => {
    await fc.assert(
      fc.asyncProperty(stepsArb, async (steps) => {
        const entries = entriesFor(steps);
        const [a, b] = [await openTempDb(), await openTempDb()];
        try {
          const [smA, smB] = [await StateMachine.open(a.db, REGISTRY), await StateMachine.open(b.db, REGISTRY)];
          for (const e of entries) {
            const [outA, outB] = [await smA.apply(e), await smB.apply(e)];
            expect(outB).toEqual(outA);
          }
          expect(await smB.digest()).toBe(await smA.digest());
          expect(await dumpDb(b.db)).toEqual(await dumpDb(a.db));
        } finally {
          await a.cleanup();
          await b.cleanup();
        }
      }),
      { numRuns: 40 },
    );
  });

  it('applying in batches of any size gives the same outcomes, watchers per entry and db bytes as one entry at a time', async () => {
    await fc.assert(
      fc.asyncProperty(stepsArb, fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 10 }), async (steps, sizes) => {
        const entries = entriesFor(steps);
        const [a, b] = [await openTempDb(), await openTempDb()];
        try {
          const [one, many] = [await StateMachine.open(a.db, REGISTRY), await StateMachine.open(b.db, REGISTRY)];
          // Who watched each event's list as of its entry: what the server records for replay.
          const watchersAt = (sm: StateMachine, out: ApplyOutcome): string[][] => out.events.map((e) => [...watchersOf(sm, e.path)].sort());
          const expected: unknown[] = [];
          for (const e of entries) {
            const out = await one.apply(e);
            expected.push({ out, watchers: watchersAt(one, out) });
          }
          const actual: unknown[] = [];
          const seen: unknown[] = [];
          let k = 0;
          for (let chunk = 0; k < entries.length; chunk++) {
            const size = sizes[chunk % sizes.length]!;
            const written: unknown[] = [];
            const outs = await many.applyMany(entries.slice(k, k + size), {
              onPlanned: (out) => seen.push({ out, watchers: watchersAt(many, out) }),
              onWritten: (out) => written.push(out),
            });
            expect(written).toEqual(outs);
            actual.push(...outs);
            k += size;
            expect(many.appliedIndex).toBe(entries[Math.min(k, entries.length) - 1]!.index);
          }
          expect(seen).toEqual(expected);
          expect(actual).toEqual(expected.map((x) => (x as { out: unknown }).out));
          expect(await dumpDb(b.db)).toEqual(await dumpDb(a.db));
        } finally {
          await a.cleanup();
          await b.cleanup();
        }
      }),
      { numRuns: 100 },
    );
  });

  it('the digest tells different states apart', async () => {
    const entries = entriesFor([
      { kind: 'open', session: 's1' },
      { kind: 'push', session: 's1', path: '/a', data: 1, persistent: true, watch: false, cas: 'none' },
    ]);
    const tmp = await openTempDb();
    try {
      const sm = await StateMachine.open(tmp.db, REGISTRY);
      const empty = await sm.digest();
      await sm.apply(entries[0]!);
      const opened = await sm.digest();
      await sm.apply(entries[1]!);
      expect(new Set([empty, opened, await sm.digest()]).size).toBe(3);
    } finally {
      await tmp.cleanup();
    }
  });
});

describe('restart', () => {
  it('after close and reopen, the applied index, indexes and queries are what they were', async () => {
    await fc.assert(
      fc.asyncProperty(stepsArb, async (steps) => {
        const entries = entriesFor(steps);
        const tmp = await openTempDb();
        try {
          const sm = await StateMachine.open(tmp.db, REGISTRY);
          for (const e of entries) await sm.apply(e);
          const before = await observe(sm);
          const reopened = await StateMachine.open(await tmp.reopen(), REGISTRY);
          expect(await observe(reopened)).toEqual(before);
          // Replaying the log from the start (as after a crash) applies nothing twice.
          for (const e of entries) expect((await reopened.apply(e)).ignored).toBe(true);
          expect(await observe(reopened)).toEqual(before);
        } finally {
          await tmp.cleanup();
        }
      }),
      { numRuns: 40 },
    );
  });

  it('resumes applying where it stopped', async () => {
    const entries = entriesFor([
      { kind: 'open', session: 's1' },
      { kind: 'push', session: 's1', path: '/a', data: 'x', persistent: false, watch: true, cas: 'none' },
      { kind: 'push', session: 's1', path: '/a', data: 'y', persistent: false, watch: true, cas: 2 },
    ]);
    const tmp = await openTempDb();
    try {
      const sm = await StateMachine.open(tmp.db, REGISTRY);
      await sm.apply(entries[0]!);
      await sm.apply(entries[1]!);
      const reopened = await StateMachine.open(await tmp.reopen(), REGISTRY);
      expect(reopened.appliedIndex).toBe(2);
      expect(lastIndexOf(reopened, '/a')).toBe(2);
      const out = await reopened.apply(entries[2]!);
      expect(out.result).toMatchObject({ ok: true, op: 'push', item: { index: 3, data: 'y' } });
    } finally {
      await tmp.cleanup();
    }
  });

  it('reload() picks up a db changed underneath (as after installing a snapshot)', async () => {
    const entries = entriesFor([
      { kind: 'open', session: 's1' },
      { kind: 'watch', session: 's1', path: '/a', prefix: true },
      { kind: 'push', session: 's1', path: '/a/b', data: 1, persistent: false, watch: true, cas: 'none' },
    ]);
    const tmp = await openTempDb();
    try {
      const stale = await StateMachine.open(tmp.db, REGISTRY);
      const writer = await StateMachine.open(tmp.db, REGISTRY);
      for (const e of entries) await writer.apply(e);
      expect(stale.appliedIndex).toBe(0);
      await stale.reload();
      expect(await observe(stale)).toEqual(await observe(writer));
    } finally {
      await tmp.cleanup();
    }
  });
});
