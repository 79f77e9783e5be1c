// MessagePack encodings of the kernel's own values (applied index, clock), and the
// packer every family encodes its values with (a family's layouts live in its folder).
// One shared Packr with the record extension off: records make the bytes of a
// value depend on what the packer encoded before, which would break the rule
// that every peer writes byte-identical databases.
import { Packr } from 'msgpackr';

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

/** A stored value that must decode to a map (what every family's records are); `what` names it in the error. */
export function decodeMap(bytes: Uint8Array, what: string): Record<string, unknown> {
  const value = unpack(bytes);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CorruptValueError(`${what} value is not a map`);
  }
  return value as Record<string, unknown>;
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
