// fast-check generators of valid Raft messages, shared by the codec and split tests.

import fc from 'fast-check';
import type { AppendRequest, Entry, EntryKind, Message } from '../../src/raft/types.js';

const MAX = Number.MAX_SAFE_INTEGER;

export const nodeIdArb: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('n1', 'n2', 'n3'),
  fc.string({ minLength: 1, maxLength: 20 }),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }),
  fc.constant('x'.repeat(255)), // the longest allowed id
);

export const uintArb: fc.Arbitrary<number> = fc.oneof(fc.nat(1000), fc.maxSafeNat(), fc.constant(MAX));
const contextArb = fc.oneof(fc.constant(''), fc.string({ maxLength: 30 }), fc.constant('c'.repeat(1024)));
const bytesArb = fc.uint8Array({ maxLength: 64 });
const kindArb: fc.Arbitrary<EntryKind> = fc.constantFrom('noop', 'command', 'config');

/** A well-formed append: entries contiguous after prevIndex, terms non-decreasing and within the message term. */
export function appendArb(options: { maxEntries?: number; maxData?: number } = {}): fc.Arbitrary<AppendRequest> {
  const { maxEntries = 8, maxData = 64 } = options;
  return fc
    .record({
      from: nodeIdArb,
      to: nodeIdArb,
      term: fc.oneof(fc.nat(50), fc.integer({ min: 0, max: MAX })),
      prevIndex: fc.oneof(fc.constant(0), fc.nat(1000), fc.integer({ min: 1, max: MAX - 1000 })),
      commit: uintArb,
      count: fc.nat(maxEntries),
    })
    .chain(({ from, to, term, prevIndex, commit, count }) =>
      fc
        .record({
          prevTerm: prevIndex === 0 ? fc.constant(0) : fc.integer({ min: 0, max: term }),
          raw: fc.array(fc.record({ kind: kindArb, data: fc.uint8Array({ maxLength: maxData }), bump: fc.nat(3) }), {
            minLength: count,
            maxLength: count,
          }),
        })
        .map(({ prevTerm, raw }) => {
          let t = prevTerm;
          const entries: Entry[] = raw.map((r, i) => {
            t = Math.min(term, t + r.bump);
            return { index: prevIndex + 1 + i, term: t, kind: r.kind, data: r.data };
          });
          return { type: 'app' as const, from, to, term, prevIndex, prevTerm, entries, commit };
        }),
    );
}

export const messageArb: fc.Arbitrary<Message> = fc.oneof(
  fc.record({
    type: fc.constantFrom('vote' as const, 'preVote' as const),
    from: nodeIdArb,
    to: nodeIdArb,
    term: uintArb,
    lastLogIndex: uintArb,
    lastLogTerm: uintArb,
    transfer: fc.boolean(),
  }),
  fc.record({
    type: fc.constantFrom('voteResp' as const, 'preVoteResp' as const),
    from: nodeIdArb,
    to: nodeIdArb,
    term: uintArb,
    reject: fc.boolean(),
  }),
  appendArb(),
  fc.record({
    type: fc.constant('appResp' as const),
    from: nodeIdArb,
    to: nodeIdArb,
    term: uintArb,
    index: uintArb,
    reject: fc.boolean(),
    hintIndex: uintArb,
    hintTerm: uintArb,
  }),
  fc.record({ type: fc.constant('heartbeat' as const), from: nodeIdArb, to: nodeIdArb, term: uintArb, commit: uintArb, context: contextArb }),
  fc.record({ type: fc.constant('heartbeatResp' as const), from: nodeIdArb, to: nodeIdArb, term: uintArb, context: contextArb }),
  fc.record({
    type: fc.constant('snapshot' as const),
    from: nodeIdArb,
    to: nodeIdArb,
    term: uintArb,
    meta: fc.record({
      index: uintArb,
      term: uintArb,
      config: fc.record({ voters: fc.array(nodeIdArb, { maxLength: 5 }), learners: fc.array(nodeIdArb, { maxLength: 3 }) }),
    }),
    offset: uintArb,
    chunk: bytesArb,
    done: fc.boolean(),
    checksum: fc.oneof(fc.constant(''), fc.stringMatching(/^[0-9a-f]{64}$/)),
  }),
  fc.record({ type: fc.constant('timeoutNow' as const), from: nodeIdArb, to: nodeIdArb, term: uintArb }),
  fc.record({ type: fc.constant('readIndex' as const), from: nodeIdArb, to: nodeIdArb, term: uintArb, context: contextArb }),
  fc.record({
    type: fc.constant('readIndexResp' as const),
    from: nodeIdArb,
    to: nodeIdArb,
    term: uintArb,
    context: contextArb,
    index: uintArb,
  }),
);
