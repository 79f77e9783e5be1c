// Small non-cryptographic hashes: FNV-1a (Fowler, Noll, Vo) over entry bytes,
// used to compare entries and state machines cheaply, and a running trace hash
// that fingerprints a whole simulation run for the determinism check.

import type { Entry } from '../../src/raft/types.js';

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

export function fnv1a(bytes: Uint8Array, seed = FNV_OFFSET): number {
  let h = seed;
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i]!;
    h = Math.imul(h, FNV_PRIME);
  }
  return h >>> 0;
}

const KIND_CODE = { noop: 1, command: 2, config: 3 } as const;

/** Identifies an entry's content (kind and data); index and term are compared separately. */
export function entryContentHash(entry: Entry): number {
  let h = Math.imul(FNV_OFFSET ^ KIND_CODE[entry.kind], FNV_PRIME);
  h = fnv1a(entry.data, h >>> 0);
  return h;
}

/** Accumulates integers into one 32-bit fingerprint, order-sensitive. */
export class TraceHash {
  private h = FNV_OFFSET;

  mix(n: number): void {
    // Split into two 32-bit halves so large numbers (terms, indexes) are not truncated.
    this.h = Math.imul(this.h ^ (n >>> 0), FNV_PRIME);
    this.h = Math.imul(this.h ^ Math.floor(n / 0x1_0000_0000), FNV_PRIME);
  }

  get value(): number {
    return this.h >>> 0;
  }
}
