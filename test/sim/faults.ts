// The shapes of the faults the simulator injects: which links a partition cuts,
// and which single-server membership change a leader proposes. Pure choices from
// the fault generator; the cluster applies them.

import type { ConfigChange, NodeId, Status } from '../../src/raft/types.js';
import type { SimRandom } from './random.js';

export interface PartitionShape {
  readonly label: string;
  /** Directed links to cut: [from, to]. */
  readonly links: ReadonlyArray<readonly [NodeId, NodeId]>;
}

/** A random partition: an isolated node, a split, one dead direction of a link, or a deaf/mute node. */
export function randomPartition(r: SimRandom, ids: readonly NodeId[]): PartitionShape {
  const links: Array<[NodeId, NodeId]> = [];
  const a = r.pick(ids);
  switch (r.int(4)) {
    case 0:
      for (const b of ids) if (b !== a) links.push([a, b], [b, a]);
      return { label: `isolate ${a}`, links };
    case 1: {
      const side = ids.filter(() => r.chance(0.5));
      const other = ids.filter((id) => !side.includes(id));
      for (const x of side) for (const y of other) links.push([x, y], [y, x]);
      return { label: `split [${side.join(',')}] | [${other.join(',')}]`, links };
    }
    case 2: {
      const b = r.pick(ids.filter((id) => id !== a));
      return { label: `one-way ${a} -/-> ${b}`, links: [[a, b]] };
    }
    default: {
      const deaf = r.chance(0.5);
      for (const b of ids) if (b !== a) links.push(deaf ? [b, a] : [a, b]);
      return { label: deaf ? `${a} cannot receive` : `${a} cannot send`, links };
    }
  }
}

export interface MembershipLimits {
  /** Voters never drop below this (a removal needs more). */
  readonly minVoters: number;
  /** A learner is added only while voters are at most this many. */
  readonly maxVoters: number;
}

/**
 * A membership change for `leader` (its status) to propose, or null: add a learner from
 * `outsiders` (spares or idle nodes), promote a learner once it has caught up (its match
 * reached the commit index, "promoted once caught up"), or remove a voter (possibly the
 * leader itself) or, sometimes, a learner.
 */
export function randomMembershipChange(
  r: SimRandom,
  leader: Status,
  outsiders: readonly NodeId[],
  limits: MembershipLimits,
): ConfigChange | null {
  const { voters, learners } = leader.config;
  const choices: ConfigChange[] = [];
  for (const id of learners) {
    if ((leader.progress[id]?.match ?? 0) >= leader.commit) choices.push({ type: 'promote', node: id });
  }
  if (outsiders.length > 0 && voters.length < limits.maxVoters) choices.push({ type: 'addLearner', node: r.pick(outsiders) });
  if (voters.length > limits.minVoters) choices.push({ type: 'remove', node: r.pick(voters) });
  if (learners.length > 0 && r.chance(0.2)) choices.push({ type: 'remove', node: r.pick(learners) });
  return choices.length === 0 ? null : r.pick(choices);
}
