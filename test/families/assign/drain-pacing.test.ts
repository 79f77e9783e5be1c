// The drain's pacer: a batch that halves while steps take longer than the target and
// grows back while they are quick, and a pause after each step at least as long as it
// took, or longer when the rate asks.
import { describe, expect, it } from 'vitest';
import { DRAIN_PACING, DrainPacer } from '../../../src/families/assign/drain-pacing.js';

function pacer(maxBatch: number, rate: number): { p: DrainPacer; advance: (ms: number) => void } {
  let now = 1_000;
  const p = new DrainPacer(maxBatch, rate, { targetHoldMs: 10, gap: 1, minBatch: 10 }, () => now);
  return { p, advance: (ms) => (now += ms) };
}

describe('DrainPacer', () => {
  it('starts at the full batch with no wait', () => {
    const { p } = pacer(100, 5_000);
    expect(p.batch).toBe(100);
    expect(p.nextWaitMs()).toBe(0);
  });

  it('halves the batch while steps take long past the quickest, never below the least, and grows it back while they are quick', () => {
    const { p } = pacer(100, 1_000_000);
    p.record(4, p.batch); // the quickest step: 4 ms of fixed cost, the batch kept at its most
    expect(p.batch).toBe(100);
    const seen: number[] = [];
    for (let i = 0; i < 5; i++) {
      p.record(25, p.batch); // 21 ms past the quickest: over the 10 ms target
      seen.push(p.batch);
    }
    expect(seen).toEqual([50, 25, 12, 10, 10]);
    for (let i = 0; i < 3; i++) p.record(11, p.batch); // 7 ms past the quickest of the last ten (4 ms): kept
    expect(p.batch).toBe(10);
    const grown: number[] = [];
    for (let i = 0; i < 12; i++) {
      p.record(6, p.batch); // 2 ms past: grows
      grown.push(p.batch);
    }
    // The first quick step leaves the median of three at 11 ms (kept); from the second on, it grows.
    expect(grown.slice(0, 5)).toEqual([10, 13, 17, 22, 28]);
    expect(Math.max(...grown)).toBe(100);
    expect(grown.at(-1)).toBe(100);
  });

  it('leaves the log free after a step at least as long as the step took', () => {
    const { p, advance } = pacer(100, 1_000_000);
    advance(30);
    p.record(30, 10);
    expect(p.nextWaitMs()).toBe(30);
  });

  it('takes one slow step among quick ones for noise: the median of the last three decides', () => {
    const { p } = pacer(100, 1_000_000);
    p.record(4, 100);
    p.record(5, 100);
    p.record(60, 100); // one step 56 ms past the quickest: the median (5 ms) is 1 ms past
    expect(p.batch).toBe(100);
    p.record(60, 100); // two of three slow: halved
    expect(p.batch).toBe(50);
  });

  it('takes the fixed part from the last ten steps: once the quick ones are older, slower steps are the new floor', () => {
    const { p } = pacer(100, 1_000_000);
    p.record(4, 100);
    for (let i = 0; i < 9; i++) p.record(30, p.batch); // the cluster got busier: halved while 4 ms is among the last ten
    expect(p.batch).toBe(10);
    p.record(30, p.batch); // the 4 ms step is out of the window: every step 30 ms, no hold past the floor, so it grows back
    expect(p.batch).toBe(13);
  });

  it('waits longer when the rate asks for it', () => {
    const { p, advance } = pacer(100, 100);
    advance(5);
    p.record(5, 100); // 100 users at 100 a second: the next step a second after the start
    expect(p.nextWaitMs()).toBe(995);
  });

  it('never shrinks below the least batch, nor above the most when that is smaller', () => {
    const small = new DrainPacer(4, 1_000, DRAIN_PACING, () => 0);
    small.record(1, 4);
    small.record(1_000, 4);
    small.record(1_000, 4);
    expect(small.batch).toBe(4);
    const large = new DrainPacer(100, 1_000, DRAIN_PACING, () => 0);
    large.record(1, 100);
    large.record(1, 100);
    for (let i = 0; i < 5; i++) large.record(1_000, large.batch);
    expect(large.batch).toBe(DRAIN_PACING.minBatch);
  });
});
