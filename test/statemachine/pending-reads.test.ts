// PendingReads answers as the db would once the pending writes are in it:
// checked against a second db that has them written.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { PendingReads } from '../../src/statemachine/pending-reads.js';
import type { BatchOp } from '../../src/statemachine/family.js';
import { openTempDb } from './helpers.js';

const key = fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 4 }).map((bytes) => Buffer.from(bytes));
const op: fc.Arbitrary<BatchOp> = fc.oneof(
  fc.record({ type: fc.constant('put' as const), key, value: fc.uint8Array({ maxLength: 3 }).map((v) => Buffer.from(v)) }),
  fc.record({ type: fc.constant('del' as const), key }),
);
// At most one lower and one upper bound, as callers give them.
const range = fc
  .tuple(fc.option(fc.tuple(fc.constantFrom('gt', 'gte'), key)), fc.option(fc.tuple(fc.constantFrom('lt', 'lte'), key)), fc.option(fc.integer({ min: 0, max: 12 })))
  .map(([lower, upper, limit]) => ({
    ...(lower === null ? {} : { [lower[0]]: lower[1] }),
    ...(upper === null ? {} : { [upper[0]]: upper[1] }),
    ...(limit === null ? {} : { limit }),
  }));

describe('PendingReads', () => {
  it('gets and lists keys as the db will once the pending writes are written', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 30 }), fc.array(op, { maxLength: 30 }), fc.array(key, { maxLength: 10 }), fc.array(range, { maxLength: 6 }), async (written, pending, gets, ranges) => {
        const [a, b] = [await openTempDb(), await openTempDb()];
        try {
          await a.db.batch(written);
          await b.db.batch([...written, ...pending]);
          let unwritten: readonly BatchOp[] = pending;
          const reads = new PendingReads(a.db, () => unwritten);
          for (const k of gets) expect(await reads.get(k)).toEqual(await b.db.get(k));
          for (const r of ranges) expect(await reads.keys(r)).toEqual(await b.db.keys(r).all());
          unwritten = []; // written: a new, empty batch
          for (const r of ranges) expect(await reads.keys(r)).toEqual(await a.db.keys(r).all());
        } finally {
          await a.cleanup();
          await b.cleanup();
        }
      }),
      { numRuns: 150 },
    );
  });
});
