// The state machine's writes: one atomic LevelDB batch per run of applied
// entries, as db.batch(ops) would write it, through a chained batch. Each op
// goes straight to the native batch, where the array form first copies and
// checks every op object and then reads its fields back through N-API: about
// a quarter more CPU per op, measured on 400,000 small ops, and a journal job
// is five ops on each member.
//
// The chained batch's public put and del also cost: per op they check the batch's
// status and the key, look the encodings up, and build an op object or two for
// write hooks and events, which the store never has. So the ops go to the batch's
// implementation (abstract-level's private API for implementors: _put and _del take
// encoded keys and values), encoded with the db's own encodings, and the last op
// through the public put or del, so the batch counts something and writes it all.
import type { BatchOp, VeraDb } from './types.js';

/** What classic-level's chained batch implements under abstract-level's public methods. */
interface NativeBatch {
  _put(key: Buffer, value: Buffer): void;
  _del(key: Buffer): void;
}

export async function writeBatch(db: VeraDb, ops: readonly BatchOp[]): Promise<void> {
  const batch = db.batch();
  try {
    const native = batch as unknown as Partial<NativeBatch>;
    // The store's own batch class must implement them: abstract-level's base class has no-op ones,
    // which would drop every op but the last.
    const own = Object.getPrototypeOf(batch) as object;
    const direct = Object.hasOwn(own, '_put') && Object.hasOwn(own, '_del');
    // Everything but the last op straight to the implementation, when the store has one.
    const last = direct ? ops.length - 1 : 0;
    if (last > 0) {
      const keys = db.keyEncoding();
      const values = db.valueEncoding();
      for (let i = 0; i < last; i++) {
        const op = ops[i]!;
        // The one check of the public method's that can fail here: a plan's key must be bytes.
        if (!Buffer.isBuffer(op.key)) throw new TypeError(`a state machine write has a key that is not a Buffer: ${String(op.key)}`);
        if (op.type === 'put') native._put!(keys.encode(op.key) as Buffer, values.encode(op.value) as Buffer);
        else native._del!(keys.encode(op.key) as Buffer);
      }
    }
    for (let i = Math.max(0, last); i < ops.length; i++) {
      const op = ops[i]!;
      if (op.type === 'put') batch.put(op.key, op.value);
      else batch.del(op.key);
    }
  } catch (err) {
    await batch.close(); // an open chained batch would keep the db from closing
    throw err;
  }
  await batch.write();
}
