// Node assignment's values, MessagePack-encoded as arrays with a fixed field
// order so every member writes the same bytes.
import { CorruptValueError, pack, unpack } from '../../statemachine/codec.js';
import type { ServiceSettings, UserRecord } from './wire.js';

// The shapes the ops answer too are defined once, with the ops (wire.ts).
export type { ServiceSettings, UserRecord } from './wire.js';

export interface NodeRecord {
  readonly capacity: number;
  /** Current records assigned to the node. */
  readonly load: number;
  /** Slots allocation may still take before capacity is released again. */
  readonly available: number;
  readonly downed: boolean;
  /** Non-zero: the node is throttled and gets no new users (Tokenserver treats it like downed). */
  readonly backoff: number;
}

export function encodeService(s: ServiceSettings): Buffer {
  return pack([s.pattern, s.releaseRate, s.newUsers, s.topN]);
}

export function decodeService(bytes: Uint8Array): ServiceSettings {
  const v = unpack(bytes);
  if (!Array.isArray(v) || v.length !== 4 || typeof v[0] !== 'string' || typeof v[1] !== 'number' || typeof v[2] !== 'boolean' || !isCount(v[3])) {
    throw new CorruptValueError('assignment service is not [pattern, releaseRate, newUsers, topN]');
  }
  return { pattern: v[0], releaseRate: v[1], newUsers: v[2], topN: v[3] };
}

export function encodeNode(n: NodeRecord): Buffer {
  return pack([n.capacity, n.load, n.available, n.downed, n.backoff]);
}

export function decodeNode(bytes: Uint8Array): NodeRecord {
  const v = unpack(bytes);
  if (!Array.isArray(v) || v.length !== 5 || !isCount(v[0]) || !isCount(v[1]) || !isCount(v[2]) || typeof v[3] !== 'boolean' || !isCount(v[4])) {
    throw new CorruptValueError('assignment node is not [capacity, load, available, downed, backoff]');
  }
  return { capacity: v[0], load: v[1], available: v[2], downed: v[3], backoff: v[4] };
}

export function encodeUser(u: UserRecord): Buffer {
  return pack([u.uid, u.service, u.email, u.generation, u.clientState, u.keysChangedAt, u.createdAt, u.replacedAt, u.node]);
}

export function decodeUser(bytes: Uint8Array): UserRecord {
  const v = unpack(bytes);
  if (
    !Array.isArray(v) ||
    v.length !== 9 ||
    ![0, 3, 5, 6, 7].every((i) => isCount(v[i])) ||
    ![1, 2, 4, 8].every((i) => typeof v[i] === 'string')
  ) {
    throw new CorruptValueError('assignment user is not [uid, service, email, generation, clientState, keysChangedAt, createdAt, replacedAt, node]');
  }
  return { uid: v[0], service: v[1], email: v[2], generation: v[3], clientState: v[4], keysChangedAt: v[5], createdAt: v[6], replacedAt: v[7], node: v[8] };
}

/** A user's lookup entry: the uids of its records, ascending. */
export function encodeUids(uids: readonly number[]): Buffer {
  return pack(uids);
}

export function decodeUids(bytes: Uint8Array): number[] {
  const v = unpack(bytes);
  if (!Array.isArray(v) || v.length === 0 || !v.every((u, i) => isCount(u) && u >= 1 && (i === 0 || u > v[i - 1]))) throw new CorruptValueError('assignment lookup entry is not an ascending list of uids');
  return v;
}

export function encodeMeta(nextUid: number): Buffer {
  return pack([nextUid]);
}

export function decodeMeta(bytes: Uint8Array): number {
  const v = unpack(bytes);
  if (!Array.isArray(v) || v.length !== 1 || !isCount(v[0]) || v[0] < 1) throw new CorruptValueError('assignment meta is not [nextUid]');
  return v[0];
}

function isCount(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}
