import { describe, expect, it } from 'vitest';
import { connectionsFor, runClosedLoop, value128 } from '../lib/load.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('runClosedLoop', () => {
  it('never has more than inFlight operations outstanding and spreads them over the clients', async () => {
    let outstanding = 0;
    let peak = 0;
    const used = new Set<string>();
    const result = await runClosedLoop({
      clients: ['a', 'b'],
      inFlight: 4,
      durationMs: 150,
      warmupMs: 20,
      op: async (client) => {
        used.add(client);
        peak = Math.max(peak, ++outstanding);
        await sleep(5);
        outstanding--;
      },
    });
    expect(peak).toBe(4);
    expect([...used].sort()).toEqual(['a', 'b']);
    expect(result.ops).toBeGreaterThan(10);
    expect(result.latencyMs.p50).toBeGreaterThanOrEqual(4);
    expect(result.opsPerSec).toBeCloseTo((result.ops / result.measuredMs) * 1000);
  });

  it('counts failures apart and stops a run that only fails', async () => {
    let n = 0;
    const mixed = await runClosedLoop({
      clients: [null],
      inFlight: 1,
      durationMs: 60,
      warmupMs: 0,
      errorPauseMs: 1,
      op: async () => {
        await sleep(1);
        if (n++ % 2 === 0) throw new Error('refused');
      },
    });
    expect(mixed.errors).toBeGreaterThan(0);
    expect(mixed.firstError).toBe('refused');
    await expect(
      runClosedLoop({ clients: [null], inFlight: 2, durationMs: 5_000, warmupMs: 0, maxErrors: 5, errorPauseMs: 1, op: () => Promise.reject(new Error('down')) }),
    ).rejects.toThrow(/more than 5 operations failed; first: down/);
  });

  it('keeps the window open until minOps operations completed', async () => {
    // Two rounds of operations take longer than the planned window. The stretch limit is set far
    // out so that a loaded machine's slow timers cannot close the window before minOps: then the
    // count depends only on the order of completions, not on how long the sleeps took.
    const result = await runClosedLoop({ clients: [null], inFlight: 2, durationMs: 50, warmupMs: 0, minOps: 4, maxWindowMs: 60_000, op: () => sleep(30) });
    expect(result.ops).toBe(4);
    expect(result.measuredMs).toBeGreaterThan(50);
  });

  it('rejects nonsense parameters', async () => {
    await expect(runClosedLoop({ clients: [], inFlight: 1, durationMs: 10, warmupMs: 0, op: async () => undefined })).rejects.toThrow(RangeError);
    await expect(runClosedLoop({ clients: [1], inFlight: 0, durationMs: 10, warmupMs: 0, op: async () => undefined })).rejects.toThrow(RangeError);
  });
});

describe('value128 and connectionsFor', () => {
  it('makes 128-byte tagged values', () => {
    const v = value128('s3:100:7:');
    expect(Buffer.byteLength(v)).toBe(128);
    expect(v.startsWith('s3:100:7:')).toBe(true);
    expect(() => value128('x'.repeat(129))).toThrow(RangeError);
  });

  it('uses one connection per operation up to 16', () => {
    expect([1, 16, 256, 1024].map(connectionsFor)).toEqual([1, 16, 16, 16]);
  });
});
