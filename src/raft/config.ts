// Cluster membership: who votes, who only listens, and how one change applies.
// Changes are single-member and one at a time (Raft thesis §4.1), and take effect
// when the entry is applied, as etcd-io/raft does.
//
// A config entry may carry more than the core needs (see MemberChange): the new
// member's addresses, and the configuration and address book just before the
// change. The core reads only `type`, `node` and, on a node that has no voters
// yet (a member that joined with an empty store), `base`.

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

/**
 * The configuration after `change`; throws ConfigChangeError when the change makes no sense.
 *
 * A node whose configuration has no voters has never seen the cluster's initial
 * configuration: it joined with an empty store and replays the log from its
 * start, while the bootstrap configuration lives only in the other members'
 * snapshot meta at index 0. For such a node the change starts from the `base` the
 * proposing leader recorded. Every other node ignores `base`: its own
 * configuration is already the one in force at this entry (a leader proposes a
 * change only after applying every earlier one), and applying changes in log
 * order cannot be misled by a base read at the wrong moment.
 */
export function applyConfigChange(config: ClusterConfig, change: ConfigChange | MemberChange): ClusterConfig {
  const base = 'base' in change ? change.base : undefined;
  if (config.voters.length === 0 && base !== undefined) config = base;
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

// ---------------------------------------------------------------- what a config entry carries

/** Where a member listens: its peer port (other members dial it) and its client port. */
export interface MemberAddress {
  readonly host: string;
  readonly peerPort: number;
  readonly clientPort: number;
}

/** One line of the replicated address book; `address` is null for a member added without one. */
export interface BookEntry {
  readonly id: NodeId;
  readonly address: MemberAddress | null;
}

/**
 * A ConfigChange as the server proposes it. The extra fields are optional, so a
 * plain ConfigChange (the simulator's) is a MemberChange too.
 */
export type MemberChange = ConfigChange & {
  /** addLearner: where the new member listens. */
  readonly address?: MemberAddress;
  /** The configuration in force just before the change, as the proposing leader applied it. */
  readonly base?: ClusterConfig;
  /** The address book just before the change (one line per member of `base`). */
  readonly book?: readonly BookEntry[];
};

/** Member ids: what `--id` accepts; short, printable and safe in keys, URLs and logs. */
export const MEMBER_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

const HOST_PATTERN = /^[A-Za-z0-9.:-]{1,253}$/;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** JSON of the change, fields in a fixed order so equal changes encode to equal bytes. */
export function encodeConfigChange(change: ConfigChange | MemberChange): Uint8Array {
  const c = change as MemberChange;
  const out: Record<string, unknown> = { type: c.type, node: c.node };
  if (c.address !== undefined) out.address = addressFields(c.address);
  if (c.base !== undefined) out.base = { voters: [...c.base.voters], learners: [...c.base.learners] };
  if (c.book !== undefined) out.book = c.book.map((b) => ({ id: b.id, address: b.address === null ? null : addressFields(b.address) }));
  return encoder.encode(JSON.stringify(out));
}

/**
 * The change an entry holds. Anything malformed, the optional fields included,
 * throws ConfigChangeError, which every node treats alike: the entry changes nothing.
 */
export function decodeConfigChange(data: Uint8Array): MemberChange {
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(data));
  } catch {
    throw new ConfigChangeError('config entry is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigChangeError('config entry is not a config change');
  const { type, node, address, base, book } = parsed as Record<string, unknown>;
  if (!(type === 'addLearner' || type === 'promote' || type === 'remove') || typeof node !== 'string' || node.length === 0) {
    throw new ConfigChangeError('config entry is not a config change');
  }
  const change: { -readonly [K in keyof MemberChange]: MemberChange[K] } = { type, node };
  if (address !== undefined) {
    if (type !== 'addLearner') throw new ConfigChangeError(`a ${type} change carries no address`);
    change.address = checkAddress(address, `address of ${node}`);
  }
  if (base !== undefined) change.base = checkConfig(base);
  if (book !== undefined) change.book = checkBook(book);
  return change;
}

/** What is wrong with `value` as a member address, or null. */
export function addressProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'must be an object {host, peerPort, clientPort}';
  const { host, peerPort, clientPort } = value as Record<string, unknown>;
  if (typeof host !== 'string' || !HOST_PATTERN.test(host)) return `has an invalid host ${JSON.stringify(host)}`;
  for (const [name, port] of [['peerPort', peerPort], ['clientPort', clientPort]] as const) {
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) return `has an invalid ${name} ${JSON.stringify(port)}`;
  }
  return null;
}

function checkAddress(value: unknown, what: string): MemberAddress {
  const problem = addressProblem(value);
  if (problem !== null) throw new ConfigChangeError(`${what} ${problem}`);
  return addressFields(value as MemberAddress);
}

function addressFields(a: MemberAddress): MemberAddress {
  return { host: a.host, peerPort: a.peerPort, clientPort: a.clientPort };
}

function checkIds(value: unknown, what: string): NodeId[] {
  if (!Array.isArray(value) || !value.every((id) => typeof id === 'string' && id.length > 0)) {
    throw new ConfigChangeError(`${what} must be an array of member ids`);
  }
  return [...(value as string[])];
}

function checkConfig(value: unknown): ClusterConfig {
  if (typeof value !== 'object' || value === null) throw new ConfigChangeError('base must be {voters, learners}');
  const { voters, learners } = value as Record<string, unknown>;
  const config = { voters: checkIds(voters, 'base.voters'), learners: checkIds(learners, 'base.learners') };
  const all = members(config);
  if (new Set(all).size !== all.length) throw new ConfigChangeError('base lists a member twice');
  if (config.voters.length === 0) throw new ConfigChangeError('base has no voters');
  return config;
}

function checkBook(value: unknown): BookEntry[] {
  if (!Array.isArray(value)) throw new ConfigChangeError('book must be an array');
  const seen = new Set<NodeId>();
  return value.map((line: unknown) => {
    if (typeof line !== 'object' || line === null) throw new ConfigChangeError('book lines must be objects');
    const { id, address } = line as Record<string, unknown>;
    if (typeof id !== 'string' || id.length === 0 || seen.has(id)) throw new ConfigChangeError('book lines need distinct member ids');
    seen.add(id);
    return { id, address: address === null ? null : checkAddress(address, `book address of ${id}`) };
  });
}
