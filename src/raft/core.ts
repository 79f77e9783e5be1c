// The Raft consensus core: a deterministic state machine with no I/O, no clock
// and no randomness of its own. Time enters through tick(), the network through
// step(), clients through propose()/readIndex(); everything the node wants done
// leaves through ready(), and the driver reports completion with advance().
// The structure follows etcd-io/raft's RawNode; the algorithm follows the Raft
// paper and Ongaro's thesis (PreVote §9.6, CheckQuorum §6.2, ReadIndex §6.4,
// leadership transfer §3.10).

import {
  applyConfigChange,
  committedIndex,
  ConfigChangeError,
  decodeConfigChange,
  encodeConfigChange,
  isVoter,
  members,
  quorumSize,
  tallyVotes,
} from './config.js';
import { assert } from './assert.js';
import { entrySize, RaftLog } from './log.js';
import { Progress } from './progress.js';
import { HeartbeatRounds, ReadIndexQueue } from './read-index.js';
import type {
  AppendRequest,
  AppendResponse,
  ClusterConfig,
  ConfigChange,
  Entry,
  EntryKind,
  HardState,
  HeartbeatRequest,
  HeartbeatResponse,
  Message,
  NodeId,
  ProposeResult,
  RaftOptions,
  ReadIndexRequest,
  ReadState,
  Ready,
  RestoredState,
  Role,
  SnapshotMeta,
  SnapshotNeed,
  SnapshotRequest,
  SoftState,
  Status,
  TimeoutNowRequest,
  VoteRequest,
  VoteResponse,
} from './types.js';

type Outgoing = Message extends infer M ? (M extends Message ? Omit<M, 'from' | 'term'> : never) : never;

const EMPTY = new Uint8Array(0);

export class RaftNode {
  readonly id: NodeId;
  private readonly opts: RaftOptions;
  private readonly log: RaftLog;

  private term: number;
  private vote: NodeId | null;
  private role: Role = 'follower';
  private leader: NodeId | null = null;
  private config: ClusterConfig;

  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTimeout = 0;

  /** Candidate and pre-candidate: the answers received so far. */
  private votes = new Map<NodeId, boolean>();
  /** Leader: replication state of every other member. */
  private progress = new Map<NodeId, Progress>();
  private readonly reads = new ReadIndexQueue();
  /** Leader: heartbeat rounds and which a quorum acknowledged (for reads and the lease). */
  private readonly rounds = new HeartbeatRounds();
  /**
   * Leader: rounds below this prove no lease: they were sent before the last configuration
   * change or in another leadership. Infinity once a transfer started (for the rest of the term).
   */
  private leaseFromRound = Number.POSITIVE_INFINITY;
  /**
   * Ticks since a leader last reached this node (or since this process started, which may have
   * been right after one did). Never moved by suspicion: below leaseTicks this node neither votes
   * nor campaigns, which is what makes a leader's lease safe (see leaseRound).
   */
  private sinceLeaderContact: number;
  /** Leader: reads that arrived before this term's first commit, released when it commits. */
  private readsAwaitingTermCommit: Array<{ requester: NodeId; context: string }> = [];
  private leadTransferee: NodeId | null = null;
  /** Leader: index of the latest config entry; a new change waits until it has been applied. */
  private pendingConfigIndex = 0;

  private messages: Message[] = [];
  private readStates: ReadState[] = [];
  private snapshotRequests: SnapshotNeed[] = [];
  /** The configuration in force after each config entry applied since the log start (first: at the log start). */
  private configs: Array<{ readonly index: number; readonly config: ClusterConfig }>;
  /** Ticks since this node started; orders timeouts that span role changes. */
  private ticks = 0;
  /** The highest index whose Ready advance() has processed (so its config changes are in `configs`). */
  private appliedAdvanced: number;
  /** Leader: bytes of entries appended but not yet committed (what a stalled quorum lets pile up). */
  private uncommittedBytes = 0;
  private lastHardState: HardState;
  private lastSoftState: SoftState;
  private readyOutstanding = false;
  /**
   * Leader: appends to send with the next Ready: `all` (broadcastAppend) sends every follower
   * an append even when it carries no entries; `entries` (broadcastCommit) sends only entries.
   */
  private appendsDue: 'none' | 'entries' | 'all' = 'none';
  /** Leader: a configuration entry committed since the appends were last sent: every follower hears of it at once. */
  private configCommitted = false;
  /** Leader: the end of its log when last checked, so a leader that lost its own entries is caught. */
  private leaderLogEnd = { term: 0, index: 0 };

  constructor(options: RaftOptions, restored: RestoredState) {
    this.id = options.id;
    this.opts = options;
    const { hardState, snapshot, entries, applied } = restored;
    this.log = new RaftLog(snapshot, entries, hardState.commit, applied);
    this.term = hardState.term;
    this.vote = hardState.vote;
    // A node still in term 0 has never answered a leader (answering one records its term first), so it owes no lease.
    this.sinceLeaderContact = hardState.term === 0 ? this.leaseTicks : 0;
    // The configuration in force is the snapshot's plus every config entry applied since.
    let config = snapshot.config;
    this.configs = [{ index: snapshot.index, config }];
    for (const e of this.log.slice(snapshot.index + 1, this.log.applying + 1)) {
      if (e.kind !== 'config') continue;
      config = this.configAfter(config, e);
      this.configs.push({ index: e.index, config });
    }
    this.config = config;
    this.appliedAdvanced = this.log.applying;
    this.lastHardState = this.hardState();
    this.lastSoftState = { role: this.role, leader: this.leader };
    this.resetElectionTimeout();
  }

  // ---------------------------------------------------------------- inputs

  /** One unit of time. Followers count toward an election; leaders toward heartbeats and the quorum check. */
  tick(): void {
    this.onTick();
    this.checkInvariants();
  }

  private onTick(): void {
    this.ticks++;
    this.electionElapsed++;
    this.sinceLeaderContact++;
    if (this.role !== 'leader') {
      // A lone voter need not wait out an election timeout to lead itself, only the lease window.
      const due = this.electionElapsed >= this.randomizedElectionTimeout || this.config.voters.length === 1;
      if (this.promotable() && due && !this.inLeaderLease()) {
        this.electionElapsed = 0;
        this.campaign();
      }
      return;
    }
    if (this.electionElapsed >= this.opts.electionTicks) {
      this.electionElapsed = 0;
      if (!this.quorumActive()) {
        this.becomeFollower(this.term, null); // CheckQuorum: cut off from the majority
        return;
      }
      if (this.leadTransferee !== null) this.leadTransferee = null; // the transfer did not happen in time
    }
    this.heartbeatElapsed++;
    if (this.heartbeatElapsed >= this.opts.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      this.broadcastHeartbeat();
    }
  }

  /**
   * The I/O layer has evidence that `peer`'s process is gone (e.g. its port
   * refuses connections). If it is this follower's leader, forget it and campaign
   * after a short randomized delay (1 to electionTicks/4 ticks) rather than a
   * whole election timeout; with no leader, this node also grants pre-votes at
   * once. Only timing changes: a wrong suspicion costs one election, never
   * safety. It does not shorten the lease window (leaseTicks since the leader
   * was last heard), so a leader wrongly suspected keeps a safe lease.
   */
  leaderUnreachable(peer: NodeId): void {
    if (this.role !== 'follower' || this.leader !== peer) return;
    this.leader = null;
    // Move the clock, not the timeout: a leader heard again resets the clock, and the full timeout applies.
    const soon = this.randomizedElectionTimeout - 1 - this.opts.random.int(Math.max(1, Math.floor(this.opts.electionTicks / 4)));
    this.electionElapsed = Math.max(this.electionElapsed, soon);
  }

  /**
   * Start an election now (PreVote first). A no-op on a leader, a non-voter, and
   * within the lease window of a leader heard from (a lone voter too: it may have
   * just been left alone by a removal its old leader has not yet applied).
   */
  campaign(): void {
    if (this.role === 'leader' || !this.promotable() || this.inLeaderLease()) return;
    this.becomePreCandidate();
  }

  /**
   * The lease window, in ticks: a node that heard from a leader less than this
   * many ticks ago grants no vote and starts no election (except a transfer the
   * leader asked for). Derived from the election timeout so it always ends first.
   */
  get leaseTicks(): number {
    return leaseTicksFor(this.opts.electionTicks);
  }

  /** Ticks without hearing from a leader before a follower campaigns, at the least. */
  get electionTicks(): number {
    return this.opts.electionTicks;
  }

  /**
   * Leader: the latest heartbeat round that proves a lease, or null when reads
   * must take a ReadIndex round. A round acknowledged by a quorum proves that
   * none of its members will vote for leaseTicks ticks after receiving it, so no
   * other leader can exist until then: the driver may serve reads at the commit
   * index without a round until (leaseTicks - 2) ticks after it sent this round,
   * measured on a clock that a paused process cannot stop (thesis §6.4.1).
   * Also null before this leader has committed in its term (its commit index
   * may be behind) and after it started a leadership transfer.
   */
  leaseRound(): number | null {
    if (this.role !== 'leader' || this.log.term(this.log.committed) !== this.term) return null;
    const round = this.rounds.confirmed;
    return round >= this.leaseFromRound ? round : null;
  }

  /** The commit index as this node knows it. */
  get committedIndex(): number {
    return this.log.committed;
  }

  step(m: Message): void {
    this.onMessage(m);
    this.checkInvariants();
  }

  private onMessage(m: Message): void {
    if (m.to !== this.id || m.from === this.id) return;
    if (m.term > this.term) {
      if (m.type === 'vote' || m.type === 'preVote') {
        // Leader lease (thesis §4.2.3): while we heard from a leader within the election timeout,
        // a vote request is from a disruptive node, unless a transfer asked for it.
        const inLease = (this.leader !== null && this.electionElapsed < this.opts.electionTicks) || this.inLeaderLease();
        if (inLease && !m.transfer) return;
      }
      if (m.type === 'preVote' || (m.type === 'preVoteResp' && !m.reject)) {
        // Pre-votes carry a future term; they never move ours.
      } else {
        const fromLeader = m.type === 'app' || m.type === 'heartbeat' || m.type === 'snapshot';
        this.becomeFollower(m.term, fromLeader ? m.from : null);
      }
    } else if (m.term < this.term) {
      if (m.type === 'app' || m.type === 'heartbeat') {
        // A stale leader (e.g. after a partition): tell it our term so it steps down.
        this.send({ type: 'appResp', to: m.from, index: 0, reject: true, hintIndex: 0, hintTerm: 0 });
      } else if (m.type === 'preVote') {
        this.send({ type: 'preVoteResp', to: m.from, reject: true });
      }
      return;
    }

    switch (m.type) {
      case 'vote':
      case 'preVote':
        this.handleVoteRequest(m);
        return;
      case 'voteResp':
      case 'preVoteResp':
        this.handleVoteResponse(m);
        return;
      case 'app':
      case 'heartbeat':
      case 'snapshot':
        if (this.role === 'leader') return; // another leader in our term is impossible; ignore a misbehaving peer
        if (this.role !== 'follower') this.becomeFollower(this.term, m.from);
        this.leader = m.from;
        this.electionElapsed = 0;
        this.sinceLeaderContact = 0;
        if (m.type === 'app') this.handleAppend(m);
        else if (m.type === 'heartbeat') this.handleHeartbeat(m);
        else this.handleInstalledSnapshot(m);
        return;
      case 'appResp':
        if (this.role === 'leader') this.handleAppendResponse(m);
        return;
      case 'heartbeatResp':
        if (this.role === 'leader') this.handleHeartbeatResponse(m);
        return;
      case 'timeoutNow':
        this.handleTimeoutNow(m);
        return;
      case 'readIndex':
        this.handleReadIndexRequest(m);
        return;
      case 'readIndexResp':
        if (m.index > 0) this.readStates.push({ index: m.index, context: m.context });
        return;
    }
  }

  propose(data: Uint8Array): ProposeResult {
    return this.proposeEntry('command', data);
  }

  proposeConfigChange(change: ConfigChange): ProposeResult {
    // One change at a time, and none before this leader has committed in its own term
    // (the single-server change fix from Ongaro's raft-dev post of 2015).
    if (this.role === 'leader' && (this.pendingConfigIndex > this.appliedAdvanced || this.log.term(this.log.committed) !== this.term)) {
      return { ok: false, reason: 'configChangePending', leader: this.id };
    }
    const result = this.proposeEntry('config', encodeConfigChange(change));
    if (result.ok) this.pendingConfigIndex = result.index;
    return result;
  }

  /**
   * Ask for a linearizable read point. The answer appears in a later Ready's
   * readStates with the same context. Returns false when no leader is known.
   */
  readIndex(context: string): boolean {
    if (this.role === 'leader') {
      this.startRead(this.id, context);
      return true;
    }
    if (this.leader === null) return false;
    this.send({ type: 'readIndex', to: this.leader, context });
    return true;
  }

  /**
   * Leader: answer another member's ReadIndex request at once with the commit index, without a
   * heartbeat round; returns the index answered, or null (nothing sent) when this leader may not
   * answer it so: not leading, another term, or no lease in the core's view (before this term's
   * first commit, during a transfer). The driver calls it only while its lease also holds in time
   * (RaftDriver.leaseIndex): then no other leader exists (thesis §6.4.1), so the commit index
   * covers every write acknowledged before the request arrived. On null the caller steps the
   * request as usual (a round, or the term rules).
   */
  respondReadIndex(m: ReadIndexRequest): number | null {
    if (m.to !== this.id || m.from === this.id || m.term !== this.term || this.leaseRound() === null) return null;
    assert(this.role === 'leader', () => `${this.id}: answering a read under a lease as ${this.role}`);
    const index = this.log.committed;
    this.send({ type: 'readIndexResp', to: m.from, context: m.context, index });
    return index;
  }

  /** Hand leadership to `to` (thesis §3.10). Returns false when this node cannot start such a transfer. */
  transferLeadership(to: NodeId): boolean {
    if (this.role !== 'leader' || to === this.id || !isVoter(this.config, to)) return false;
    if (this.leadTransferee === to) return true;
    this.leadTransferee = to;
    this.electionElapsed = 0; // the transfer must finish within one election timeout
    // The transferee may campaign whenever timeoutNow reaches it, skipping every lease: none from now on this term.
    this.leaseFromRound = Number.POSITIVE_INFINITY;
    const pr = this.progress.get(to)!;
    if (pr.match === this.log.lastIndex()) this.sendTimeoutNow(to);
    else this.sendAppend(to, true);
    return true;
  }

  // ---------------------------------------------------------------- Ready

  hasReady(): boolean {
    if (this.readyOutstanding) return false;
    return (
      this.messages.length > 0 ||
      (this.appendsDue !== 'none' && this.role === 'leader') ||
      this.readStates.length > 0 ||
      this.snapshotRequests.length > 0 ||
      this.log.hasUnstable() ||
      this.log.hasCommittedToApply() ||
      !sameHardState(this.hardState(), this.lastHardState) ||
      !sameSoftState(this.softState(), this.lastSoftState)
    );
  }

  ready(): Ready {
    if (this.readyOutstanding) throw new Error('ready() called again before advance()');
    this.sendDueAppends();
    this.checkInvariants();
    const hs = this.hardState();
    const ss = this.softState();
    const rd: Ready = {
      softState: sameSoftState(ss, this.lastSoftState) ? null : ss,
      hardState: sameHardState(hs, this.lastHardState) ? null : hs,
      entries: this.log.takeUnstable(),
      messages: this.messages,
      committedEntries: this.log.takeCommitted(),
      readStates: this.readStates,
      snapshotRequests: this.snapshotRequests,
    };
    this.lastHardState = hs;
    this.lastSoftState = ss;
    this.messages = [];
    this.readStates = [];
    this.snapshotRequests = [];
    this.readyOutstanding = true;
    return rd;
  }

  /**
   * Heartbeats and their answers queued at `durableTerm` since the outstanding Ready was taken,
   * taken out of the next one: they carry no entries and no vote, and their term is on disk, so
   * they promise nothing that is not durable yet. The driver sends them while that Ready is still
   * being written and applied: a slow batch must not starve the followers' election timers, nor
   * the leader's quorum check, while the members are all alive and talking.
   */
  takeBeats(durableTerm: number): Message[] {
    if (this.term !== durableTerm || this.messages.length === 0) return [];
    const beats: Message[] = [];
    const rest: Message[] = [];
    for (const m of this.messages) (m.type === 'heartbeat' || m.type === 'heartbeatResp' ? beats : rest).push(m);
    if (beats.length > 0) this.messages = rest;
    return beats;
  }

  /** The Ready's writes are durable and its committed entries applied. */
  advance(rd: Ready): void {
    assert(this.readyOutstanding, () => `${this.id}: advance() without a ready() outstanding`);
    this.readyOutstanding = false;
    const last = rd.entries[rd.entries.length - 1];
    if (last) this.log.persistedTo(last.index, last.term);
    for (const e of rd.committedEntries) {
      assert(e.index > this.appliedAdvanced && e.index <= this.log.committed, () => `${this.id}: applied entry ${e.index} out of order (applied ${this.appliedAdvanced}, commit ${this.log.committed})`);
      if (e.kind === 'config') this.applyConfigEntry(e);
      this.appliedAdvanced = e.index;
    }
    // A leader counts itself toward a quorum only for entries it has made durable (thesis §10.2.1).
    if (this.role === 'leader' && this.maybeCommit()) this.broadcastCommit();
  }

  // ---------------------------------------------------------------- snapshots and compaction

  /**
   * Forget log entries up to `index`, which the state machine has applied (and the
   * caller has made durable). Returns the new start of the log, for storage to record.
   */
  compact(index: number): SnapshotMeta {
    const meta = this.snapshotMetaAt(index);
    if (meta === null || index > this.log.persisted) {
      throw new RangeError(`cannot compact to ${index}: the log holds ${this.log.firstIndex() - 1}..${this.log.lastIndex()}, applied ${this.log.applying}`);
    }
    this.log.compactTo(meta);
    this.configs = [{ index, config: meta.config }, ...this.configs.filter((c) => c.index > index)];
    return meta;
  }

  /** What a snapshot of the state machine at applied index `index` is: its term and configuration. */
  snapshotMetaAt(index: number): SnapshotMeta | null {
    // Only indexes whose configuration changes advance() has already taken in.
    if (index < this.log.firstIndex() - 1 || index > this.appliedAdvanced) return null;
    const term = this.log.term(index);
    if (term === null) return null;
    let config = this.configs[0]!.config;
    for (const c of this.configs) if (c.index <= index) config = c.config;
    return { index, term, config };
  }

  /** Where the log starts: entries at or below this index are compacted. */
  logStart(): number {
    return this.log.firstIndex() - 1;
  }

  /**
   * Whether a fully received snapshot should be installed: it comes from a leader
   * not older than our term and carries more than we have committed. The driver
   * asks before it replaces the state machine, then steps the message in.
   */
  shouldInstallSnapshot(m: SnapshotRequest): boolean {
    // A leader of the same term cannot receive a snapshot from a peer (one leader per term); one from a newer term deposes it.
    const fromRightLeader = m.term > this.term || (m.term === this.term && this.role !== 'leader');
    // A log that already holds the snapshot's last entry keeps its suffix: entries after it may
    // have been acknowledged to this leader, and wiping them would break that promise.
    return m.to === this.id && fromRightLeader && m.meta.index > this.log.committed && !this.log.matchTerm(m.meta.index, m.meta.term);
  }

  /** The driver finished (or failed) streaming a snapshot to `to`. */
  reportSnapshot(to: NodeId, ok: boolean): void {
    const pr = this.progress.get(to);
    if (!pr || pr.state !== 'snapshot') return;
    // On success wait for the follower's acknowledgement; on failure probe again, which asks for a new snapshot.
    if (!ok) pr.becomeProbe();
  }

  // ---------------------------------------------------------------- inspection

  status(): Status {
    const progress: Record<NodeId, { match: number; next: number; recentActive: boolean }> = {};
    if (this.role === 'leader') {
      for (const [id, pr] of this.progress) progress[id] = { match: pr.match, next: pr.next, recentActive: pr.recentActive };
    }
    return {
      id: this.id,
      role: this.role,
      term: this.term,
      leader: this.leader,
      commit: this.log.committed,
      applied: this.log.applying,
      lastIndex: this.log.lastIndex(),
      config: this.config,
      progress,
    };
  }

  /** Log entries with index in [from, to): for tests and diagnostics. */
  entries(from: number, to: number): readonly Entry[] {
    return this.log.slice(from, to);
  }

  lastIndex(): number {
    return this.log.lastIndex();
  }

  termAt(index: number): number | null {
    return this.log.term(index);
  }

  // ---------------------------------------------------------------- roles

  private becomeFollower(term: number, leader: NodeId | null): void {
    assert(term >= this.term, () => `${this.id}: becoming follower at term ${term}, below its term ${this.term}`);
    assert(leader !== this.id, () => `${this.id}: becoming follower of itself at term ${term}`);
    if (term > this.term) {
      this.term = term;
      this.vote = null;
    }
    this.role = 'follower';
    this.leader = leader;
    this.resetRoleState();
  }

  private becomePreCandidate(): void {
    assert(this.role !== 'leader', () => `${this.id}: a leader of term ${this.term} cannot pre-campaign`);
    assert(this.promotable(), () => `${this.id}: a non-voter cannot pre-campaign`);
    this.role = 'preCandidate';
    this.leader = null;
    this.resetRoleState();
    this.votes.set(this.id, true);
    this.requestVotes('preVote', this.term + 1, false);
  }

  private becomeCandidate(transfer: boolean): void {
    assert(this.role !== 'leader', () => `${this.id}: a leader of term ${this.term} cannot campaign`);
    assert(this.promotable(), () => `${this.id}: a non-voter cannot campaign`);
    this.role = 'candidate';
    this.leader = null;
    this.term += 1;
    this.vote = this.id;
    this.resetRoleState();
    this.votes.set(this.id, true);
    this.requestVotes('vote', this.term, transfer);
  }

  private becomeLeader(): void {
    // Only a candidate that voted for itself in this term and won a quorum of votes leads (paper §5.2).
    assert(this.role === 'candidate', () => `${this.id}: becoming leader from ${this.role} at term ${this.term}`);
    assert(this.vote === this.id, () => `${this.id}: becoming leader of term ${this.term} without its own vote`);
    assert(tallyVotes(this.config, this.votes) === 'won', () => `${this.id}: becoming leader of term ${this.term} without a quorum of votes`);
    this.role = 'leader';
    this.leader = this.id;
    this.resetRoleState();
    this.leaseFromRound = this.rounds.nextRound;
    for (const id of members(this.config)) {
      if (id !== this.id) this.progress.set(id, this.newProgress());
    }
    // Any config entry not yet applied must be applied before a new change is accepted.
    this.pendingConfigIndex = this.log.lastIndex();
    this.uncommittedBytes = 0;
    for (const e of this.log.slice(this.log.committed + 1, this.log.lastIndex() + 1)) this.uncommittedBytes += e.data.byteLength;
    // Entries of earlier terms commit only through an entry of this term (paper §5.4.2).
    this.appendOwn('noop', EMPTY);
    this.broadcastAppend();
  }

  private resetRoleState(): void {
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.resetElectionTimeout();
    this.votes = new Map();
    this.progress = new Map();
    this.reads.clear();
    this.rounds.clear();
    this.leaseFromRound = Number.POSITIVE_INFINITY;
    this.readsAwaitingTermCommit = [];
    this.leadTransferee = null;
  }

  private resetElectionTimeout(): void {
    this.randomizedElectionTimeout = this.opts.electionTicks + this.opts.random.int(this.opts.electionTicks);
  }

  private promotable(): boolean {
    return isVoter(this.config, this.id);
  }

  // ---------------------------------------------------------------- elections

  private requestVotes(type: 'vote' | 'preVote', term: number, transfer: boolean): void {
    if (tallyVotes(this.config, this.votes) === 'won') {
      this.onElectionWon(type);
      return;
    }
    for (const id of this.config.voters) {
      if (id === this.id) continue;
      this.messages.push({
        type,
        from: this.id,
        to: id,
        term,
        lastLogIndex: this.log.lastIndex(),
        lastLogTerm: this.log.lastTerm(),
        transfer,
      });
    }
  }

  private onElectionWon(type: 'vote' | 'preVote'): void {
    if (type === 'preVote') this.becomeCandidate(false);
    else this.becomeLeader();
  }

  private handleVoteRequest(m: VoteRequest): void {
    // Within the lease window no vote at all, even in a term this node reached some other way.
    const canVote =
      (!this.inLeaderLease() || m.transfer) &&
      (this.vote === m.from ||
        (this.vote === null && this.leader === null) ||
        (m.type === 'preVote' && m.term > this.term));
    const grant = canVote && this.log.isUpToDate(m.lastLogIndex, m.lastLogTerm);
    const respType = m.type === 'vote' ? 'voteResp' : 'preVoteResp';
    if (grant) {
      // A granted pre-vote answers in the candidate's future term so it counts it.
      this.messages.push({ type: respType, from: this.id, to: m.from, term: m.term, reject: false });
      if (m.type === 'vote') {
        this.recordVote(m.from);
        this.electionElapsed = 0;
      }
    } else {
      this.send({ type: respType, to: m.from, reject: true });
    }
  }

  private handleVoteResponse(m: VoteResponse): void {
    const expected = this.role === 'preCandidate' ? 'preVoteResp' : this.role === 'candidate' ? 'voteResp' : null;
    if (m.type !== expected) return;
    this.votes.set(m.from, !m.reject);
    const outcome = tallyVotes(this.config, this.votes);
    if (outcome === 'won') this.onElectionWon(m.type === 'preVoteResp' ? 'preVote' : 'vote');
    else if (outcome === 'lost') this.becomeFollower(this.term, null);
  }

  private handleTimeoutNow(_m: TimeoutNowRequest): void {
    if (this.role === 'leader' || !this.promotable()) return;
    this.becomeCandidate(true); // skip PreVote: the leader asked for this election
  }

  // ---------------------------------------------------------------- replication: follower side

  private handleAppend(m: AppendRequest): void {
    if (m.prevIndex < this.log.committed) {
      // Everything up to our commit index matches any leader's log; acknowledge that much.
      this.send({ type: 'appResp', to: m.from, index: this.log.committed, reject: false, hintIndex: 0, hintTerm: 0 });
      return;
    }
    if (this.log.matchTerm(m.prevIndex, m.prevTerm)) {
      this.assertNotLeading('append a leader\'s entries');
      const lastNew = this.log.appendFromLeader(m.prevIndex, m.entries);
      this.log.commitTo(Math.min(m.commit, lastNew));
      this.send({ type: 'appResp', to: m.from, index: lastNew, reject: false, hintIndex: 0, hintTerm: 0 });
      return;
    }
    const hintIndex = this.log.findConflictByTerm(Math.min(m.prevIndex, this.log.lastIndex()), m.prevTerm);
    this.send({
      type: 'appResp',
      to: m.from,
      index: m.prevIndex,
      reject: true,
      hintIndex,
      hintTerm: this.log.term(hintIndex) ?? 0,
    });
  }

  /**
   * A complete snapshot. If shouldInstallSnapshot said yes, the driver has installed its state and we adopt it
   * as our log's start; otherwise nothing was installed and we only answer (and fast-forward the commit index
   * when our log already holds the snapshot's last entry).
   */
  private handleInstalledSnapshot(m: SnapshotRequest): void {
    // Already holding its last entry: everything up to it is committed; keep the log (as etcd-io/raft does).
    if (this.log.matchTerm(m.meta.index, m.meta.term)) this.log.commitTo(m.meta.index);
    if (m.meta.index <= this.log.committed) {
      this.send({ type: 'appResp', to: m.from, index: this.log.committed, reject: false, hintIndex: 0, hintTerm: 0 });
      return;
    }
    this.assertNotLeading('install a snapshot over its log');
    this.log.restore(m.meta);
    this.appliedAdvanced = m.meta.index;
    this.config = m.meta.config;
    this.configs = [{ index: m.meta.index, config: m.meta.config }];
    this.send({ type: 'appResp', to: m.from, index: m.meta.index, reject: false, hintIndex: 0, hintTerm: 0 });
  }

  private handleHeartbeat(m: HeartbeatRequest): void {
    this.log.commitTo(m.commit);
    this.send({ type: 'heartbeatResp', to: m.from, context: m.context });
  }

  // ---------------------------------------------------------------- replication: leader side

  private proposeEntry(kind: EntryKind, data: Uint8Array): ProposeResult {
    if (this.role !== 'leader') return { ok: false, reason: 'notLeader', leader: this.leader };
    if (this.leadTransferee !== null) return { ok: false, reason: 'transferring', leader: this.id };
    if (this.uncommittedBytes + data.byteLength > (this.opts.maxUncommittedBytes ?? Infinity)) {
      return { ok: false, reason: 'overloaded', leader: this.id };
    }
    const entry = this.appendOwn(kind, data);
    this.broadcastAppend();
    return { ok: true, index: entry.index, term: entry.term };
  }

  private appendOwn(kind: EntryKind, data: Uint8Array): Entry {
    assert(this.role === 'leader', () => `${this.id}: appending its own entry as ${this.role} of term ${this.term}`);
    const entry: Entry = { index: this.log.lastIndex() + 1, term: this.term, kind, data };
    this.log.append([entry]);
    this.uncommittedBytes += data.byteLength;
    return entry;
  }

  private newProgress(): Progress {
    return new Progress(this.log.lastIndex() + 1, this.opts.maxInflightMessages, this.opts.maxInflightBytes);
  }

  /**
   * Every follower gets what it is missing, and the commit index, when the next
   * Ready is taken: proposals and commits of one turn then share one message per
   * follower (and one acknowledgement back) instead of one each.
   */
  private broadcastAppend(): void {
    this.appendsDue = 'all';
  }

  /**
   * The commit index moved. Followers hear it with the next append or heartbeat (each carries
   * it), not in an append of its own: a single write then costs each follower one message, one
   * Ready and one acknowledgement instead of two, and a follower's state machine trails the
   * leader's by at most a heartbeat while writes pause (clients are served by the leader; a
   * follower's linearizable read waits for the commit its read index names, which the read's
   * own heartbeat round carries). A committed configuration goes out at once: members act on it.
   */
  private broadcastCommit(): void {
    if (this.configCommitted) this.appendsDue = 'all';
    else if (this.appendsDue === 'none') this.appendsDue = 'entries';
  }

  private sendDueAppends(): void {
    if (this.appendsDue === 'none') return;
    const sendIfEmpty = this.appendsDue === 'all';
    this.appendsDue = 'none';
    this.configCommitted = false;
    if (this.role !== 'leader') return;
    for (const id of this.progress.keys()) this.sendAppend(id, sendIfEmpty);
  }

  /**
   * Send what `to` is missing, as far as flow control allows. With `sendIfEmpty` an
   * empty append still goes out (to carry the commit index or probe the match point).
   */
  private sendAppend(to: NodeId, sendIfEmpty: boolean): void {
    const pr = this.progress.get(to);
    if (!pr) return;
    let first = true;
    while (!pr.isPaused()) {
      const prevIndex = pr.next - 1;
      const prevTerm = this.log.term(prevIndex);
      if (prevTerm === null) {
        // The follower needs entries we compacted: it must install a snapshot first.
        pr.becomeSnapshot(this.ticks);
        this.snapshotRequests.push({ to });
        return;
      }
      const entries = this.log.sliceBytes(pr.next, this.opts.maxMessageBytes);
      if (entries.length === 0 && !(first && sendIfEmpty)) return;
      this.send({ type: 'app', to, prevIndex, prevTerm, entries, commit: this.log.committed });
      if (entries.length === 0) {
        if (pr.state === 'probe') pr.probeSent = true;
        return;
      }
      pr.sentEntries(entries[entries.length - 1]!.index, entries.reduce((n, e) => n + entrySize(e), 0));
      first = false;
    }
  }

  private handleAppendResponse(m: AppendResponse): void {
    const pr = this.progress.get(m.from);
    if (!pr) return;
    pr.recentActive = true;
    if (m.reject) {
      const hint = m.hintTerm > 0 ? this.log.findConflictByTerm(m.hintIndex, m.hintTerm) : m.hintIndex;
      if (pr.rejected(m.index, hint)) this.sendAppend(m.from, true);
      return;
    }
    const wasProbing = pr.state !== 'replicate';
    if (!pr.acknowledge(m.index)) return;
    if (wasProbing) pr.becomeReplicate();
    if (this.maybeCommit()) this.broadcastCommit();
    else this.sendAppend(m.from, false);
    if (this.leadTransferee === m.from && pr.match === this.log.lastIndex()) {
      this.sendTimeoutNow(m.from);
    }
  }

  private handleHeartbeatResponse(m: HeartbeatResponse): void {
    const pr = this.progress.get(m.from);
    if (!pr) return;
    pr.heardFrom();
    if (pr.state === 'snapshot' && this.ticks - pr.snapshotRequestedAt > 4 * this.opts.electionTicks) {
      pr.becomeProbe(); // the snapshot never arrived (or its acknowledgement was lost): start over
    }
    if (pr.match < this.log.lastIndex()) this.sendAppend(m.from, true);
    if (m.context !== '' && this.rounds.acknowledge(m.context, m.from, this.id, this.config.voters, quorumSize(this.config))) {
      this.answerConfirmedReads();
    }
  }

  /** Sends one heartbeat round to every follower; returns its number. */
  private broadcastHeartbeat(): number {
    const round = this.rounds.start();
    this.rounds.recompute(this.id, this.config.voters, quorumSize(this.config)); // a lone voter is its own quorum
    const context = String(round);
    for (const [id, pr] of this.progress) {
      this.send({ type: 'heartbeat', to: id, commit: Math.min(pr.match, this.log.committed), context });
    }
    return round;
  }

  /** Advance the commit index to what a majority holds, counting only entries of this term (paper §5.4.2, figure 8). */
  private maybeCommit(): boolean {
    const index = committedIndex(this.config, (id) => (id === this.id ? this.log.persisted : (this.progress.get(id)?.match ?? 0)));
    if (index <= this.log.committed || this.log.term(index) !== this.term) return false;
    assert(this.role === 'leader', () => `${this.id}: counting replicas to commit as ${this.role}`);
    for (const e of this.log.slice(this.log.committed + 1, index + 1)) {
      this.uncommittedBytes -= e.data.byteLength;
      // Followers may apply a configuration as soon as they learn it committed: from then on a lease needs a new round.
      if (e.kind === 'config' && Number.isFinite(this.leaseFromRound)) this.leaseFromRound = this.rounds.nextRound;
      if (e.kind === 'config') this.configCommitted = true;
    }
    this.log.commitTo(index);
    this.releaseReadsAwaitingTermCommit();
    return true;
  }

  private quorumActive(): boolean {
    let active = 0;
    for (const id of this.config.voters) {
      if (id === this.id) active++;
      else if (this.progress.get(id)?.recentActive) active++;
    }
    for (const pr of this.progress.values()) pr.recentActive = false;
    return active >= quorumSize(this.config);
  }

  // ---------------------------------------------------------------- reads

  private handleReadIndexRequest(m: ReadIndexRequest): void {
    if (this.role !== 'leader') {
      this.send({ type: 'readIndexResp', to: m.from, context: m.context, index: 0 });
      return;
    }
    this.startRead(m.from, m.context);
  }

  private startRead(requester: NodeId, context: string): void {
    // Our commit index is only known to be complete once an entry of our own term has committed.
    if (this.log.term(this.log.committed) !== this.term) {
      this.readsAwaitingTermCommit.push({ requester, context });
      return;
    }
    if (this.config.voters.length === 1 && isVoter(this.config, this.id)) {
      this.answerRead(requester, context, this.log.committed);
      return;
    }
    const index = this.log.committed;
    const round = this.broadcastHeartbeat();
    this.reads.add({ requester, context, index, round });
    this.answerConfirmedReads();
  }

  private answerConfirmedReads(): void {
    for (const r of this.reads.confirmedUpTo(this.rounds.confirmed)) this.answerRead(r.requester, r.context, r.index);
  }

  private releaseReadsAwaitingTermCommit(): void {
    const waiting = this.readsAwaitingTermCommit;
    this.readsAwaitingTermCommit = [];
    if (waiting.length === 0) return;
    if (this.config.voters.length === 1 && isVoter(this.config, this.id)) {
      for (const r of waiting) this.answerRead(r.requester, r.context, this.log.committed);
      return;
    }
    // One heartbeat round confirms them all.
    const round = this.broadcastHeartbeat();
    for (const r of waiting) this.reads.add({ ...r, index: this.log.committed, round });
    this.answerConfirmedReads();
  }

  private answerRead(requester: NodeId, context: string, index: number): void {
    if (requester === this.id) this.readStates.push({ index, context });
    else this.send({ type: 'readIndexResp', to: requester, context, index });
  }

  // ---------------------------------------------------------------- membership

  private configAfter(config: ClusterConfig, e: Entry): ClusterConfig {
    try {
      return applyConfigChange(config, decodeConfigChange(e.data));
    } catch (err) {
      if (err instanceof ConfigChangeError) return config; // an invalid change is a no-op on every node alike
      throw err;
    }
  }

  private applyConfigEntry(e: Entry): void {
    this.config = this.configAfter(this.config, e);
    this.configs.push({ index: e.index, config: this.config });
    if (this.role !== 'leader') return;
    // A lease needs a quorum of the configuration in force; rounds sent before it count no more.
    if (Number.isFinite(this.leaseFromRound)) this.leaseFromRound = this.rounds.nextRound;
    if (!isVoter(this.config, this.id)) {
      this.becomeFollower(this.term, null); // removed (or demoted) leader steps down once the change is applied
      return;
    }
    for (const id of members(this.config)) {
      if (id !== this.id && !this.progress.has(id)) {
        this.progress.set(id, this.newProgress());
        this.sendAppend(id, true);
      }
    }
    for (const id of [...this.progress.keys()]) {
      if (!members(this.config).includes(id)) this.progress.delete(id);
    }
    if (this.maybeCommit()) this.broadcastCommit(); // a smaller quorum may commit more now
  }

  // ---------------------------------------------------------------- invariants

  /**
   * Checked after every input and before every Ready, each O(1), against the hard
   * state last handed out (what the driver made durable, or is about to): a term
   * that went back, a vote that changed within a term, or a commit index that went
   * back would each let two leaders, or two values, exist for one term or index.
   */
  private checkInvariants(): void {
    const was = this.lastHardState;
    assert(this.term >= was.term, () => `${this.id}: term went back from ${was.term} to ${this.term}`);
    assert(
      this.term !== was.term || was.vote === null || this.vote === was.vote,
      () => `${this.id}: vote of term ${this.term} changed from ${was.vote} to ${this.vote}`,
    );
    assert(this.log.committed >= was.commit, () => `${this.id}: commit went back from ${was.commit} to ${this.log.committed}`);
    this.log.assertConsistent(this.id);
    if (this.role !== 'leader') return;
    // A leader leads only the term it won with its own vote, and its log only grows while it leads.
    assert(this.leader === this.id && this.vote === this.id, () => `${this.id}: leader of term ${this.term} with leader ${this.leader} and vote ${this.vote}`);
    const last = this.log.lastIndex();
    const mark = this.leaderLogEnd;
    assert(mark.term !== this.term || last >= mark.index, () => `${this.id}: leader of term ${this.term} lost its own entries after ${last} (had ${mark.index})`);
    this.leaderLogEnd = { term: this.term, index: last };
  }

  /** A vote is given at most once per term (figure 2 of the Raft paper): a second one could elect two leaders. */
  private recordVote(candidate: NodeId): void {
    assert(this.vote === null || this.vote === candidate, () => `${this.id}: voting for ${candidate} in term ${this.term}, having voted for ${this.vote}`);
    this.vote = candidate;
  }

  /** Only a follower takes in a leader's entries or snapshot: a leader never overwrites or drops its own. */
  private assertNotLeading(what: string): void {
    assert(this.role !== 'leader', () => `${this.id}: the leader of term ${this.term} asked to ${what}`);
  }

  // ---------------------------------------------------------------- helpers

  private send(m: Outgoing): void {
    this.messages.push({ ...m, from: this.id, term: this.term } as Message);
  }

  /** Due appends (with the commit index) go first: the transferee should campaign knowing what committed. */
  private sendTimeoutNow(to: NodeId): void {
    const toldAll = this.appendsDue === 'all';
    this.sendDueAppends();
    if (!toldAll) this.sendAppend(to, true); // the commit index is carried lazily otherwise (broadcastCommit)
    this.send({ type: 'timeoutNow', to });
  }

  private inLeaderLease(): boolean {
    return this.sinceLeaderContact < this.leaseTicks;
  }

  private hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  private softState(): SoftState {
    return { role: this.role, leader: this.leader };
  }
}

/** The lease window for an election timeout: a fifth of it, at least 3 ticks (so a lease of at least one tick remains). */
export function leaseTicksFor(electionTicks: number): number {
  return Math.max(3, Math.ceil(electionTicks / 5));
}

function sameHardState(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

function sameSoftState(a: SoftState, b: SoftState): boolean {
  return a.role === b.role && a.leader === b.leader;
}
