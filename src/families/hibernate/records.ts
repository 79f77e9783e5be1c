// Hibernation's stored values, as MessagePack arrays.
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
 * A Freezing unit: the index its freeze began at (which its cold file and, once frozen,
 * its Frozen record carry), and `seen`, the newest index of its lists when the leader
 * chose it. A change to the unit deletes the record, cancelling the freeze.
 */
export interface FreezingUnit {
  readonly since: number;
  readonly seen: number;
}

export function encodeFreezing(u: FreezingUnit): Buffer {
  return pack([u.since, u.seen]);
}

export function decodeFreezing(bytes: Uint8Array): FreezingUnit {
  const v: unknown = unpack(bytes);
  if (!Array.isArray(v) || v.length !== 2 || !isCount(v[0]) || !isCount(v[1])) throw new CorruptValueError('a freezing unit is not [since, seen]');
  return { since: v[0], seen: v[1] };
}
