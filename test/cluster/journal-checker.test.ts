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
});
