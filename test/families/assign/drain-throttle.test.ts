// The serving member's spacing of drain steps (src/families/assign/drain-throttle.ts), on an
// injected clock: the waits it asks for are compared exactly with the step times it saw.
import { describe, expect, it } from 'vitest';
import { DrainThrottle, type ThrottleClock } from '../../../src/families/assign/drain-throttle.js';

function fakeClock(): ThrottleClock & { t: number; waits: number[] } {
  const clock = {
    t: 1000,
    waits: [] as number[],
    now: () => clock.t,
    sleep: async (ms: number, cancelled: AbortSignal) => {
      clock.waits.push(ms);
      if (!cancelled.aborted) clock.t += ms;
    },
  };
  return clock;
}

describe('the drain throttle', () => {
  it('starts a step no sooner than GAP times the last step past its end', async () => {
    const clock = fakeClock();
    const throttle = new DrainThrottle(2, clock);
    const starts: number[] = [];
    const step = (ms: number) => async (): Promise<number> => {
      starts.push(clock.t);
      clock.t += ms;
      return ms;
    };
    expect(await throttle.run(step(10))).toBe(10);
    expect(await throttle.run(step(30))).toBe(30);
    // The caller came back 5 ms after the second step ended: it waits the rest of 60.
    clock.t += 5;
    await throttle.run(step(1));
    expect(starts).toEqual([1000, 1030, 1120]);
    expect(clock.waits).toEqual([20, 55]);
  });

  it('runs steps queued at once one after another, each after the gap of the one before, a failed one too', async () => {
    const clock = fakeClock();
    const throttle = new DrainThrottle(1, clock);
    const log: string[] = [];
    const step = (name: string, ms: number, fail = false) => async (): Promise<string> => {
      log.push(`${name} starts ${clock.t}`);
      await Promise.resolve();
      clock.t += ms;
      log.push(`${name} ends ${clock.t}`);
      if (fail) throw new Error(`${name} failed`);
      return name;
    };
    const results = await Promise.allSettled([throttle.run(step('a', 10, true)), throttle.run(step('b', 20)), throttle.run(step('c', 5))]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect(log).toEqual(['a starts 1000', 'a ends 1010', 'b starts 1020', 'b ends 1040', 'c starts 1060', 'c ends 1065']);
  });

  it('lets every wait end at once when closed', async () => {
    const clock = fakeClock();
    const throttle = new DrainThrottle(100, clock);
    await throttle.run(async () => {
      clock.t += 10;
    });
    throttle.close();
    let ran = false;
    await throttle.run(async () => {
      ran = true;
    });
    expect(ran).toBe(true);
    expect(clock.t).toBe(1010);
  });
});
