// The drain's pacer: it starts at the least batch, whose steps measure the fixed part of a
// step; it grows the batch while steps take little past that and halves it when they take
// more than the target; a step at the least batch now and then measures the fixed part
// again; after each step it pauses at least as long as the step took, or longer when the
// rate asks.
import { describe, expect, it } from 'vitest';
import { DRAIN_PACING, DrainPacer } from '../../../src/families/assign/client-drain-pacing.js';

function pacer(maxBatch: number, rate: number): { p: DrainPacer; advance: (ms: number) => void } {
  let now = 1_000;
  const p = new DrainPacer(maxBatch, rate, { targetHoldMs: 10, gap: 1, minBatch: 10 }, () => now);
  return { p, advance: (ms) => (now += ms) };
}

/** Steps whose time is `fixedMs` plus `perUserMs` per user of the batch; the batches run. */
function run(p: DrainPacer, steps: number, fixedMs: number, perUserMs: number): number[] {
  const batches: number[] = [];
  for (let i = 0; i < steps; i++) {
    batches.push(p.batch);
    p.record(fixedMs + perUserMs * p.batch, p.batch);
  }
  return batches;
}

describe('DrainPacer', () => {
  it('starts at the least batch with no wait', () => {
    const { p } = pacer(100, 5_000);
    expect(p.batch).toBe(10);
    expect(p.nextWaitMs()).toBe(0);
  });

  it('grows the batch while a step takes little past the least batch, up to the most', () => {
    const { p } = pacer(100, 1_000_000);
    const batches = run(p, 40, 4, 0.01); // 100 users hold 1 ms
    expect(batches.slice(0, 5)).toEqual([10, 13, 17, 22, 28]);
    expect(batches.at(-1)).toBe(100);
  });

  it('settles where the hold past the least batch stays within the target', () => {
    const { p } = pacer(100, 1_000_000);
    const batches = run(p, 60, 4, 0.2); // 0.2 ms per user: the target of 10 ms is 50 users past the least
    const settled = batches.slice(-20).filter((b) => b !== 10); // probes aside
    for (const b of settled) expect((b - 10) * 0.2).toBeLessThanOrEqual(10);
    expect(Math.max(...settled)).toBeGreaterThan(10 + 5 / 0.2 - 1); // grew at least to half the target
  });

  it('halves the batch when steps take more than the target past the fixed part, never below the least', () => {
    const { p } = pacer(100, 1_000_000);
    run(p, 41, 4, 0.01); // the 41st step is a probe at the least batch
    expect(p.batch).toBe(100);
    const seen: number[] = [];
    for (let i = 0; i < 8; i++) {
      p.record(40, p.batch); // 36 ms past the fixed part
      seen.push(p.batch);
    }
    // The first slow step is one of three (noise); from the second on, each halves.
    expect(seen.slice(0, 5)).toEqual([100, 50, 25, 12, 10]);
    expect(Math.min(...seen)).toBe(10);
  });

  it('takes one slow step among quick ones for noise: the median of the last three decides', () => {
    const { p } = pacer(100, 1_000_000);
    run(p, 41, 4, 0.01);
    expect(p.batch).toBe(100);
    p.record(60, 100); // one slow step
    expect(p.batch).toBe(100);
    p.record(60, 100); // two of three slow: halved
    expect(p.batch).toBe(50);
  });

  it('measures the fixed part again with a step at the least batch now and then', () => {
    const { p } = pacer(100, 1_000_000);
    const batches = run(p, 60, 4, 0.01);
    const grownAt = batches.indexOf(100);
    expect(batches.slice(grownAt).filter((b) => b === 10).length).toBeGreaterThan(0);
  });

  it('leaves the log free after a step at least as long as the step took', () => {
    const { p, advance } = pacer(100, 1_000_000);
    advance(30);
    p.record(30, 10);
    expect(p.nextWaitMs()).toBe(30);
  });

  it('waits longer when the rate asks for it', () => {
    const { p, advance } = pacer(100, 100);
    advance(5);
    p.record(5, 10); // 10 users at 100 a second: the next step 100 ms after the start
    expect(p.nextWaitMs()).toBe(95);
  });

  it('never runs a batch above the most, even when the least is larger', () => {
    const small = new DrainPacer(4, 1_000, DRAIN_PACING, () => 0);
    expect(small.batch).toBe(4);
    small.record(1, 4);
    small.record(1, 4);
    expect(small.batch).toBe(4);
  });
});
