import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeMessages } from '../../src/raft/transport/codec.js';
import { splitAppend } from '../../src/raft/transport/split-append.js';
import type { AppendRequest, Entry } from '../../src/raft/types.js';
import { appendArb } from './arbitraries.js';

function entries(from: number, terms: number[], size: number): Entry[] {
  return terms.map((term, i) => ({ index: from + i, term, kind: 'command', data: new Uint8Array(size).fill(i) }));
}

describe('splitAppend', () => {
  it('splits a big append into consecutive appends with matching prevIndex/prevTerm', () => {
    const m: AppendRequest = {
      type: 'app', from: 'n1', to: 'n2', term: 5, prevIndex: 10, prevTerm: 3, commit: 12,
      entries: entries(11, [3, 4, 4, 5, 5, 5], 1000),
    };
    const pieces = splitAppend(m, 2500);
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.flatMap((p) => p.entries)).toEqual(m.entries);
    expect(pieces[0]).toMatchObject({ prevIndex: 10, prevTerm: 3 });
    for (let i = 1; i < pieces.length; i++) {
      const before = pieces[i - 1]!.entries.at(-1)!;
      expect(pieces[i]).toMatchObject({ prevIndex: before.index, prevTerm: before.term, commit: 12, term: 5, from: 'n1', to: 'n2' });
    }
    for (const p of pieces) expect(encodeMessages([p]).byteLength).toBeLessThanOrEqual(2500);
  });

  it('returns an append that fits, or one with no entries, unchanged', () => {
    const small: AppendRequest = { type: 'app', from: 'n1', to: 'n2', term: 2, prevIndex: 1, prevTerm: 1, commit: 1, entries: entries(2, [2], 10) };
    const empty: AppendRequest = { ...small, entries: [] };
    expect(splitAppend(small, 4096)).toEqual([small]);
    expect(splitAppend(empty, 4096)).toEqual([empty]);
  });

  it('gives an entry too big for any frame a piece of its own', () => {
    const m: AppendRequest = { type: 'app', from: 'n1', to: 'n2', term: 1, prevIndex: 0, prevTerm: 0, commit: 0, entries: entries(1, [1, 1, 1], 5000) };
    const pieces = splitAppend(m, 4096);
    expect(pieces.map((p) => p.entries.map((e) => e.index))).toEqual([[1], [2], [3]]);
  });

  it('always yields valid appends that fit and together carry every entry, in order', () => {
    fc.assert(
      fc.property(appendArb({ maxEntries: 30, maxData: 600 }), fc.integer({ min: 2048, max: 8192 }), (m, max) => {
        const pieces = splitAppend(m, max);
        expect(pieces.flatMap((p) => p.entries)).toEqual(m.entries);
        let prev = { index: m.prevIndex, term: m.prevTerm };
        for (const p of pieces) {
          expect({ index: p.prevIndex, term: p.prevTerm }).toEqual(prev);
          expect(p.commit).toBe(m.commit);
          const size = encodeMessages([p]).byteLength;
          if (p.entries.length > 1) expect(size).toBeLessThanOrEqual(max);
          const last = p.entries.at(-1);
          if (last) prev = { index: last.index, term: last.term };
        }
      }),
      { numRuns: 300 },
    );
  });
});
