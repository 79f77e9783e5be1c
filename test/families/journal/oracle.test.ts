// The journal family against the in-memory model of oracle.ts: random
// sequences of adds (merging by key), claims, extends, dones (some claiming the
// next job), dones of many items at once (some under stale leases), releases, timeouts, expiry, requeues and forgets, with the clock
// moving; after every step the reply and the whole stored state must match.
import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { JournalCommand } from '../../../src/families/journal/commands.js';
import { JournalHarness, SETTINGS } from './harness.js';
import { JournalModel, type ModelResult } from './oracle.js';
import { FAILURES_SINCE } from '../../../src/families/journal/index.js';

const KEYS = ['a', 'b', 'c', 'd', 'e'];
const key = fc.constantFrom(...KEYS);
// 0 stands for a held item (the step's key is replaced by one the model has Processing, with its
// lease, when there is one); other numbers are usually stale leases.
const lease = fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 30 }) });
const offset = fc.integer({ min: -20, max: 1500 });

type Step =
  | { readonly kind: 'tick'; readonly ms: number }
  | { readonly kind: 'add'; readonly items: ReadonlyArray<{ key: string; data: number; priority?: number; at?: number; expiresIn?: number }> }
  | { readonly kind: 'claim'; readonly max: number }
  | { readonly kind: 'doneMany'; readonly items: ReadonlyArray<readonly [string, number]>; readonly claim?: number }
  | { readonly kind: 'extend' | 'done' | 'release'; readonly key: string; readonly lease: number; readonly claim?: number; readonly at?: number; readonly notFailure?: boolean }
  /** `late`: the leader proposes it once the timeout has passed (the clock moves first); else maybe too early. */
  | { readonly kind: 'timeout'; readonly claims: ReadonlyArray<readonly [string, number]>; readonly late: boolean }
  | { readonly kind: 'expire'; readonly max: number }
  | { readonly kind: 'requeue' | 'forget'; readonly key: string };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(1, 300, 1001, 2500).map((ms) => ({ kind: 'tick' as const, ms })) },
  {
    weight: 4,
    arbitrary: fc
      .array(fc.record({ key, data: fc.integer({ min: 0, max: 9 }), priority: fc.constantFrom(0, 10, 200), at: offset, expiresIn: fc.integer({ min: 1, max: 4000 }) }, { requiredKeys: ['key', 'data'] }), { minLength: 1, maxLength: 3 })
      .map((items) => ({ kind: 'add' as const, items })),
  },
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 3 }).map((max) => ({ kind: 'claim' as const, max })) },
  { weight: 2, arbitrary: fc.tuple(key, lease).map(([k, l]) => ({ kind: 'extend' as const, key: k, lease: l })) },
  { weight: 3, arbitrary: fc.tuple(key, lease, fc.option(fc.integer({ min: 1, max: 2 }), { nil: undefined })).map(([k, l, claim]) => ({ kind: 'done' as const, key: k, lease: l, ...(claim === undefined ? {} : { claim }) })) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.array(fc.tuple(key, lease), { minLength: 1, maxLength: 4 }), fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }))
      .map(([items, claim]) => ({ kind: 'doneMany' as const, items, ...(claim === undefined ? {} : { claim }) })),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(key, lease, fc.option(offset, { nil: undefined }), fc.boolean())
      .map(([k, l, at, notFailure]) => ({ kind: 'release' as const, key: k, lease: l, notFailure, ...(at === undefined ? {} : { at }) })),
  },
  { weight: 3, arbitrary: fc.tuple(fc.array(fc.tuple(key, lease), { minLength: 1, maxLength: 3 }), fc.integer({ min: 0, max: 3 }).map((n) => n > 0)).map(([claims, late]) => ({ kind: 'timeout' as const, claims, late })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }).map((max) => ({ kind: 'expire' as const, max })) },
  { weight: 1, arbitrary: key.map((k) => ({ kind: 'requeue' as const, key: k })) },
  { weight: 1, arbitrary: key.map((k) => ({ kind: 'forget' as const, key: k })) },
);

/** What the family answered, in the model's terms. */
function observed(result: Awaited<ReturnType<JournalHarness['run']>>): ModelResult {
  if (!result.ok) return { ok: false, code: result.code };
  // What a value carries for the lifecycle events alone (the keys an entry touched, whether a
  // release was a failure) is not the model's: left out.
  const { journal: _journal, keys: _keys, failure: _failure, ...value } = (result as { value: Record<string, unknown> }).value;
  if (value.op === 'done') delete value.key;
  return { ok: true, value };
}

const reached = { claimed: 0, done: 0, doneInBatches: 0, lostInBatches: 0, timedOut: 0, flagged: 0, merged: 0, deferred: 0 };

describe('the journal against its model', () => {
  afterAll(() => {
    // The sequences reached the interesting paths, not only refusals.
    // (Six runs of 200 sequences reached 208-233 claims, 43-62 dones, 50-60 timeouts,
    // 22-36 flags, 374-477 merges and 37-58 deferred versions; the bounds are far below.)
    expect(reached.claimed).toBeGreaterThan(100);
    expect(reached.done).toBeGreaterThan(15);
    expect(reached.doneInBatches).toBeGreaterThan(15);
    expect(reached.lostInBatches).toBeGreaterThan(15);
    expect(reached.timedOut).toBeGreaterThan(15);
    expect(reached.flagged).toBeGreaterThan(5);
    expect(reached.merged).toBeGreaterThan(100);
    expect(reached.deferred).toBeGreaterThan(10);
  });

  it('answers every step as the model does and stores what the model holds', async () => {
    await fc.assert(
      // `accounting`: the cluster runs command version 9 (failures counted, dates raised), or not yet.
      fc.asyncProperty(fc.array(step, { minLength: 10, maxLength: 40 }), fc.constantFrom(0, 1), fc.boolean(), async (steps, maxTimeouts, accounting) => {
        const h = await JournalHarness.open();
        try {
          const settings = { ...SETTINGS, timeoutMs: 1000, maxTimeouts };
          if (accounting) await h.activate(FAILURES_SINCE);
          await h.ok({ op: 'create', name: 'j', settings });
          const model = new JournalModel(settings, accounting);
          let lastClaim = 1;
          // A step's (key, lease): with lease 0, an item the model holds Processing, picked by the key's letter.
          const held = (k: string, l: number): [string, number] => {
            if (l !== 0) return [k, l];
            const processing = [...model.items.values()].filter((i) => i.status === 'processing').sort((x, y) => (x.key < y.key ? -1 : 1));
            if (processing.length === 0) return [k, lastClaim];
            const i = processing[KEYS.indexOf(k) % processing.length]!;
            return [i.key, i.lease];
          };
          for (const s of steps) {
            if (s.kind === 'tick') {
              h.now += s.ms;
              continue;
            }
            if (s.kind === 'timeout' && s.late) h.now += 1001;
            const now = h.now;
            const entry = h.nextIndex;
            let command: JournalCommand;
            let expected: ModelResult;
            switch (s.kind) {
              case 'add': {
                const items = s.items.map((i) => ({
                  key: i.key,
                  data: i.data,
                  ...(i.priority === undefined ? {} : { priority: i.priority }),
                  ...(i.at === undefined ? {} : { processAt: now + i.at }),
                  ...(i.expiresIn === undefined ? {} : { expiresAt: now + i.expiresIn }),
                }));
                command = { op: 'add', name: 'j', items };
                expected = model.add(items, now);
                break;
              }
              case 'claim':
                command = { op: 'claim', name: 'j', max: s.max };
                expected = model.claim(s.max, now, entry);
                lastClaim = entry;
                break;
              case 'extend': {
                const [k, l] = held(s.key, s.lease);
                command = { op: 'extend', name: 'j', key: k, lease: l };
                expected = model.extend(k, l, now);
                break;
              }
              case 'done': {
                const [k, l] = held(s.key, s.lease);
                command = { op: 'done', name: 'j', key: k, lease: l, ...(s.claim === undefined ? {} : { claim: s.claim }) };
                expected = model.done(k, l, now, s.claim, entry);
                if (s.claim !== undefined && expected.ok) lastClaim = entry;
                break;
              }
              case 'doneMany': {
                // Held items picked one after another (a later pick may repeat an earlier one: done twice in one entry).
                const items = s.items.map(([k, l]) => held(k, l));
                command = { op: 'doneMany', name: 'j', items, ...(s.claim === undefined ? {} : { claim: s.claim }) };
                expected = model.doneMany(items, now, s.claim, entry);
                if (s.claim !== undefined) lastClaim = entry;
                break;
              }
              case 'release': {
                const [k, l] = held(s.key, s.lease);
                const processAt = s.at === undefined ? undefined : Math.max(0, now + s.at);
                // A release says it is no failure only where the cluster knows the field.
                const notFailure = accounting && s.notFailure === true;
                command = { op: 'release', name: 'j', key: k, lease: l, ...(processAt === undefined ? {} : { processAt }), ...(notFailure ? { failure: false as const } : {}) };
                expected = model.release(k, l, processAt, !notFailure, now);
                break;
              }
              case 'timeout': {
                const claims = s.claims.map(([k, l]) => held(k, l));
                command = { op: 'timeout', name: 'j', claims };
                expected = model.timeout(claims, now);
                break;
              }
              case 'expire':
                command = { op: 'expire', name: 'j', max: s.max };
                expected = model.expire(s.max, now);
                break;
              case 'requeue':
                command = { op: 'requeue', name: 'j', key: s.key };
                expected = model.requeue(s.key, now);
                break;
              case 'forget':
                command = { op: 'forget', name: 'j', key: s.key };
                expected = model.forget(s.key);
                break;
            }
            const actual = observed(await h.run(command));
            expect(actual, `${command.op} at ${now}: ${JSON.stringify(command)}`).toEqual(expected);
            expect(Object.fromEntries(await h.items('j')), `items after ${command.op}`).toEqual(Object.fromEntries(model.items));
            expect(Object.fromEntries(await h.flagged()), `flagged after ${command.op}`).toEqual(Object.fromEntries(model.flagged));
            if (actual.ok) {
              const v = actual.value;
              if (v.op === 'claim') reached.claimed += (v.items as unknown[]).length;
              if (v.op === 'done') reached.done++;
              if (v.op === 'doneMany') {
                reached.doneInBatches += v.done as number;
                reached.lostInBatches += (v.lost as unknown[]).length;
              }
              if (v.op === 'timeout') {
                reached.timedOut += (v.requeued as unknown[]).length + (v.flagged as unknown[]).length;
                reached.flagged += (v.flagged as unknown[]).length;
              }
              if (v.op === 'add') {
                reached.merged += v.merged as number;
                reached.deferred += v.deferred as number;
              }
            }
          }
        } finally {
          await h.close();
        }
      }),
      { numRuns: 200 },
    );
  });
});
