// Node assignment's LevelDB layout (docs/storage.md, "Node assignment buckets").
// Text parts (service, node URL, email) are written as 1 length byte and their
// UTF-8 bytes (each is at most 255 bytes), so a key's parts never run into each
// other and a shorter prefix ranges over exactly what it names. Dates and uids
// are 8-byte big-endian, so byte order is numeric order.
import { bucketPrefix, encodeIndex } from '../../keys/index.js';

export const AssignBucket = {
  /** service -> its pattern and allocation settings. */
  service: 0x0010,
  /** service, node URL -> capacity, load, available, downed, backoff. */
  node: 0x0011,
  /** uid -> the user record (service, email, generation, client state, keys-changed-at, dates, node). */
  user: 0x0012,
  /**
   * email, service -> the uids of the user's records, ascending: seed 001's lookup_idx
   * (email, service, created-at), each user's entries in one value. uids are given in
   * creation order, so uid order is created-at order. One point read finds a user.
   */
  lookup: 0x0013,
  /** service, replaced-at, uid -> empty: seed 001's replaced_at_idx (replaced records only, for purge). */
  replaced: 0x0014,
  /** service, node URL, uid -> empty: seed 001's node_idx, holding current records only (decommission). */
  byNode: 0x0015,
  /** One key (the bucket's prefix) -> the next uid. */
  meta: 0x0016,
} as const;

function text(value: string): Buffer {
  const bytes = Buffer.from(value, 'utf8');
  return Buffer.concat([Buffer.from([bytes.length]), bytes]);
}

const MAX_8 = Buffer.alloc(8, 0xff);

export function serviceKey(service: string): Buffer {
  return Buffer.concat([bucketPrefix(AssignBucket.service), text(service)]);
}

export function nodeKey(service: string, node: string): Buffer {
  return Buffer.concat([bucketPrefix(AssignBucket.node), text(service), text(node)]);
}

export function userKey(uid: number): Buffer {
  return Buffer.concat([bucketPrefix(AssignBucket.user), encodeIndex(uid)]);
}

export function uidOfUserKey(key: Buffer): number {
  return key.readUInt32BE(2) * 2 ** 32 + key.readUInt32BE(6);
}

export function lookupKey(email: string, service: string): Buffer {
  return Buffer.concat([bucketPrefix(AssignBucket.lookup), text(email), text(service)]);
}

/** The lookup keys of one email, in every service. */
export function emailRange(email: string): { gte: Buffer; lt: Buffer } {
  const head = Buffer.concat([bucketPrefix(AssignBucket.lookup), text(email)]);
  return { gte: head, lt: Buffer.concat([head, Buffer.alloc(300, 0xff)]) };
}

/** The uid that ends a replaced or byNode key. */
export function uidAtEnd(key: Buffer): number {
  return key.readUInt32BE(key.length - 8) * 2 ** 32 + key.readUInt32BE(key.length - 4);
}

export function replacedKey(service: string, replacedAt: number, uid: number): Buffer {
  return Buffer.concat([bucketPrefix(AssignBucket.replaced), text(service), encodeIndex(replacedAt), encodeIndex(uid)]);
}

/** Replaced records of `service` replaced before `before`, oldest replacement first. */
/** Replaced records of `service` replaced before `before`, after the cursor `after` if given. */
export function replacedBeforeRange(service: string, before: number, after?: PurgeCursor): { gte?: Buffer; gt?: Buffer; lt: Buffer } {
  const head = Buffer.concat([bucketPrefix(AssignBucket.replaced), text(service)]);
  const lt = Buffer.concat([head, encodeIndex(before)]);
  return after === undefined ? { gte: head, lt } : { gt: replacedKey(service, after.replacedAt, after.uid), lt };
}

/** Where one purge batch stopped: the last replaced record it looked at. */
export interface PurgeCursor {
  readonly replacedAt: number;
  readonly uid: number;
}

export function byNodeKey(service: string, node: string, uid: number): Buffer {
  return Buffer.concat([bucketPrefix(AssignBucket.byNode), text(service), text(node), encodeIndex(uid)]);
}

/** The current records on one node. */
export function byNodeRange(service: string, node: string): { gte: Buffer; lt: Buffer } {
  const head = Buffer.concat([bucketPrefix(AssignBucket.byNode), text(service), text(node)]);
  return { gte: head, lt: Buffer.concat([head, MAX_8, Buffer.from([0xff])]) };
}

export function metaKey(): Buffer {
  return bucketPrefix(AssignBucket.meta);
}

/** The service and node URL in a node key. */
export function nodeKeyParts(key: Buffer): { service: string; node: string } {
  const serviceLength = key[2]!;
  const service = key.subarray(3, 3 + serviceLength).toString('utf8');
  const nodeLength = key[3 + serviceLength]!;
  return { service, node: key.subarray(4 + serviceLength, 4 + serviceLength + nodeLength).toString('utf8') };
}

export function serviceOfKey(key: Buffer): string {
  return key.subarray(3, 3 + key[2]!).toString('utf8');
}

/**
 * Account event ids applied, kept in the meta bucket beside the next uid (whose key is the
 * prefix alone): 'e' + id -> the entry time it was applied; 't' + time (8) + id -> empty,
 * the same ids by time, so the oldest are found and dropped after the retention.
 */
export function eventIdKey(id: string): Buffer {
  return Buffer.concat([bucketPrefix(AssignBucket.meta), Buffer.from('e', 'latin1'), Buffer.from(id, 'utf8')]);
}

export function eventTimeKey(at: number, id: string): Buffer {
  return Buffer.concat([bucketPrefix(AssignBucket.meta), Buffer.from('t', 'latin1'), encodeIndex(at), Buffer.from(id, 'utf8')]);
}

/** Event ids applied before `before`, oldest first. */
export function eventTimesBefore(before: number): { gte: Buffer; lt: Buffer } {
  const head = Buffer.concat([bucketPrefix(AssignBucket.meta), Buffer.from('t', 'latin1')]);
  return { gte: head, lt: Buffer.concat([head, encodeIndex(before)]) };
}

export function eventTimeParts(key: Buffer): { at: number; id: string } {
  const at = key.readUInt32BE(3) * 2 ** 32 + key.readUInt32BE(7);
  return { at, id: key.toString('utf8', 11) };
}
