// The vocabulary of the Raft core: entries, hard state, messages and the Ready
// hand-off. Everything here is plain data so it can be persisted with
// MessagePack and carried across a simulated or real network unchanged.

export type NodeId = string;

/** What an entry means to the core. The core never looks inside `data` of a command. */
export type EntryKind =
  | 'noop' // appended by every new leader so entries of earlier terms can commit (paper §5.4.2)
  | 'command' // an opaque state-machine command
  | 'config'; // a membership change; `data` encodes a ConfigChange

export interface Entry {
  readonly index: number;
  readonly term: number;
  readonly kind: EntryKind;
  readonly data: Uint8Array;
}

/** State that must be on stable storage before any message that depends on it leaves the node. */
export interface HardState {
  readonly term: number;
  readonly vote: NodeId | null;
  readonly commit: number;
}

/** Voting members and non-voting learners. Learners receive the log but never count in a quorum. */
export interface ClusterConfig {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
}

export type ConfigChange =
  | { readonly type: 'addLearner'; readonly node: NodeId }
  | { readonly type: 'promote'; readonly node: NodeId }
  | { readonly type: 'remove'; readonly node: NodeId };

/** Where the log begins once a prefix has been compacted into a snapshot. */
export interface SnapshotMeta {
  readonly index: number;
  readonly term: number;
  readonly config: ClusterConfig;
}

export type Role = 'follower' | 'preCandidate' | 'candidate' | 'leader';

/** Volatile state worth reporting; not persisted. */
export interface SoftState {
  readonly role: Role;
  readonly leader: NodeId | null;
}

/** The answer to a ReadIndex request: once `index` is applied locally, a read may be served. */
export interface ReadState {
  readonly index: number;
  readonly context: string;
}

interface MessageBase {
  readonly from: NodeId;
  readonly to: NodeId;
  /** Sender's term. PreVote requests carry the term the sender would campaign in. */
  readonly term: number;
}

export interface VoteRequest extends MessageBase {
  readonly type: 'vote' | 'preVote';
  readonly lastLogIndex: number;
  readonly lastLogTerm: number;
  /** Set when the campaign was started by TimeoutNow: receivers skip their leader-lease check. */
  readonly transfer: boolean;
}

export interface VoteResponse extends MessageBase {
  readonly type: 'voteResp' | 'preVoteResp';
  readonly reject: boolean;
}

export interface AppendRequest extends MessageBase {
  readonly type: 'app';
  readonly prevIndex: number;
  readonly prevTerm: number;
  readonly entries: readonly Entry[];
  readonly commit: number;
}

export interface AppendResponse extends MessageBase {
  readonly type: 'appResp';
  /** On success: the index of the last entry the follower now matches. On reject: prevIndex of the rejected request. */
  readonly index: number;
  readonly reject: boolean;
  /** On reject: the follower's best guess of where the logs may match (fast back-off), and that entry's term. */
  readonly hintIndex: number;
  readonly hintTerm: number;
}

export interface HeartbeatRequest extends MessageBase {
  readonly type: 'heartbeat';
  readonly commit: number;
  /** Non-empty when the heartbeat round confirms leadership for a ReadIndex request. */
  readonly context: string;
}

export interface HeartbeatResponse extends MessageBase {
  readonly type: 'heartbeatResp';
  readonly context: string;
}

/**
 * InstallSnapshot. The core emits one with an empty chunk as a request to its
 * driver ("send `to` a snapshot"); the driver streams the state as chunks
 * (`offset` = bytes before this chunk, `checksum` = sha256 of all chunk bytes, on
 * the last chunk only) and the receiving driver assembles, verifies and installs
 * them before stepping the final message into its core.
 */
export interface SnapshotRequest extends MessageBase {
  readonly type: 'snapshot';
  readonly meta: SnapshotMeta;
  readonly offset: number;
  readonly chunk: Uint8Array;
  readonly done: boolean;
  readonly checksum: string;
}

export interface TimeoutNowRequest extends MessageBase {
  readonly type: 'timeoutNow';
}

/** A follower asking the leader for a read index on behalf of its own client. */
export interface ReadIndexRequest extends MessageBase {
  readonly type: 'readIndex';
  readonly context: string;
}

export interface ReadIndexResponse extends MessageBase {
  readonly type: 'readIndexResp';
  readonly context: string;
  /** 0 when the leader could not serve it (not leader any more); the asker retries. */
  readonly index: number;
}

export type Message =
  | VoteRequest
  | VoteResponse
  | AppendRequest
  | AppendResponse
  | HeartbeatRequest
  | HeartbeatResponse
  | SnapshotRequest
  | TimeoutNowRequest
  | ReadIndexRequest
  | ReadIndexResponse;

export type MessageType = Message['type'];

/**
 * What the core asks its driver to do, in this order:
 *  1. persist `hardState` (if set) and `entries` in ONE synced batch. `entries` may
 *     start at or below the last stored index: stored entries from `entries[0].index`
 *     on are then replaced (a conflicting suffix is truncated);
 *  2. send `messages` (messages of type `app` may be sent before step 1 completes,
 *     see `mayBeSentBeforePersist`);
 *  3. apply `committedEntries` to the state machine, in order;
 *  4. call `advance(ready)`.
 */
export interface Ready {
  readonly softState: SoftState | null; // set when it changed since the last Ready
  readonly hardState: HardState | null; // set when it changed since the last Ready
  readonly entries: readonly Entry[];
  readonly messages: readonly Message[];
  readonly committedEntries: readonly Entry[];
  readonly readStates: readonly ReadState[];
  /**
   * Followers that need a snapshot because the entries they miss were compacted:
   * the driver streams its current state machine to each (see SnapshotRequest) and
   * reports the outcome with reportSnapshot().
   */
  readonly snapshotRequests: readonly SnapshotNeed[];
}

export interface SnapshotNeed {
  readonly to: NodeId;
}

/**
 * Only a leader's AppendEntries may leave before its own log write is synced
 * (Raft thesis §10.2.1): the leader counts itself toward a quorum only after
 * `advance`, so an unsynced entry is never committed on its behalf. Everything
 * else (votes, acknowledgements, campaign requests) promises durable state.
 */
export function mayBeSentBeforePersist(message: Message): boolean {
  return message.type === 'app';
}

/** A source of randomness the driver injects; the core never calls Math.random. */
export interface RandomSource {
  /** An integer in [0, n). */
  int(n: number): number;
}

export interface RaftOptions {
  readonly id: NodeId;
  /** Ticks without hearing from a leader before a follower campaigns; randomized in [electionTicks, 2*electionTicks). */
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  readonly random: RandomSource;
  /** Optimistic replication window per follower. */
  readonly maxInflightMessages: number;
  readonly maxInflightBytes: number;
  /** Upper bound on entry bytes in one AppendEntries message (at least one entry is always sent). */
  readonly maxMessageBytes: number;
  /**
   * A leader refuses proposals ('overloaded') while this many bytes of entries are
   * appended but not committed, so a stalled quorum cannot grow its log without bound.
   * Unlimited when absent.
   */
  readonly maxUncommittedBytes?: number;
}

/** What a node restarts from: everything its storage holds. */
export interface RestoredState {
  readonly hardState: HardState;
  /** The compacted prefix; `{index: 0, term: 0, config: initial}` for a fresh log. */
  readonly snapshot: SnapshotMeta;
  /** Entries after `snapshot.index`, contiguous. */
  readonly entries: readonly Entry[];
  /** The highest index the state machine has applied (>= snapshot.index). */
  readonly applied: number;
}

export type ProposeResult =
  | { readonly ok: true; readonly index: number; readonly term: number }
  | { readonly ok: false; readonly reason: 'notLeader' | 'transferring' | 'configChangePending' | 'overloaded'; readonly leader: NodeId | null };

export interface Status {
  readonly id: NodeId;
  readonly role: Role;
  readonly term: number;
  readonly leader: NodeId | null;
  readonly commit: number;
  readonly applied: number;
  readonly lastIndex: number;
  readonly config: ClusterConfig;
  /** Leader only: replication progress of each other member. */
  readonly progress: Readonly<Record<NodeId, { readonly match: number; readonly next: number; readonly recentActive: boolean }>>;
}
