import { describe, expect, it } from 'vitest';
import { backoffDelay, checkBackoffOptions, DEFAULT_BACKOFF } from '../../src/raft/transport/backoff.js';

describe('backoffDelay', () => {
  const opts = { initialDelayMs: 50, maxDelayMs: 2000 };

  it('doubles from the initial delay up to the cap', () => {
    const top = (attempt: number): number => backoffDelay(attempt, opts, () => 0.999999);
    expect([0, 1, 2, 3, 4, 5, 6].map(top)).toEqual([50, 100, 200, 400, 800, 1600, 2000]);
    expect(top(1000)).toBe(2000);
  });

  it('jitters between half and all of the exponential delay', () => {
    expect(backoffDelay(2, opts, () => 0)).toBe(100);
    expect(backoffDelay(2, opts, () => 0.5)).toBe(150);
    for (let i = 0; i < 100; i++) {
      const d = backoffDelay(3, opts);
      expect(d).toBeGreaterThanOrEqual(200);
      expect(d).toBeLessThanOrEqual(400);
    }
  });

  it('checks its options', () => {
    expect(() => checkBackoffOptions(DEFAULT_BACKOFF)).not.toThrow();
    expect(() => checkBackoffOptions({ initialDelayMs: 0, maxDelayMs: 10 })).toThrow(RangeError);
    expect(() => checkBackoffOptions({ initialDelayMs: 100, maxDelayMs: 10 })).toThrow(RangeError);
  });
});
