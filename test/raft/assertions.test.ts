// The core crashes loudly on a transition it must never make, rather than going
// on and diverging later. Most of these are unreachable through the public
// inputs (that is the point); these cases reach the ones a misbehaving driver can.
import { describe, expect, it } from 'vitest';
import { assert, RaftSafetyError } from '../../src/raft/assert.js';
import { RaftNode } from '../../src/raft/core.js';

function loneVoter(): RaftNode {
  return new RaftNode(
    { id: 'n1', electionTicks: 10, heartbeatTicks: 1, random: { int: () => 0 }, maxInflightMessages: 8, maxInflightBytes: 1 << 20, maxMessageBytes: 1 << 20 },
    { hardState: { term: 0, vote: null, commit: 0 }, snapshot: { index: 0, term: 0, config: { voters: ['n1'], learners: [] } }, entries: [], applied: 0 },
  );
}

describe('core assertions', () => {
  it('assert throws a RaftSafetyError with the message, built lazily', () => {
    expect(() => assert(false, () => 'commit 7 past last index 5')).toThrow(new RaftSafetyError('commit 7 past last index 5'));
    let built = 0;
    assert(true, () => `never ${++built}`);
    expect(built).toBe(0);
  });

  it('advance() without an outstanding ready() is refused', () => {
    const node = loneVoter();
    node.tick(); // a lone voter leads itself at once
    const rd = node.ready();
    node.advance(rd);
    expect(() => node.advance(rd)).toThrow(RaftSafetyError);
  });

  it('a Ready whose committed entries are applied twice is refused', () => {
    const node = loneVoter();
    node.tick();
    let rd = node.ready();
    node.advance(rd);
    expect(node.status().role).toBe('leader');
    rd = node.ready(); // the noop, committed now that it is persisted
    expect(rd.committedEntries.length).toBeGreaterThan(0);
    node.advance(rd);
    // A driver that replays the same committed entries is caught, not applied twice.
    const replay = { ...node.ready(), committedEntries: rd.committedEntries };
    expect(() => node.advance(replay)).toThrow(/out of order/);
  });
});
