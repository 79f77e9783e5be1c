// The simulator's only source of randomness: a seeded 32-bit xorshift generator
// (Marsaglia, "Xorshift RNGs", 2003) whose output is passed through the
// MurmurHash3 32-bit finalizer so that the low bits are usable for `% n`.
// Everything a run does derives from one seed, so a seed replays exactly.

import type { RandomSource } from '../../src/raft/types.js';

/** MurmurHash3's fmix32: a cheap bijective scramble of a 32-bit integer. */
export function scramble32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export class SimRandom implements RandomSource {
  private state: number;

  constructor(seed: number) {
    if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be a safe integer, got ${String(seed)}`);
    // Fold the high bits in too, so seeds above 2^32 do not collide with small ones.
    const folded = (seed >>> 0) ^ scramble32(Math.floor(seed / 0x1_0000_0000));
    // xorshift32 must never hold 0: it would stay 0 forever.
    this.state = scramble32(folded) || 0x6d2b79f5;
  }

  /** A uniformly distributed unsigned 32-bit integer. */
  nextU32(): number {
    let x = this.state;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.state = x >>> 0;
    return scramble32(this.state);
  }

  /** An integer in [0, n). The modulo bias (< n / 2^32) does not matter for simulation. */
  int(n: number): number {
    if (!Number.isSafeInteger(n) || n <= 0 || n > 0x1_0000_0000) throw new RangeError(`int(n) needs an integer n in [1, 2^32], got ${String(n)}`);
    return this.nextU32() % n;
  }

  /** An integer in [lo, hi], both inclusive. */
  range(lo: number, hi: number): number {
    if (hi < lo) throw new RangeError(`range(${lo}, ${hi}) is empty`);
    return lo + this.int(hi - lo + 1);
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.nextU32() < p * 0x1_0000_0000;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick() from an empty list');
    return items[this.int(items.length)]!;
  }

  /** An independent generator; `salt` keeps forks taken at the same point apart. */
  fork(salt: number): SimRandom {
    return new SimRandom((this.nextU32() ^ scramble32(salt + 0x9e3779b9)) >>> 0);
  }
}
