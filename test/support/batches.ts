// Watching and failing a Vera store's batch writes in tests. The state machine
// writes through chained batches (src/statemachine/write-batch.ts), so these
// stand in for spying on db.batch(ops): each write's ops are recorded when it is
// written, and a write can be made to fail before LevelDB sees it.
import { vi } from 'vitest';
import type { BatchOp } from '../../src/statemachine/family.js';
import type { VeraDb } from '../../src/statemachine/types.js';

type Chained = ReturnType<VeraDb['batch']> & { put(key: Buffer, value: Buffer): unknown; del(key: Buffer): unknown; write(options?: unknown): Promise<void> };

/** From now on, the ops of every batch written to `db`, one array per write, in order. */
export function recordBatches(db: VeraDb): BatchOp[][] {
  const writes: BatchOp[][] = [];
  const real = db.batch.bind(db) as (...args: unknown[]) => unknown;
  vi.spyOn(db, 'batch').mockImplementation(((...args: unknown[]) => {
    if (args.length > 0) {
      writes.push([...(args[0] as BatchOp[])]);
      return real(...args);
    }
    const chained = real() as Chained;
    const ops: BatchOp[] = [];
    const put = chained.put.bind(chained);
    const del = chained.del.bind(chained);
    const write = chained.write.bind(chained);
    // writeBatch hands most ops to the implementation's _put and _del, already encoded; the
    // public put and del call those too, and are recorded once, as themselves.
    let inPublic = false;
    const publicly = <T>(op: () => T): T => {
      inPublic = true;
      try {
        return op();
      } finally {
        inPublic = false;
      }
    };
    chained.put = (key: Buffer, value: Buffer) => (ops.push({ type: 'put', key, value }), publicly(() => put(key, value)));
    chained.del = (key: Buffer) => (ops.push({ type: 'del', key }), publicly(() => del(key)));
    const native = chained as unknown as { _put?: (key: Buffer, value: Buffer) => void; _del?: (key: Buffer) => void };
    const valueEncoding = db.valueEncoding() as unknown as { decode(v: Buffer): Buffer };
    if (native._put !== undefined && native._del !== undefined) {
      const nativePut = native._put.bind(chained);
      const nativeDel = native._del.bind(chained);
      native._put = (key, value) => {
        if (!inPublic) ops.push({ type: 'put', key, value: valueEncoding.decode(value) });
        nativePut(key, value);
      };
      native._del = (key) => {
        if (!inPublic) ops.push({ type: 'del', key });
        nativeDel(key);
      };
    }
    chained.write = (options?: unknown) => (writes.push(ops), write(options));
    return chained;
  }) as never);
  return writes;
}

/** The next batch written to `db` fails with `error`, writing nothing. */
export function failNextBatch(db: VeraDb, error: Error): void {
  const real = db.batch.bind(db) as (...args: unknown[]) => unknown;
  vi.spyOn(db, 'batch').mockImplementationOnce(((...args: unknown[]) => {
    if (args.length > 0) return Promise.reject(error);
    const chained = real() as Chained;
    chained.write = async () => {
      await (chained as unknown as { close(): Promise<void> }).close();
      throw error;
    };
    return chained;
  }) as never);
}

/** The next batch written to `db` reaches LevelDB only once the returned function is called (a slow write in flight). */
export function holdNextBatch(db: VeraDb): () => void {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const real = db.batch.bind(db) as (...args: unknown[]) => unknown;
  vi.spyOn(db, 'batch').mockImplementationOnce(((...args: unknown[]) => {
    if (args.length > 0) return held.then(() => real(...args));
    const chained = real() as Chained;
    const write = chained.write.bind(chained);
    chained.write = async (options?: unknown) => {
      await held;
      return write(options);
    };
    return chained;
  }) as never);
  return release;
}
