// The replicated address book: every member, whether it votes, and where it
// listens, stored under 0x0001 'members' so it survives restarts and travels in
// snapshots. It changes only when a 'config' entry applies, in the same batch as
// the applied index, and mirrors the Raft core's configuration exactly: both
// apply the change with applyConfigChange, and a change the core refuses changes
// nothing here either.

import { internalPropertyKey } from '../keys/index.js';
import { addressProblem, applyConfigChange, ConfigChangeError, type BookEntry, type MemberAddress, type MemberChange } from '../raft/config.js';
import type { ClusterConfig, NodeId } from '../raft/types.js';
import { CorruptValueError, pack, unpack } from './codec.js';

export const MEMBERS_KEY = internalPropertyKey('members');

export interface Member {
  readonly id: NodeId;
  readonly voter: boolean;
  /** null for a member added without an address (it cannot be dialed). */
  readonly address: MemberAddress | null;
}

/**
 * The book a brand-new store starts with: every initial member, all voters. A
 * port 0 ("any free port", for tests of a lone member) is no address others
 * could use, so such a member is recorded without one.
 */
export function initialMembers(members: ReadonlyArray<{ readonly id: NodeId } & MemberAddress>): Member[] {
  return sortById(
    members.map((m) => ({
      id: m.id,
      voter: true,
      address: m.peerPort === 0 || m.clientPort === 0 ? null : { host: m.host, peerPort: m.peerPort, clientPort: m.clientPort },
    })),
  );
}

/** The configuration the book describes. */
export function configOf(members: readonly Member[]): ClusterConfig {
  return { voters: members.filter((m) => m.voter).map((m) => m.id), learners: members.filter((m) => !m.voter).map((m) => m.id) };
}

/** Addresses only, as a config entry carries them. */
export function bookOf(members: readonly Member[]): BookEntry[] {
  return members.map((m) => ({ id: m.id, address: m.address }));
}

/**
 * The book after `change`, or null when the change changes nothing (the core
 * refuses it too). A book with no voters belongs to a member that joined with an
 * empty store: like the core, it starts from the base and book the entry carries.
 */
export function membersAfter(current: readonly Member[], change: MemberChange): Member[] | null {
  const config = configOf(current);
  let after: ClusterConfig;
  try {
    after = applyConfigChange(config, change);
  } catch (err) {
    if (err instanceof ConfigChangeError) return null;
    throw err;
  }
  const addresses = new Map<NodeId, MemberAddress | null>(current.map((m) => [m.id, m.address]));
  if (config.voters.length === 0 && change.base !== undefined) {
    addresses.clear();
    for (const line of change.book ?? []) addresses.set(line.id, line.address);
  }
  if (change.type === 'addLearner') addresses.set(change.node, change.address ?? null);
  const voters = new Set(after.voters);
  return sortById([...after.voters, ...after.learners].map((id) => ({ id, voter: voters.has(id), address: addresses.get(id) ?? null })));
}

export function encodeMembers(members: readonly Member[]): Buffer {
  return pack(
    sortById(members).map((m) => ({
      id: m.id,
      voter: m.voter,
      address: m.address === null ? null : { host: m.address.host, peerPort: m.address.peerPort, clientPort: m.address.clientPort },
    })),
  );
}

export function decodeMembers(bytes: Uint8Array): Member[] {
  const value = unpack(bytes);
  if (!Array.isArray(value)) throw new CorruptValueError('members value is not an array');
  return value.map((line: unknown) => {
    if (typeof line !== 'object' || line === null) throw new CorruptValueError('members line is not a map');
    const { id, voter, address } = line as Record<string, unknown>;
    if (typeof id !== 'string' || id === '' || typeof voter !== 'boolean') throw new CorruptValueError('members line lacks id/voter');
    if (address !== null && addressProblem(address) !== null) throw new CorruptValueError(`members line for ${id} has a bad address`);
    return { id, voter, address: address as MemberAddress | null };
  });
}

function sortById(members: readonly Member[]): Member[] {
  return [...members].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
