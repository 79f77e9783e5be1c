// J1's bookkeeping: completions by key (lost, doubled, strangers), lateness, and
// the targets judged from results.
import { describe, expect, it } from 'vitest';
import { CompletionTally, Lateness } from '../journal/tally.js';
import { j1Targets, renderJ1 } from '../journal/report.js';
import { J1_FULL, type J1Result } from '../journal/j1.js';
import { describeFailing, FAILING_QUICK, renderFailing, type FailingResult } from '../journal/failing.js';

describe('CompletionTally', () => {
  it('counts lost, doubly completed and unknown keys, and resolves once every key was handled', async () => {
    const tally = new CompletionTally(['a', 'b', 'c']);
    let all = false;
    const done = tally.allHandled().then(() => (all = true));
    tally.handled('a');
    tally.handled('a');
    tally.handled('zz');
    tally.handled('b');
    await Promise.resolve();
    expect(all).toBe(false);
    expect(tally.handledKeys).toBe(2);
    expect(tally.lost()).toBe(1);
    expect(tally.doubled()).toBe(1);
    expect(tally.strangers()).toBe(1);
    tally.handled('c');
    await done;
    expect(all).toBe(true);
    expect(tally.lost()).toBe(0);
  });
});

describe('Lateness', () => {
  it('is delivery minus due time, early deliveries counted apart', () => {
    const l = new Lateness();
    for (const [due, at] of [[100, 101], [100, 103], [100, 99], [200, 250]] as const) l.delivered(due, at);
    expect(l.summary()).toMatchObject({ count: 4, min: -1, max: 50, early: 1 });
  });
});

function result(system: string, perSec: Record<number, number>, p99 = 5, lost = 0): J1Result {
  return {
    system,
    settings: 's',
    throughput: Object.entries(perSec).map(([w, v]) => ({ workers: Number(w), jobs: 100, seconds: 1, jobsPerSec: v, unfinished: 0, lost, doubled: 0 })),
    lateness: { count: 10, min: 0, mean: 1, p50: 1, p90: 2, p99, p999: p99, max: p99, early: 0, lost: 0 },
    workerDeath: { reofferedAfterMs: 2000, lockMs: 2000 },
    errors: [],
  };
}

describe('J1 targets', () => {
  it('judges 2x pg-boss, at least BullMQ always, lateness p99 and nothing lost, per worker level', () => {
    const targets = j1Targets([
      result('Vera journal', { 1: 400, 16: 3000, 256: 9000 }, 8),
      result('BullMQ (Redis, appendfsync always)', { 1: 500, 16: 2000, 256: 9000 }),
      result('pg-boss (PostgreSQL 15)', { 1: 100, 16: 1600, 256: 4000 }),
    ]);
    const met = Object.fromEntries(targets.map((t) => [t.what, t.met]));
    expect(met['jobs/s at 1 workers >= 2x pg-boss']).toBe(true);
    expect(met['jobs/s at 16 workers >= 2x pg-boss']).toBe(false);
    expect(met['jobs/s at 1 workers >= BullMQ with appendfsync always']).toBe(false);
    expect(met['jobs/s at 256 workers >= BullMQ with appendfsync always']).toBe(true);
    expect(met['delayed-job lateness p99 < 10 ms']).toBe(true);
    expect(met['no lost or doubly completed jobs']).toBe(true);
    expect(j1Targets([result('Vera journal', { 1: 1 }, 12, 1)]).filter((t) => t.met === false).map((t) => t.what)).toEqual([
      'delayed-job lateness p99 < 10 ms',
      'no lost or doubly completed jobs',
    ]);
  });

  it('renders a report naming every system, unmeasured cells as -, and the load it measured', () => {
    const md = renderJ1([result('Vera journal', { 1: 400 }), { ...result('pg-boss (PostgreSQL 15)', {}), lateness: null, workerDeath: null, errors: ['not available'] }], J1_FULL, {
      command: 'npm run bench -- --journal-only',
      seconds: 100,
      resultFile: 'x.json',
    });
    expect(md).toContain('| Vera journal | 400 | - | - |');
    expect(md).toContain('| pg-boss (PostgreSQL 15) | - | - | - |');
    expect(md).toContain('errors: not available');
    expect(md).toContain('unmeasured warm-up of 5,000 jobs at 16 workers');
    expect(md).toContain('20,000 jobs at 16 workers');
    expect(md).toContain('1,000 delayed jobs falling due evenly over 3,000 ms');
  });
});

describe('the failing-handler scenario', () => {
  it('reports handler calls and claims per job against the bound, and what was lost', () => {
    const r: FailingResult = {
      scale: FAILING_QUICK,
      failing: 100,
      calls: 1200,
      callsPerJob: 1.2,
      maxCallsFailing: 3,
      maxCallsSucceeding: 1,
      claims: 1200,
      claimsPerJob: 1.2,
      timeouts: 0,
      releases: 300,
      done: 900,
      flagged: 100,
      lost: 0,
      failingDone: 0,
      seconds: 2.5,
      errors: [],
    };
    expect(describeFailing(r)).toContain('1200 items claimed (1.200 per job; 1.20 if every attempt is a run), 300 releases, 0 timeouts, at most 3 calls per failing job');
    expect(renderFailing(r).join('\n')).toContain('| 1200 | 1.200 | 1200 | 1.200 | 300 | 0 | 3 | 1 | 900 | 100 | 0 | 2.5 |');
  });
});
