// Invariants that must hold at a state transition, checked where the transition
// happens and crashing loudly when broken (as etcd-io/raft panics on an
// impossible role change or an out-of-range commit): a broken invariant is a
// bug that would otherwise surface later as divergent replicas. The simulator
// runs the core through these checks on every step, so a violation names its seed.

/** A broken safety invariant of the consensus core: a bug, never bad input. */
export class RaftSafetyError extends Error {
  override readonly name = 'RaftSafetyError';
}

/** Throws a RaftSafetyError saying what should have held. */
export function assert(condition: boolean, what: string | (() => string)): asserts condition {
  if (!condition) throw new RaftSafetyError(typeof what === 'string' ? what : what());
}
