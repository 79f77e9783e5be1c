import { describe, expect, it } from 'vitest';
import { roundSummary, Samples } from '../lib/samples.js';

describe('Samples', () => {
  it('gives nearest-rank percentiles over every sample', () => {
    const s = new Samples(2);
    for (let i = 100; i >= 1; i--) s.add(i);
    expect(s.count).toBe(100);
    expect(s.percentile(50)).toBe(50);
    expect(s.percentile(99)).toBe(99);
    expect(s.percentile(100)).toBe(100);
    expect(s.percentile(0)).toBe(1);
    const sum = s.summary();
    expect(sum).toMatchObject({ count: 100, min: 1, max: 100, p50: 50, p90: 90, p99: 99 });
    expect(sum.mean).toBeCloseTo(50.5);
  });

  it('keeps the insertion order in values() and sorts lazily', () => {
    const s = new Samples();
    [3, 1, 2].forEach((v) => s.add(v));
    expect([...s.values()]).toEqual([3, 1, 2]);
    expect([...s.sortedValues()]).toEqual([1, 2, 3]);
    s.add(0);
    expect(s.percentile(0)).toBe(0);
  });

  it('allows negative samples (a notification that beat the acknowledgement)', () => {
    const s = new Samples();
    [-5, 10, 20].forEach((v) => s.add(v));
    expect(s.percentile(1)).toBe(-5);
  });

  it('reports NaN figures when empty and rejects bad input', () => {
    const s = new Samples();
    expect(Number.isNaN(s.summary().p50)).toBe(true);
    expect(() => s.add(Number.NaN)).toThrow(RangeError);
    expect(() => s.add(Infinity)).toThrow(RangeError);
    expect(() => s.percentile(101)).toThrow(RangeError);
    expect(() => new Samples(0)).toThrow(RangeError);
  });

  it('rounds summaries for the result files', () => {
    const s = new Samples();
    s.add(1.23456);
    expect(roundSummary(s.summary(), 2).p50).toBe(1.23);
  });
});
