// What the store kernel itself keeps beside the families' buckets: the applied
// index, and the digest over the replicated data.
import { createHash } from 'node:crypto';
import { bucketPrefix, FIRST_FAMILY_BUCKET, internalPropertyKey } from '../keys/index.js';
import type { AppliedIndexField } from '../raft/state-transfer.js';
import { decodeAppliedValue } from './codec.js';
import type { VeraDb } from './types.js';

export type DbSnapshot = ReturnType<VeraDb['snapshot']>;

export const APPLIED_KEY: Buffer = internalPropertyKey('applied');

/** The applied index as Raft's state transfer reads it from a snapshot: its key and encoding are the store's. */
export const APPLIED_INDEX: AppliedIndexField = { key: APPLIED_KEY, decode: decodeAppliedValue };

export async function readApplied(db: VeraDb, snapshot?: DbSnapshot): Promise<number> {
  const bytes = await db.get(APPLIED_KEY, { snapshot });
  return bytes === undefined ? 0 : decodeAppliedValue(bytes);
}

/** sha256 over every key and value of the families' buckets (0x0003 on: the replicated Vera data). */
export async function digestState(db: VeraDb): Promise<string> {
  const hash = createHash('sha256');
  const length = Buffer.alloc(4);
  const frame = (bytes: Buffer): void => {
    // Length-prefixed so that different key/value splits cannot hash alike.
    length.writeUInt32BE(bytes.length, 0);
    hash.update(length);
    hash.update(bytes);
  };
  for await (const [key, value] of db.iterator({ gte: bucketPrefix(FIRST_FAMILY_BUCKET) })) {
    frame(key);
    frame(value);
  }
  return hash.digest('hex');
}
