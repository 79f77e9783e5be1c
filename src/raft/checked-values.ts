// Every value in a Vera store carries a CRC-32C of itself, checked on every read.
// LevelDB checksums its blocks but classic-level never asks it to verify them on
// reads, so one changed byte in an .ldb file once silently changed five
// acknowledged items. Installed as the database's value encoding, so every layer
// above (log, state machine, snapshots, backups) sees plain values, and a damaged
// one is an error, never data.

/** A stored value whose checksum does not match: the store is damaged. */
export class CorruptValueError extends Error {
  override readonly name = 'CorruptValueError';
}

const CRC_BYTES = 4;

import { crc32c } from './crc32c.js';

/** An empty value as stored: its checksum alone (LevelDB copies what it is given, so one buffer serves every write). */
const EMPTY_CHECKED = Buffer.alloc(CRC_BYTES);
EMPTY_CHECKED.writeUInt32BE(crc32c(Buffer.alloc(0)), 0);

/** The classic-level value encoding of a Vera store (format vera-store-v2). */
export const checkedValueEncoding = {
  name: 'vera-crc32c',
  format: 'buffer' as const,
  encode(value: Buffer): Buffer {
    // Index entries (most of a journal job's writes) have empty values: one stored form for all.
    if (value.length === 0) return EMPTY_CHECKED;
    const out = Buffer.allocUnsafe(value.length + CRC_BYTES);
    out.set(value, 0); // TypedArray#set: no native call per value, as Buffer#copy makes
    out.writeUInt32BE(crc32c(value), value.length);
    return out;
  },
  decode(stored: Buffer): Buffer {
    if (stored.length < CRC_BYTES) throw new CorruptValueError(`a stored value of ${stored.length} bytes is too short to hold its checksum: the store is damaged`);
    const value = stored.subarray(0, stored.length - CRC_BYTES);
    const expected = stored.readUInt32BE(value.length);
    const actual = crc32c(value);
    if (actual !== expected) {
      throw new CorruptValueError(
        `a stored value failed its checksum (crc32c ${actual.toString(16)}, stored ${expected.toString(16)}, ${value.length} bytes starting ${value.subarray(0, 16).toString('hex')}): the store is damaged`,
      );
    }
    return value;
  },
};

/** The CorruptValueError inside an error from classic-level (which wraps decode failures), if any. */
export function corruptValueIn(error: unknown): CorruptValueError | null {
  for (let e: unknown = error; e instanceof Error; e = e.cause) if (e instanceof CorruptValueError) return e;
  return null;
}
