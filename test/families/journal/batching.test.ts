// Journal entries share LevelDB batches (their plans read through ctx.reads).
// Applied in batches of any size they must give the outcomes and the db bytes
// of the same entries applied one at a time, as each once was.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { JournalCommand } from '../../../src/families/journal/commands.js';
import { encodeCommand } from '../../../src/families/commands.js';
import { StateMachine } from '../../../src/statemachine/state-machine.js';
import type { Entry } from '../../../src/raft/types.js';
import { dumpDb, openTempDb } from '../../statemachine/helpers.js';
import { SETTINGS } from './harness.js';
import { REGISTRY } from '../../../src/families/registry.js';

const T0 = 1_000_000;
const KEYS = ['a', 'b', 'c', 'd', 'e', 'f'];
const key = fc.constantFrom(...KEYS);
// A lease names an earlier entry: 0 here stands for the latest claim's (resolved in entries());
// a wrong one is a CONFLICT, which must match too.
const lease = fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 2, max: 40 }) });
const date = fc.integer({ min: T0 - 50, max: T0 + 3000 });

type Step = { readonly advance: number; readonly command: JournalCommand };

const command: fc.Arbitrary<JournalCommand> = fc.oneof(
  { weight: 4, arbitrary: fc.array(fc.record({ key, data: fc.integer(), priority: fc.constantFrom(0, 10, 200), processAt: date, expiresAt: fc.constantFrom(0, T0 + 500, T0 + 5000) }, { requiredKeys: ['key', 'data'] }), { minLength: 1, maxLength: 4 }).map((items) => ({ op: 'add' as const, name: 'j', items })) },
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 3 }).map((max) => ({ op: 'claim' as const, name: 'j', max })) },
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom('done' as const, 'extend' as const), key, lease).map(([op, k, l]) => ({ op, name: 'j', key: k, lease: l })) },
  { weight: 2, arbitrary: fc.tuple(key, lease, fc.integer({ min: 1, max: 3 })).map(([k, l, claim]) => ({ op: 'done' as const, name: 'j', key: k, lease: l, claim })) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.array(fc.tuple(key, lease), { minLength: 1, maxLength: 3 }), fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }))
      .map(([items, claim]) => ({ op: 'doneMany' as const, name: 'j', items, ...(claim === undefined ? {} : { claim }) })),
  },
  { weight: 2, arbitrary: fc.tuple(key, lease, fc.option(date, { nil: undefined })).map(([k, l, processAt]) => ({ op: 'release' as const, name: 'j', key: k, lease: l, ...(processAt === undefined ? {} : { processAt }) })) },
  { weight: 2, arbitrary: fc.array(fc.tuple(key, lease), { minLength: 1, maxLength: 3 }).map((claims) => ({ op: 'timeout' as const, name: 'j', claims })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }).map((max) => ({ op: 'expire' as const, name: 'j', max })) },
  { weight: 1, arbitrary: key.map((k) => ({ op: 'requeue' as const, name: 'j', key: k })) },
  { weight: 1, arbitrary: key.map((k) => ({ op: 'forget' as const, name: 'j', key: k })) },
);
const steps = fc.array(fc.record({ advance: fc.constantFrom(0, 0, 1, 700, 1500), command }), { minLength: 15, maxLength: 50 });

function entries(list: readonly Step[]): Entry[] {
  let now = T0;
  const all: JournalCommand[] = [{ op: 'create', name: 'j', settings: { ...SETTINGS, timeoutMs: 1000, maxTimeouts: 1 } }, ...list.map((s) => s.command)];
  let lastClaim = 1;
  const resolve = (l: number): number => (l === 0 ? lastClaim : l);
  return all.map((c, i) => {
    now += i === 0 ? 0 : list[i - 1]!.advance;
    let resolved: JournalCommand = c;
    if ('lease' in c) resolved = { ...c, lease: resolve(c.lease) };
    if (c.op === 'timeout') resolved = { ...c, claims: c.claims.map(([k, l]) => [k, resolve(l)] as const) };
    if (c.op === 'doneMany') resolved = { ...c, items: c.items.map(([k, l]) => [k, resolve(l)] as const) };
    if (c.op === 'claim' || ((c.op === 'done' || c.op === 'doneMany') && c.claim !== undefined)) lastClaim = i + 1;
    return { index: i + 1, term: 1, kind: 'command', data: encodeCommand({ family: 'journal', ...resolved } as never, now) };
  });
}

describe('journal entries sharing a batch', () => {
  it('give the outcomes and db bytes of the same entries applied one at a time', async () => {
    const seen = { claims: 0, leased: 0, doneInBatches: 0 };
    await fc.assert(
      // `restarts`: after which batches the batched member restarts, losing its in-memory index
      // fronts (state.ts), as after a crash or a snapshot: what it claims must not change.
      fc.asyncProperty(steps, fc.array(fc.integer({ min: 1, max: 20 }), { minLength: 1, maxLength: 6 }), fc.array(fc.boolean(), { maxLength: 6 }), async (list, sizes, restarts) => {
        const all = entries(list);
        const [a, b] = [await openTempDb(), await openTempDb()];
        try {
          const one = await StateMachine.open(a.db, REGISTRY);
          let many = await StateMachine.open(b.db, REGISTRY);
          const expected = [];
          // Copies of the bytes, so neither machine takes the other's proposed-command shortcut.
          for (const e of all) expected.push(await one.apply({ ...e, data: Buffer.from(e.data) }));
          const actual = [];
          for (let k = 0, chunk = 0; k < all.length; chunk++) {
            const size = sizes[chunk % sizes.length]!;
            actual.push(...(await many.applyMany(all.slice(k, k + size).map((e) => ({ ...e, data: Buffer.from(e.data) })))));
            k += size;
            if (restarts[chunk % Math.max(1, restarts.length)] === true) many = await StateMachine.open(b.db, REGISTRY);
          }
          expect(JSON.parse(JSON.stringify(actual))).toEqual(JSON.parse(JSON.stringify(expected)));
          expect(await dumpDb(b.db)).toEqual(await dumpDb(a.db));
          for (const o of expected) {
            const value = o.result.ok && o.result.op === 'family' ? (o.result.value as { op: string; items?: unknown[] }) : null;
            if (value?.op === 'claim' && (value.items?.length ?? 0) > 0) seen.claims++;
            if (value?.op === 'done' || value?.op === 'extend' || value?.op === 'release') seen.leased++;
            if (value?.op === 'doneMany') seen.doneInBatches += (value as unknown as { done: number }).done;
          }
        } finally {
          await a.cleanup();
          await b.cleanup();
        }
      }),
      { numRuns: 150 },
    );
    // The sequences reached the interesting paths, not only refusals.
    expect(seen.claims).toBeGreaterThan(150);
    expect(seen.leased).toBeGreaterThan(20);
    expect(seen.doneInBatches).toBeGreaterThan(10);
  });
});
