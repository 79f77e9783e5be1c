// writeBatch puts most ops straight into classic-level's native batch (its private
// _put and _del), so it must write exactly what db.batch(ops) writes: the same keys
// and the same stored bytes (each value with its checksum), whatever the ops.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkedValueEncoding } from '../../src/raft/checked-values.js';
import type { BatchOp, VeraDb } from '../../src/statemachine/types.js';
import { writeBatch } from '../../src/statemachine/write-batch.js';

const key = fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 3 }).map((bytes) => Buffer.from(bytes));
const op: fc.Arbitrary<BatchOp> = fc.oneof(
  fc.record({ type: fc.constant('put' as const), key, value: fc.uint8Array({ maxLength: 4 }).map((v) => Buffer.from(v)) }),
  fc.record({ type: fc.constant('del' as const), key }),
);

async function open(dir: string, name: string): Promise<VeraDb> {
  const db = new ClassicLevel<Buffer, Buffer>(join(dir, name), { keyEncoding: 'buffer', valueEncoding: checkedValueEncoding as never });
  await db.open();
  return db;
}

/** Every key and its stored bytes (checksum included), read without the value encoding. */
async function stored(db: VeraDb): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  for await (const [k, v] of db.iterator({ valueEncoding: 'buffer' })) out.push([k.toString('hex'), (v as Buffer).toString('hex')]);
  return out;
}

describe('writeBatch', () => {
  it('writes what db.batch writes: the same keys, and values stored with their checksums', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vera-write-batch-'));
    try {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(op, { maxLength: 12 }), fc.array(op, { maxLength: 40 }), async (before, ops) => {
          const [a, b] = [await open(dir, `a${n}`), await open(dir, `b${n++}`)];
          try {
            await a.batch(before);
            await b.batch(before);
            await writeBatch(a, ops);
            await b.batch([...ops]);
            expect(await stored(a)).toEqual(await stored(b));
            for (const [k] of await stored(b)) expect(await a.get(Buffer.from(k, 'hex'))).toEqual(await b.get(Buffer.from(k, 'hex')));
          } finally {
            await a.close();
            await b.close();
          }
        }),
        { numRuns: 60 },
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a key that is not bytes, and writes none of the batch', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vera-write-batch-'));
    const db = await open(dir, 'k');
    try {
      const ops = [
        { type: 'put', key: Buffer.from([1]), value: Buffer.from([1]) },
        { type: 'put', key: undefined as unknown as Buffer, value: Buffer.from([2]) },
        { type: 'put', key: Buffer.from([3]), value: Buffer.from([3]) },
      ] satisfies BatchOp[];
      await expect(writeBatch(db, ops)).rejects.toThrow(/not a Buffer/);
      expect(await stored(db)).toEqual([]);
    } finally {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('uses only the public put and del of a batch whose class does not implement _put and _del itself', async () => {
    const calls: string[] = [];
    class Base {
      _put(): void {} // abstract-level's no-ops
      _del(): void {}
    }
    class PublicOnly extends Base {
      put(key: Buffer): void {
        calls.push(`put ${key.toString('hex')}`);
      }
      del(key: Buffer): void {
        calls.push(`del ${key.toString('hex')}`);
      }
      async write(): Promise<void> {}
      async close(): Promise<void> {}
    }
    const db = { batch: () => new PublicOnly() } as unknown as VeraDb;
    await writeBatch(db, [
      { type: 'put', key: Buffer.from([1]), value: Buffer.from([1]) },
      { type: 'del', key: Buffer.from([2]) },
      { type: 'put', key: Buffer.from([3]), value: Buffer.from([3]) },
    ]);
    expect(calls).toEqual(['put 01', 'del 02', 'put 03']);
  });
});

