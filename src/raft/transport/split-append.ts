// Splitting a large AppendEntries into frames that fit. Each piece is itself a
// valid Raft append: its prevIndex/prevTerm are the index and term of the entry
// just before it (the previous piece's last entry), and it carries the same
// leader commit, which a follower only applies up to what it has matched. So the
// pieces may be sent, lost or rejected independently and Raft stays correct.

import type { AppendRequest } from '../types.js';
import { estimateEntryBytes, estimateMessageBaseBytes, frameOverheadBytes } from './codec.js';

/**
 * Splits `m` into consecutive appends whose encoded frames each stay within
 * `maxFrameBytes`. A single entry too big for any frame gets a piece of its own
 * (the caller decides what to do with an oversized frame). An append that fits,
 * or has no entries, is returned unchanged as the only piece.
 */
export function splitAppend(m: AppendRequest, maxFrameBytes: number): AppendRequest[] {
  const budget = maxFrameBytes - frameOverheadBytes() - estimateMessageBaseBytes(m);
  const pieces: AppendRequest[] = [];
  let prevIndex = m.prevIndex;
  let prevTerm = m.prevTerm;
  let start = 0;
  let used = 0;
  const cut = (end: number): void => {
    const entries = m.entries.slice(start, end);
    pieces.push({ ...m, prevIndex, prevTerm, entries });
    const last = entries[entries.length - 1]!;
    prevIndex = last.index;
    prevTerm = last.term;
    start = end;
    used = 0;
  };
  m.entries.forEach((e, i) => {
    const size = estimateEntryBytes(e);
    if (i > start && used + size > budget) cut(i);
    used += size;
  });
  if (pieces.length === 0) return [m];
  cut(m.entries.length);
  return pieces;
}
