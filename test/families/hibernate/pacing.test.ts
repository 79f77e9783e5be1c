// The spacing of a large unit's freeze and thaw steps (issue 34): each step after
// the first waits a multiple of the time the step before took, within bounds, so
// the steps hold the log a bounded share of the time.
import { describe, expect, it } from 'vitest';
import { FOLLOWER_MARGIN_MS, followersMargin, itemsWithin, StepPacer, STEP_BYTES, STEP_PACING } from '../../../src/families/hibernate/pacing.js';

describe('StepPacer', () => {
  it('runs the first step at once and waits before each later one in proportion to the step before, within bounds', async () => {
    const waits: number[] = [];
    const pacer = new StepPacer({ gap: 2, minMs: 3, maxMs: 40 }, async (ms) => void waits.push(ms));
    let clock = 0;
    const realNow = performance.now.bind(performance);
    performance.now = () => clock;
    try {
      const step = (ms: number): Promise<string> => pacer.step(async () => {
        clock += ms;
        return `took ${ms}`;
      });
      expect(await step(10)).toBe('took 10');
      expect(waits).toEqual([]);
      await step(1); // waits 2 x 10
      await step(100); // waits the least, 3 (2 x 1 is below it)
      await step(5); // waits the most, 40 (2 x 100 is above it)
      expect(waits).toEqual([20, 3, 40]);
      expect(pacer.nextGapMs()).toBe(10);
    } finally {
      performance.now = realNow;
    }
  });

  it('by default, holds the log at most a quarter of the time: each step waits three times as long as the last took', async () => {
    const waits: number[] = [];
    const pacer = new StepPacer(undefined, async (ms) => void waits.push(ms));
    let clock = 0;
    const realNow = performance.now.bind(performance);
    performance.now = () => clock;
    try {
      await pacer.step(async () => void (clock += 10));
      await pacer.step(async () => void (clock += 10));
      expect(waits).toEqual([30]);
    } finally {
      performance.now = realNow;
    }
  });

  it('counts a failed step as a step', async () => {
    const waits: number[] = [];
    const pacer = new StepPacer(STEP_PACING, async (ms) => void waits.push(ms));
    await expect(pacer.step(() => Promise.reject(new Error('no leader')))).rejects.toThrow('no leader');
    await pacer.step(async () => 1);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThanOrEqual(STEP_PACING.minMs);
  });
});

describe('a thaw step\'s size (issue 34: a step holds every member\'s log while its batch is written)', () => {
  it('takes no more entries than fit in STEP_BYTES, nor more than its items, and always at least one', () => {
    const entry = (valueBytes: number): readonly [Buffer, Buffer] => [Buffer.alloc(24), Buffer.alloc(valueBytes)];
    const small = Array.from({ length: 1000 }, () => entry(100));
    const large = Array.from({ length: 1000 }, () => entry(4000));
    expect(itemsWithin(small, 0, 250)).toBe(250); // 124 bytes each: the items' bound
    expect(itemsWithin(large, 10, 250)).toBe(Math.floor(STEP_BYTES / 4024));
    expect(itemsWithin(small, 0, 250, 16 * 1024)).toBe(132);
    expect(itemsWithin(small, 990, 250)).toBe(10); // the unit's end
    expect(itemsWithin([entry(STEP_BYTES * 4), entry(10)], 0, 250)).toBe(1);
  });
});

describe('followersMargin', () => {
  it('waits as long as the leader\'s own work took, at most FOLLOWER_MARGIN_MS, and not at all after none', async () => {
    const waits: number[] = [];
    const sleep = async (ms: number): Promise<void> => void waits.push(ms);
    const now = performance.now();
    await followersMargin(now - 400, sleep);
    await followersMargin(now - 10 * FOLLOWER_MARGIN_MS, sleep);
    await followersMargin(performance.now() + 1, sleep);
    expect(waits).toHaveLength(2);
    expect(waits[0]).toBeGreaterThanOrEqual(400);
    expect(waits[0]).toBeLessThan(400 + FOLLOWER_MARGIN_MS / 2);
    expect(waits[1]).toBe(FOLLOWER_MARGIN_MS);
  });
});
