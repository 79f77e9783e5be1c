// The journal checker on hand-written evidence: each property it claims to check
// is broken once, so a checker that passes everything cannot let a trial pass.
import { describe, expect, it } from 'vitest';
import { checkJournal, type JournalFinal, type JournalHistory } from './journal-checker.js';

const clean: JournalHistory = {
  adds: [
    { keys: ['a', 'b'], outcome: 'ok' },
    { keys: ['c'], outcome: 'unknown' },
  ],
  claims: [
    { key: 'a', lease: 10, sentAt: 1, ackedAt: 2 },
    { key: 'b', lease: 10, sentAt: 1, ackedAt: 2 },
    { key: 'a', lease: 20, sentAt: 5, ackedAt: 6 },
  ],
  dones: [
    { key: 'a', lease: 10, sentAt: 3, ackedAt: 4, outcome: 'refused' },
    { key: 'b', lease: 10, sentAt: 3, ackedAt: 4, outcome: 'ok' },
    { key: 'a', lease: 20, sentAt: 7, ackedAt: 8, outcome: 'ok' },
  ],
};
const drained: JournalFinal = {
  counts: [
    { member: 'n1', waiting: 0, processing: 0, flagged: 0 },
    { member: 'n2', waiting: 0, processing: 0, flagged: 0 },
  ],
  flagged: new Set(),
};

const problems = (h: JournalHistory, f: JournalFinal = drained): readonly string[] => checkJournal(h, f).problems;

describe('the journal checker', () => {
  it('passes a clean history', () => {
    expect(problems(clean)).toEqual([]);
  });

  it('flags an acknowledged add that was never done nor flagged, but not one done by a call whose answer was lost', () => {
    const lost: JournalHistory = { ...clean, dones: clean.dones.filter((d) => d.key !== 'b') };
    expect(problems(lost)).toEqual([expect.stringContaining('acknowledged add of b was lost')]);
    const maybe: JournalHistory = { ...clean, dones: clean.dones.map((d) => (d.key === 'b' ? { ...d, outcome: 'unknown' as const } : d)) };
    expect(problems(maybe)).toEqual([]);
    expect(problems(lost, { ...drained, flagged: new Set(['b']), counts: drained.counts.map((c) => ({ ...c, flagged: 1 })) })).toEqual([]);
  });

  it('flags a key done twice, and a superseded lease honoured', () => {
    const twice: JournalHistory = { ...clean, dones: clean.dones.map((d) => (d.key === 'a' && d.lease === 10 ? { ...d, outcome: 'ok' as const } : d)) };
    // (Its second claim, sent after the first done was acknowledged, is flagged too.)
    expect(problems(twice)).toContainEqual(expect.stringContaining('a was acknowledged done 2 times'));
    const stale: JournalHistory = {
      ...clean,
      dones: [
        { key: 'b', lease: 10, sentAt: 3, ackedAt: 4, outcome: 'ok' },
        { key: 'a', lease: 10, sentAt: 9, ackedAt: 10, outcome: 'ok' },
      ],
    };
    expect(problems(stale)).toEqual([expect.stringContaining('under lease 10 was honoured though lease 20 had claimed it')]);
  });

  it('flags a delayed job whose claim was answered before its process date, not one answered at it', () => {
    const at = (t: number): JournalHistory => ({ ...clean, delayed: { due: { b: 1000 }, answered: [{ key: 'b', lease: 10, at: t }] } });
    expect(problems(at(1000))).toEqual([]);
    expect(problems(at(999))).toEqual([expect.stringContaining('b reached a worker (lease 10) 1 ms before its process date')]);
  });

  it('flags an item claimed again after its done was acknowledged, and a claim of a key nobody sent', () => {
    const back: JournalHistory = { ...clean, claims: [...clean.claims, { key: 'b', lease: 30, sentAt: 5, ackedAt: 6 }] };
    expect(problems(back)).toEqual([expect.stringContaining('b was claimed again (lease 30)')]);
    const invented: JournalHistory = { ...clean, claims: [...clean.claims, { key: 'zz', lease: 30, sentAt: 5, ackedAt: 6 }] };
    expect(problems(invented)).toEqual([expect.stringContaining('returned zz, which no producer sent')]);
  });

  it('flags members that disagree or still hold items, and a flagged count that is not the list', () => {
    expect(problems(clean, { ...drained, counts: [drained.counts[0]!, { member: 'n2', waiting: 1, processing: 0, flagged: 0 }] })).toEqual([
      expect.stringContaining('members disagree'),
      expect.stringContaining('n2 still holds 1 waiting'),
    ]);
    expect(problems(clean, { ...drained, counts: drained.counts.map((c) => ({ ...c, flagged: 2 })) })).toEqual([expect.stringContaining('counts 2 flagged but lists 0')]);
  });

  it('flags a failing job released past its attempts, done, not flagged at the end, or claimed after a release flagged it', () => {
    const poison: JournalHistory = {
      ...clean,
      adds: [...clean.adds, { keys: ['poison-1'], outcome: 'ok' }],
      claims: [...clean.claims, { key: 'poison-1', lease: 11, sentAt: 1, ackedAt: 2 }, { key: 'poison-1', lease: 12, sentAt: 3, ackedAt: 4 }],
      releases: [
        { key: 'poison-1', lease: 11, sentAt: 2, ackedAt: 3, outcome: 'ok', flagged: false },
        { key: 'poison-1', lease: 12, sentAt: 4, ackedAt: 5, outcome: 'ok', flagged: true },
      ],
      attempts: 2,
    };
    const flaggedAtEnd: JournalFinal = { ...drained, flagged: new Set(['poison-1']), counts: drained.counts.map((c) => ({ ...c, flagged: 1 })) };
    expect(problems(poison, flaggedAtEnd)).toEqual([]);
    expect(problems(poison)).toEqual([expect.stringContaining('acknowledged add of poison-1 was lost'), expect.stringContaining('poison-1, whose handler always fails, did not end flagged')]);
    expect(problems({ ...poison, attempts: 1 }, flaggedAtEnd)).toEqual([expect.stringContaining('poison-1 failed 2 times, past its 1 attempts')]);
    const doneAnyway: JournalHistory = { ...poison, dones: [...poison.dones, { key: 'poison-1', lease: 12, sentAt: 4, ackedAt: 5, outcome: 'ok' }] };
    expect(problems(doneAnyway, flaggedAtEnd)).toContainEqual(expect.stringContaining('poison-1, whose handler always fails, was done'));
    const claimedAfter: JournalHistory = { ...poison, claims: [...poison.claims, { key: 'poison-1', lease: 13, sentAt: 6, ackedAt: 7 }] };
    expect(problems(claimedAfter, flaggedAtEnd)).toEqual([expect.stringContaining('poison-1 was claimed (lease 13) after a release flagged it')]);
  });

  it('flags a removed job claimed after its remove was acknowledged, or a cancelled one done; a removed job is not lost', () => {
    const removed: JournalHistory = { ...clean, dones: clean.dones.filter((d) => d.key !== 'b'), removes: [{ key: 'b', sentAt: 3, ackedAt: 4, outcome: 'ok', status: 'removed' }] };
    expect(problems(removed)).toEqual([]);
    expect(problems({ ...removed, claims: [...removed.claims, { key: 'b', lease: 30, sentAt: 5, ackedAt: 6 }] })).toEqual([expect.stringContaining('b was claimed (lease 30) by a claim sent after its remove')]);
    const cancelled: JournalHistory = { ...clean, removes: [{ key: 'a', sentAt: 6.5, ackedAt: 6.6, outcome: 'ok', status: 'cancelled' }] };
    expect(problems(cancelled)).toEqual([expect.stringContaining('a was cancelled, yet a done under lease 20 sent after it went through')]);
  });

  it('flags a schedule whose ticks are not one distinct job each, or a job off the schedule', () => {
    const schedule = { prefix: 'tick@', everyMs: 500, produced: 2, skipped: 0, lastTick: 1_000_500 };
    const tick = (t: number, lease: number): JournalHistory['claims'][number] => ({ key: `tick@${new Date(t).toISOString()}`, lease, sentAt: 1, ackedAt: 2 });
    const ticked: JournalHistory = { ...clean, claims: [...clean.claims, tick(1_000_000, 40), tick(1_000_500, 41), tick(1_001_000, 42)] };
    expect(problems(ticked, { ...drained, schedule })).toEqual([]);
    // Made twice and merged into one job: the schedule counted one more tick than there are jobs.
    expect(problems(ticked, { ...drained, schedule: { ...schedule, produced: 3 } })).toEqual([expect.stringContaining('counts 3 ticks made up to 1000500, but 2 distinct tick jobs')]);
    expect(problems({ ...ticked, claims: [...ticked.claims, tick(1_000_250, 43)] }, { ...drained, schedule })).toContainEqual(expect.stringContaining('is not a tick of the schedule'));
    // Without the schedule's final, a tick job is a key nobody sent.
    expect(problems(ticked)).toContainEqual(expect.stringContaining('which no producer sent'));
  });

  it('flags a rate window with more claimed than its limit, counting only claims wholly inside one window', () => {
    const rated = (claims: NonNullable<JournalHistory['rated']>['claims']): JournalHistory => ({ ...clean, rated: { max: 4, windowMs: 200, claims } });
    expect(problems(rated([{ items: 3, sentAt: 1000, ackedAt: 1010 }, { items: 1, sentAt: 1100, ackedAt: 1150 }, { items: 4, sentAt: 1150, ackedAt: 1210 }]))).toEqual([]);
    expect(problems(rated([{ items: 3, sentAt: 1000, ackedAt: 1010 }, { items: 2, sentAt: 1100, ackedAt: 1150 }]))).toEqual([expect.stringContaining('5 items were claimed in the rate window starting 1000, over its limit of 4')]);
  });
});
