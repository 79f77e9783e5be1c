// Mutation check of the checkers: handcrafted bad histories must be rejected
// with the right invariant, and good histories (including the legal corner
// cases of Raft) must pass, so the simulation cannot pass by checking nothing.

import { describe, expect, it } from 'vitest';
import type { Entry, NodeId } from '../../src/raft/types.js';
import {
  convergenceProblem,
  InvariantViolation,
  SafetyChecker,
  type ConvergenceNode,
  type InvariantName,
  type LogView,
} from './invariants.js';

const enc = new TextEncoder();

function entry(index: number, term: number, data = `e${index}.${term}`): Entry {
  return { index, term, kind: 'command', data: enc.encode(data) };
}

/** A log given as the term of each entry, from index 1. */
function logOf(...terms: number[]): LogView {
  return { termAt: (i) => (i === 0 ? 0 : (terms[i - 1] ?? null)), lastIndex: () => terms.length, logStart: () => 0 };
}

/** A log compacted up to `start`, given as the term of each entry from index `start` (its snapshot's term) on. */
function compactedLogOf(start: number, ...terms: number[]): LogView {
  return {
    termAt: (i) => (i < start ? null : (terms[i - start] ?? null)),
    lastIndex: () => start + terms.length - 1,
    logStart: () => start,
  };
}

function violation(invariant: InvariantName, history: (c: SafetyChecker) => void): InvariantViolation {
  const checker = new SafetyChecker(() => '  seed=99 step=7\n  replay: VERA_SIM_SEED=99 npx vitest run test/sim');
  let caught: unknown = null;
  try {
    history(checker);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(InvariantViolation);
  const v = caught as InvariantViolation;
  expect(v.invariant).toBe(invariant);
  return v;
}

function passes(history: (c: SafetyChecker) => void): void {
  expect(() => history(new SafetyChecker())).not.toThrow();
}

/** Apply entries 1..n of `terms` on `node`. */
function applyAll(c: SafetyChecker, node: NodeId, ...terms: number[]): void {
  terms.forEach((t, i) => c.observeApply(node, entry(i + 1, t)));
}

describe('election safety', () => {
  it('rejects two leaders in one term', () => {
    violation('electionSafety', (c) => {
      c.observeLeader('n1', 3, null);
      c.observeLeader('n2', 3, null);
    });
  });

  it('accepts one leader per term, seen many times, and different leaders in different terms', () => {
    passes((c) => {
      c.observeLeader('n1', 3, null);
      c.observeLeader('n1', 3, logOf(1, 3));
      c.observeLeader('n2', 4, null);
    });
  });
});

describe('log matching', () => {
  it('rejects the same (index, term) with different content', () => {
    violation('logMatching', (c) => {
      c.observeEntries('n1', 0, 0, [entry(1, 1, 'x')]);
      c.observeEntries('n2', 0, 0, [entry(1, 1, 'y')]);
    });
  });

  it('rejects logs that agree at (index, term) but not on the entry before', () => {
    violation('logMatching', (c) => {
      c.observeEntries('n1', 1, 1, [entry(2, 3)]);
      c.observeEntries('n2', 1, 2, [entry(2, 3)]);
    });
  });

  it('rejects a term going down along a log, and a gap', () => {
    violation('logMatching', (c) => c.observeEntries('n1', 0, 0, [entry(1, 2), entry(2, 1)]));
    violation('logMatching', (c) => c.observeEntries('n1', 0, 0, [entry(1, 1), entry(3, 1)]));
  });

  it('accepts a conflicting suffix of another term at the same indexes', () => {
    passes((c) => {
      c.observeEntries('n1', 1, 1, [entry(2, 2), entry(3, 2)]);
      c.observeEntries('n2', 1, 1, [entry(2, 3), entry(3, 3)]);
      c.observeEntries('n3', 1, 1, [entry(2, 2)]);
      c.observeEntries('n3', 2, null, [entry(3, 2)]);
    });
  });
});

describe('state machine safety and apply order', () => {
  it('rejects two nodes applying different entries at one index', () => {
    violation('stateMachineSafety', (c) => {
      applyAll(c, 'n1', 1, 2);
      applyAll(c, 'n2', 1, 3);
    });
  });

  it('rejects the same index and term with different content', () => {
    violation('stateMachineSafety', (c) => {
      c.observeApply('n1', entry(1, 1, 'a'));
      c.observeApply('n2', entry(1, 1, 'b'));
    });
  });

  it('rejects a gap and a re-application', () => {
    violation('applyOrder', (c) => {
      c.observeApply('n1', entry(1, 1));
      c.observeApply('n1', entry(3, 1));
    });
    violation('applyOrder', (c) => {
      c.observeApply('n1', entry(1, 1));
      c.observeApply('n1', entry(1, 1));
    });
  });
});

describe('leader completeness', () => {
  it('rejects a later leader that lacks a committed entry', () => {
    const v = violation('leaderCompleteness', (c) => {
      c.observeLeader('n1', 2, logOf(1, 2));
      applyAll(c, 'n1', 1, 2);
      c.observeLeader('n2', 3, logOf(1, 1));
    });
    expect(v.message).toContain('index 2');
  });

  it('accepts a leader of a term between the entry term and its commit term that lacks it (Raft figure 8)', () => {
    passes((c) => {
      // (2, term 2) was appended in term 2 but not committed; n2 led term 3 without it;
      // n1 led term 4 and committed it through an entry of term 4.
      c.observeLeader('n2', 3, logOf(1));
      c.observeLeader('n1', 4, logOf(1, 2, 4));
      applyAll(c, 'n1', 1, 2, 4);
      c.observeLeader('n3', 5, logOf(1, 2, 4));
    });
  });
});

describe('acknowledged writes', () => {
  it('rejects a later leader that lacks an acknowledged write', () => {
    violation('acknowledgedWriteLost', (c) => {
      c.observeLeader('n1', 2, logOf(1, 2));
      c.observeAcknowledged('n1', entry(2, 2));
      c.observeLeader('n2', 3, logOf(1, 3));
    });
  });

  it('rejects an acknowledgement that contradicts what was committed there', () => {
    violation('acknowledgedWriteLost', (c) => {
      applyAll(c, 'n1', 1, 1);
      c.observeAcknowledged('n2', entry(2, 2));
    });
  });

  it('rejects a final log without an acknowledged write', () => {
    violation('acknowledgedWriteLost', (c) => {
      c.observeAcknowledged('n1', entry(1, 1));
      c.checkFinalLogs(new Map([['n2', logOf(2)]]));
    });
  });

  it('rejects a final log without a committed entry', () => {
    violation('leaderCompleteness', (c) => {
      applyAll(c, 'n1', 1, 1);
      c.checkFinalLogs(new Map([['n1', logOf(1, 1)], ['n2', logOf(1)]]));
    });
  });
});

describe('compaction and snapshots', () => {
  /** Apply entries 1..n of `terms` on `node`, recording the state digest after each as `digest(i)`. */
  const applyWithDigests = (c: SafetyChecker, node: NodeId, ...terms: number[]) =>
    terms.forEach((t, i) => {
      c.observeApply(node, entry(i + 1, t));
      c.observeStateDigest(node, i + 1, 1000 + i + 1);
    });

  it('rejects two state machines with different states at one index', () => {
    violation('stateMachineSafety', (c) => {
      c.observeStateDigest('n1', 4, 111);
      c.observeStateDigest('n2', 4, 222);
    });
  });

  it('accepts a snapshot install of a state some node reached, and applying on from it', () => {
    passes((c) => {
      applyWithDigests(c, 'n1', 1, 1, 2, 2);
      c.observeCommit('n2', 1);
      c.observeInstall('n2', 3, 1003);
      c.observeCommit('n2', 3);
      c.observeApply('n2', entry(4, 2));
      c.observeStateDigest('n2', 4, 1004);
    });
  });

  it('rejects a snapshot whose state differs from what the index had, or that no node reached', () => {
    const v = violation('stateMachineSafety', (c) => {
      applyWithDigests(c, 'n1', 1, 1, 2);
      c.observeInstall('n2', 3, 999);
    });
    expect(v.message).toContain('n2 installed a snapshot of index 3 with digest 999, but n1 had 1003 there');
    violation('stateMachineSafety', (c) => {
      applyWithDigests(c, 'n1', 1, 1);
      c.observeInstall('n2', 3, 1003);
    });
  });

  it('rejects a snapshot not beyond the commit index, and one that moves the applied index back', () => {
    violation('snapshotSafety', (c) => {
      applyWithDigests(c, 'n1', 1, 1, 2);
      c.observeCommit('n2', 3);
      c.observeInstall('n2', 3, 1003);
    });
    violation('applyOrder', (c) => {
      applyWithDigests(c, 'n1', 1, 1, 2);
      c.observeApply('n2', entry(1, 1));
      c.observeApply('n2', entry(2, 1));
      c.observeInstall('n2', 1, 1001);
    });
  });

  it('leader completeness looks only at what a leader holds, which must start within its state machine', () => {
    passes((c) => {
      c.observeLeader('n1', 2, logOf(1, 2, 2));
      applyWithDigests(c, 'n1', 1, 2, 2);
      c.observeAcknowledged('n1', entry(2, 2));
      // n1 compacted up to 2 (its state machine holds 1..3) and leads term 3.
      c.observeLeader('n1', 3, compactedLogOf(2, 2, 2));
      c.checkFinalLogs(new Map([['n1', compactedLogOf(2, 2, 2)]]));
    });
    violation('leaderCompleteness', (c) => {
      applyWithDigests(c, 'n1', 1, 2, 2);
      c.observeLeader('n2', 3, compactedLogOf(2, 2, 2)); // n2's state machine holds nothing
    });
    violation('leaderCompleteness', (c) => {
      applyWithDigests(c, 'n1', 1, 2, 2);
      c.observeLeader('n1', 3, compactedLogOf(2, 2, 3)); // the retained part still counts
    });
  });
});

describe('commit index', () => {
  it('rejects a commit index going down', () => {
    violation('commitMonotonic', (c) => {
      c.observeCommit('n1', 5);
      c.observeCommit('n1', 4);
    });
  });

  it('rejects a restart below the durable commit index, and accepts one at it', () => {
    violation('commitMonotonic', (c) => {
      c.observeDurableHardState('n1', { term: 2, vote: 'n1', commit: 5 });
      c.observeRestart('n1');
      c.observeCommit('n1', 3);
    });
    passes((c) => {
      c.observeCommit('n1', 9);
      c.observeDurableHardState('n1', { term: 2, vote: 'n1', commit: 5 });
      c.observeRestart('n1');
      c.observeCommit('n1', 5);
    });
  });

  it('rejects a restart below the applied index', () => {
    violation('commitMonotonic', (c) => {
      applyAll(c, 'n1', 1, 1, 1);
      c.observeRestart('n1');
      c.observeCommit('n1', 2);
    });
  });
});

describe('votes', () => {
  it('rejects two votes by one node in one term', () => {
    violation('voteSafety', (c) => {
      c.observeVoteGranted('n3', 'n1', 4);
      c.observeVoteGranted('n3', 'n2', 4);
    });
  });

  it('rejects a durable vote that changes within a term, and a durable term going down', () => {
    violation('voteSafety', (c) => {
      c.observeDurableHardState('n1', { term: 4, vote: 'n2', commit: 0 });
      c.observeDurableHardState('n1', { term: 4, vote: 'n3', commit: 0 });
    });
    violation('voteSafety', (c) => {
      c.observeDurableHardState('n1', { term: 4, vote: null, commit: 0 });
      c.observeDurableHardState('n1', { term: 3, vote: null, commit: 0 });
    });
  });

  it('accepts re-sent votes and a vote in a new term', () => {
    passes((c) => {
      c.observeVoteGranted('n3', 'n1', 4);
      c.observeVoteGranted('n3', 'n1', 4);
      c.observeVoteGranted('n3', 'n2', 5);
      c.observeDurableHardState('n3', { term: 4, vote: null, commit: 0 });
      c.observeDurableHardState('n3', { term: 4, vote: 'n1', commit: 0 });
      c.observeDurableHardState('n3', { term: 5, vote: 'n2', commit: 0 });
    });
  });
});

describe('linearizable reads', () => {
  it('rejects a read index below what was committed when the read was asked (stale leader)', () => {
    const v = violation('readLinearizable', (c) => {
      applyAll(c, 'n1', 1, 1, 1);
      c.observeReadRequest('n2', 'r1');
      c.observeReadState('n2', { index: 2, context: 'r1' });
    });
    expect(v.message).toContain('index 3 was already committed');
  });

  it('counts commit indexes, not only applied entries', () => {
    violation('readLinearizable', (c) => {
      c.observeCommit('n1', 8);
      c.observeReadRequest('n2', 'r1');
      c.observeReadState('n2', { index: 7, context: 'r1' });
    });
  });

  it('rejects an answer to the wrong node or to an unknown read', () => {
    violation('readLinearizable', (c) => {
      c.observeReadRequest('n2', 'r1');
      c.observeReadState('n3', { index: 0, context: 'r1' });
    });
    violation('readLinearizable', (c) => c.observeReadState('n3', { index: 5, context: 'nobody-asked' }));
  });

  it('accepts a read answered at or above the commit index known when asked', () => {
    passes((c) => {
      c.observeCommit('n1', 8);
      c.observeReadRequest('n2', 'r1');
      c.observeCommit('n1', 12);
      c.observeReadState('n2', { index: 8, context: 'r1' });
    });
  });
});

describe("members' reads answered under a lease", () => {
  it('rejects an answer below what is committed anywhere, or from a leader already superseded', () => {
    const low = violation('leaseSafety', (c) => {
      c.observeCommit('n2', 8);
      c.observeMemberLeaseAnswer('n1', 'n3', 2, 7);
    });
    expect(low.message).toContain("n1 answered n3's read under its lease at index 7, but index 8 was already committed");
    violation('leaseSafety', (c) => {
      c.observeLeader('n1', 2, null);
      c.observeLeader('n2', 3, null);
      c.observeMemberLeaseAnswer('n1', 'n3', 2, 0);
    });
  });

  it('accepts an answer at the highest commit index by the leader of the highest term', () => {
    passes((c) => {
      c.observeLeader('n1', 2, null);
      c.observeCommit('n1', 8);
      c.observeMemberLeaseAnswer('n1', 'n3', 2, 8);
    });
  });
});

describe('violation messages', () => {
  it('carry the invariant, the details, the seed and the replay command', () => {
    const v = violation('electionSafety', (c) => {
      c.observeLeader('n1', 3, null);
      c.observeLeader('n2', 3, null);
    });
    expect(v.message).toContain('electionSafety violated: two leaders in term 3: n1 and n2');
    expect(v.message).toContain('seed=99');
    expect(v.message).toContain('VERA_SIM_SEED=99 npx vitest run test/sim');
  });
});

describe('liveness (convergence)', () => {
  const node = (id: NodeId, patch: Partial<ConvergenceNode> = {}): ConvergenceNode => ({
    id,
    up: true,
    role: id === 'n1' ? 'leader' : 'follower',
    term: 4,
    leader: 'n1',
    commit: 10,
    lastIndex: 10,
    applied: 10,
    digest: 77,
    matchAtLeader: id === 'n1' ? null : 10,
    ...patch,
  });
  const view = (nodes: ConvergenceNode[], pendingCommands = 0, unansweredReads: NodeId[] = []) => ({ nodes, pendingCommands, unansweredReads });

  it('is satisfied by one leader, everything committed and applied everywhere', () => {
    expect(convergenceProblem(view([node('n1'), node('n2'), node('n3')]))).toBeNull();
  });

  it('names what is missing', () => {
    expect(convergenceProblem(view([node('n1'), node('n2', { up: false }), node('n3')]))).toContain('nodes down: n2');
    expect(convergenceProblem(view([node('n1', { role: 'follower' }), node('n2'), node('n3')]))).toContain('0 nodes think they lead');
    expect(convergenceProblem(view([node('n1'), node('n2', { role: 'leader', term: 3 }), node('n3')]))).toContain('2 nodes think they lead');
    expect(convergenceProblem(view([node('n1'), node('n2', { term: 5, leader: null }), node('n3')]))).toContain('not every node follows n1@4');
    expect(convergenceProblem(view([node('n1', { commit: 9 }), node('n2', { commit: 9 }), node('n3')]))).toContain('committed 9 of 10');
    expect(convergenceProblem(view([node('n1'), node('n2', { applied: 7 }), node('n3')]))).toContain('n2 at 7');
    expect(convergenceProblem(view([node('n1'), node('n2', { digest: 5 }), node('n3')]))).toContain('state machines differ');
    expect(convergenceProblem(view([node('n1'), node('n2'), node('n3')], 2))).toContain('2 client commands');
    expect(convergenceProblem(view([node('n1'), node('n2'), node('n3')], 0, ['n3']))).toContain('reads not answered on n3');
    expect(convergenceProblem(view([node('n1'), node('n2', { matchAtLeader: 4 }), node('n3')]))).toContain('n2 matched to 4');
  });

  it('without caughtUp, tolerates a lagging replica but nothing else', () => {
    expect(convergenceProblem(view([node('n1'), node('n2', { applied: 7, digest: 5, matchAtLeader: 1 }), node('n3')]), false)).toBeNull();
    expect(convergenceProblem(view([node('n1'), node('n2'), node('n3')], 1), false)).toContain('1 client commands');
    expect(convergenceProblem(view([node('n1', { commit: 9 }), node('n2'), node('n3')]), false)).toContain('committed 9 of 10');
  });
});
