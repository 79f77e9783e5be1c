// MessagePack encodings of the values stored in the state-machine buckets.
// One shared Packr with the record extension off: records make the bytes of a
// value depend on what the packer encoded before, which would break the rule
// that every peer writes byte-identical databases.
import { Packr } from 'msgpackr';
import type { SessionInfo } from './types.js';

const packr = new Packr({ useRecords: false, variableMapSize: true });

export function pack(value: unknown): Buffer {
  return packr.pack(value);
}

export function unpack(bytes: Uint8Array): unknown {
  return packr.unpack(bytes);
}

/** Thrown when bytes read back from our own buckets are not what we wrote: the db is damaged. */
export class CorruptValueError extends Error {
  override readonly name = 'CorruptValueError';
}

function record(bytes: Uint8Array, what: string): Record<string, unknown> {
  const value = unpack(bytes);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CorruptValueError(`${what} value is not a map`);
  }
  return value as Record<string, unknown>;
}

// 0x0003 item value: { owner, data, user? } (the index and path are in the key).
export interface StoredItem {
  readonly owner: string | null;
  readonly data: unknown;
}

/**
 * `user`: who is charged for the item (command version 9; quota family), written only
 * when there is one, so items written before re-encode to the same bytes. Readers
 * never see it: decodeItemValue leaves it out, so no client is shown who wrote an item.
 */
export function encodeItemValue(item: StoredItem, user?: string): Buffer {
  return pack(user === undefined ? { owner: item.owner, data: item.data } : { owner: item.owner, data: item.data, user });
}

/** An item's stored value and the user it charges (see encodeItemValue), if any: for apply, never for a reader. */
export function decodeChargedItem(bytes: Uint8Array): { readonly item: StoredItem; readonly user: string | undefined } {
  const v = record(bytes, 'item');
  if (v.owner !== null && typeof v.owner !== 'string') throw new CorruptValueError('item owner is not a string or null');
  if (v.user !== undefined && typeof v.user !== 'string') throw new CorruptValueError('item user is not a string');
  return { item: { owner: v.owner, data: v.data }, user: v.user };
}

export function decodeItemValue(bytes: Uint8Array): StoredItem {
  const v = record(bytes, 'item');
  if (v.owner !== null && typeof v.owner !== 'string') throw new CorruptValueError('item owner is not a string or null');
  return { owner: v.owner, data: v.data };
}

// 0x0004 client value: { timeoutMs, remote }.
export function encodeClientValue(info: SessionInfo): Buffer {
  // Fields only when present, so a record written before they existed re-encodes to the same bytes.
  return pack({
    timeoutMs: info.timeoutMs,
    remote: info.remote,
    ...(info.resumeHash === undefined ? {} : { resumeHash: info.resumeHash }),
    ...(info.principal === undefined ? {} : { principal: info.principal }),
  });
}

export function decodeClientValue(bytes: Uint8Array): SessionInfo {
  const v = record(bytes, 'client');
  if (typeof v.timeoutMs !== 'number' || typeof v.remote !== 'string') {
    throw new CorruptValueError('client value lacks timeoutMs/remote');
  }
  if (v.resumeHash !== undefined && typeof v.resumeHash !== 'string') throw new CorruptValueError('client value has a resumeHash that is not a string');
  if (v.principal !== undefined && typeof v.principal !== 'string') throw new CorruptValueError('client value has a principal that is not a string');
  return {
    timeoutMs: v.timeoutMs,
    remote: v.remote,
    ...(v.resumeHash === undefined ? {} : { resumeHash: v.resumeHash }),
    ...(v.principal === undefined ? {} : { principal: v.principal }),
  };
}

// 0x0007 lag value: { index } as in the seed's `/lag/A -> { index: }`.
export function encodeLagValue(index: number): Buffer {
  return pack({ index });
}

export function decodeLagValue(bytes: Uint8Array): number {
  const v = record(bytes, 'lag');
  if (typeof v.index !== 'number') throw new CorruptValueError('lag value lacks index');
  return v.index;
}

// 0x0001 'applied' and 'clock': plain MessagePack numbers (an entry index; ms).
function encodeCount(n: number): Buffer {
  return pack(n);
}

function decodeCount(bytes: Uint8Array, what: string): number {
  const v = unpack(bytes);
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new CorruptValueError(`${what} is not a number`);
  return v;
}

export const encodeAppliedValue = encodeCount;
export const decodeAppliedValue = (bytes: Uint8Array): number => decodeCount(bytes, 'applied index');
export const encodeClockValue = encodeCount;
export const decodeClockValue = (bytes: Uint8Array): number => decodeCount(bytes, 'clock');

/** Value of keys whose presence is the whole fact (client data, watches). */
export const EMPTY_VALUE: Buffer = Buffer.alloc(0);
