// A pushed value together with its MessagePack bytes, so the leader encodes a
// push's data once (when its size is checked) instead of once more for the
// command, the stored item, the reply and every notify frame (issue 12, item 6).
//
// Every packer in the process writes a PackedValue as its bytes, inline, exactly
// where the value's own encoding would go; JSON.stringify writes its value. The
// bytes are what packValue gives for the value, and every Vera packer encodes a
// JSON-like value the same way (no records, smallest map headers), so a
// structure holding a PackedValue encodes to the same bytes as one holding the
// plain value: a leader that carries the bytes and a follower that re-encodes
// what it decoded write identical databases.
//
// The mechanism is a msgpackr extension whose pack writes straight into the
// packer's buffer and returns nothing, so no extension header is written. It is
// registered once, process-wide, by importing this module (msgpack.ts does).
import { addExtension } from 'msgpackr';
import type { Bytes } from './platform.js';
import type { JsonValue } from './types.js';

export class PackedValue {
  /** `bytes` must be packValue(value): nothing checks it here. */
  constructor(
    readonly value: JsonValue,
    readonly bytes: Bytes,
  ) {}

  toJSON(): JsonValue {
    return this.value;
  }
}

/** The bytes are never tagged, so this type never reaches a decoder; if it did, that is not Vera's data. */
const NEVER_ON_THE_WIRE = 0x7e;

type Allocate = (size: number) => { readonly target: Uint8Array; readonly position: number };

addExtension({
  Class: PackedValue,
  type: NEVER_ON_THE_WIRE,
  // msgpackr calls pack(value, allocateForWrite); writing through it and returning
  // nothing puts the bytes in place with no extension header.
  pack: ((value: PackedValue, allocate: Allocate): undefined => {
    const { target, position } = allocate(value.bytes.length);
    target.set(value.bytes, position);
    return undefined;
  }) as unknown as (value: unknown) => Bytes,
  unpack: () => {
    throw new Error(`MessagePack extension type ${NEVER_ON_THE_WIRE} is not part of Vera's data`);
  },
});
