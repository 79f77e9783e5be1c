// Cluster membership: who votes, who only listens, and how one change applies.
// Changes are single-member and one at a time (Raft thesis §4.1), and take effect
// when the entry is applied, as etcd-io/raft does.

import type { ClusterConfig, ConfigChange, NodeId } from './types.js';

export class ConfigChangeError extends Error {
  override readonly name = 'ConfigChangeError';
}

export function isVoter(config: ClusterConfig, id: NodeId): boolean {
  return config.voters.includes(id);
}

export function members(config: ClusterConfig): NodeId[] {
  return [...config.voters, ...config.learners];
}

/** Smallest number of voters that forms a majority. */
export function quorumSize(config: ClusterConfig): number {
  return Math.floor(config.voters.length / 2) + 1;
}

/**
 * The highest index replicated on a majority of voters, given each voter's match
 * index (missing voters count as 0).
 */
export function committedIndex(config: ClusterConfig, match: (id: NodeId) => number): number {
  const matches = config.voters.map(match).sort((a, b) => b - a);
  return matches[quorumSize(config) - 1] ?? 0;
}

export type VoteOutcome = 'won' | 'lost' | 'pending';

export function tallyVotes(config: ClusterConfig, votes: ReadonlyMap<NodeId, boolean>): VoteOutcome {
  let granted = 0;
  let rejected = 0;
  for (const id of config.voters) {
    const v = votes.get(id);
    if (v === true) granted++;
    else if (v === false) rejected++;
  }
  const q = quorumSize(config);
  if (granted >= q) return 'won';
  if (rejected > config.voters.length - q) return 'lost';
  return 'pending';
}

/** The configuration after `change`; throws ConfigChangeError when the change makes no sense. */
export function applyConfigChange(config: ClusterConfig, change: ConfigChange): ClusterConfig {
  const { node } = change;
  const voter = config.voters.includes(node);
  const learner = config.learners.includes(node);
  switch (change.type) {
    case 'addLearner':
      if (voter || learner) throw new ConfigChangeError(`${node} is already a member`);
      return { voters: config.voters, learners: [...config.learners, node] };
    case 'promote':
      if (!learner) throw new ConfigChangeError(`${node} is not a learner`);
      return { voters: [...config.voters, node], learners: config.learners.filter((n) => n !== node) };
    case 'remove':
      if (!voter && !learner) throw new ConfigChangeError(`${node} is not a member`);
      if (voter && config.voters.length === 1) throw new ConfigChangeError(`cannot remove the last voter ${node}`);
      return { voters: config.voters.filter((n) => n !== node), learners: config.learners.filter((n) => n !== node) };
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeConfigChange(change: ConfigChange): Uint8Array {
  return encoder.encode(JSON.stringify(change));
}

export function decodeConfigChange(data: Uint8Array): ConfigChange {
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(data));
  } catch {
    throw new ConfigChangeError('config entry is not valid JSON');
  }
  if (typeof parsed === 'object' && parsed !== null) {
    const { type, node } = parsed as Record<string, unknown>;
    if ((type === 'addLearner' || type === 'promote' || type === 'remove') && typeof node === 'string' && node.length > 0) {
      return { type, node };
    }
  }
  throw new ConfigChangeError('config entry is not a config change');
}
