// Hibernation's stored values, as MessagePack arrays.
import { createHash } from 'node:crypto';
import { pack, unpack } from 'msgpackr';
import { CorruptValueError } from '../../statemachine/codec.js';

/** One list of a Frozen unit, as it stood when the unit froze. */
export interface FrozenList {
  readonly path: string;
  readonly newest: number;
  readonly items: number;
}

/** A Frozen unit: what stays hot, enough to answer "does it exist, how many items, is it frozen". */
export interface FrozenUnit {
  /** The index of the entry that froze it; its cold file carries the same, so a stale file is told apart. */
  readonly frozenAt: number;
  readonly lists: readonly FrozenList[];
  /** Bytes of the cold file. */
  readonly bytes: number;
}

export function encodeFrozen(u: FrozenUnit): Buffer {
  return pack([u.frozenAt, u.lists.map((l) => [l.path, l.newest, l.items]), u.bytes]);
}

export function decodeFrozen(bytes: Uint8Array): FrozenUnit {
  const v: unknown = unpack(bytes);
  if (!Array.isArray(v) || v.length !== 3 || !isCount(v[0]) || !Array.isArray(v[1]) || !isCount(v[2])) throw new CorruptValueError('hibernated unit is not [frozenAt, lists, bytes]');
  const lists = (v[1] as unknown[]).map((l) => {
    if (!Array.isArray(l) || l.length !== 3 || typeof l[0] !== 'string' || !isCount(l[1]) || !isCount(l[2])) throw new CorruptValueError('a hibernated list is not [path, newest, items]');
    return { path: l[0], newest: l[1], items: l[2] };
  });
  return { frozenAt: v[0], lists, bytes: v[2] };
}

function isCount(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}

/**
 * A Freezing unit: its items as they stood when the freeze began (a digest, so the
 * commit can tell whether anything changed since), and the index it began at, which
 * its cold file and, once committed, its Frozen record carry.
 */
export interface FreezingUnit {
  readonly since: number;
  /** SHA-256 over the unit's entries (see entriesDigest). */
  readonly digest: Buffer;
  readonly items: number;
}

export function encodeFreezing(u: FreezingUnit): Buffer {
  return pack([u.since, u.digest, u.items]);
}

export function decodeFreezing(bytes: Uint8Array): FreezingUnit {
  const v: unknown = unpack(bytes);
  if (!Array.isArray(v) || v.length !== 3 || !isCount(v[0]) || !(v[1] instanceof Uint8Array) || v[1].byteLength !== 32 || !isCount(v[2])) {
    throw new CorruptValueError('a freezing unit is not [since, digest, items]');
  }
  return { since: v[0], digest: Buffer.from(v[1]), items: v[2] };
}

/** SHA-256 over a unit's entries, each as (key length, key, value length, value). */
export function entriesDigest(entries: ReadonlyArray<readonly [Buffer, Buffer]>): Buffer {
  const hash = createHash('sha256');
  const len = Buffer.alloc(4);
  for (const [key, value] of entries) {
    len.writeUInt32BE(key.byteLength);
    hash.update(len).update(key);
    len.writeUInt32BE(value.byteLength);
    hash.update(len).update(value);
  }
  return hash.digest();
}
