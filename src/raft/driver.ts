// Runs a RaftNode against the real world: a timer for ticks, a LogStorage for
// durability, a transport for messages and an apply function for the state
// machine. The Ready loop's order is the whole point (see docs/raft.md):
//   persist (one synced batch) -> send -> apply -> advance.
// A leader's appends leave before its own write is synced (thesis §10.2.1); everything
// else waits for the write. Committed entries an earlier Ready wrote are applied while
// this Ready's write is in flight. Proposals arriving during a write are group-committed
// by the next Ready.

import { createHash, randomInt } from 'node:crypto';
import { systemClock, type Cancel, type DriverClock } from './clock.js';
import { RaftNode } from './core.js';
import { SnapshotAssembler, type CapturedState, type StagedFile, type Staging } from './state-transfer.js';
import type { LogStorage } from './storage.js';
import type { ConfigChange, Entry, HardState, Message, NodeId, ProposeResult, RandomSource, ReadIndexRequest, Ready, SnapshotMeta, SnapshotRequest, SoftState, Status } from './types.js';
import { mayBeSentBeforePersist } from './types.js';

export type RaftErrorCode = 'NOT_LEADER' | 'NO_LEADER' | 'UNAVAILABLE' | 'TIMEOUT';

/** Why a proposal or read did not complete; the server maps the code onto the protocol's. */
export class RaftError extends Error {
  override readonly name = 'RaftError';
  constructor(
    readonly code: RaftErrorCode,
    message: string,
    readonly leader: NodeId | null = null,
    /** Refused before it was appended to the log: nothing was proposed, so nothing can have changed. */
    readonly notProposed = false,
  ) {
    super(message);
  }
}

export interface Transport {
  /** Best effort: a message may be dropped; Raft retries what matters. */
  send(message: Message): void;
  /**
   * The messages sent so far may leave now: the driver has sent all it will until its next
   * step (a write, an apply). Without this call they go once this event-loop turn ends.
   */
  flush?(): void;
  /** Bytes queued for `to` and not yet written; lets a snapshot stream wait instead of flooding. */
  queuedBytes?(to: NodeId): number;
}

/** A complete, verified incoming transfer, wherever it is staged. */
export interface StagedTransfer {
  readonly bytes: number;
}

/** How the driver reads and replaces the whole state machine (InstallSnapshot). */
export interface SnapshotIO<S extends StagedTransfer = StagedFile> {
  capture(): Promise<CapturedState>;
  /** Where incoming transfers are staged (on disk: a snapshot of any size is received in bounded memory). */
  readonly staging: Staging<S>;
  /**
   * Replace the state machine by a verified staged stream reflecting `meta.index`,
   * and make the log start after `meta`, durably; a crash part way is finished at
   * the next start (snapshot-install.ts). Removes the staged transfer once done.
   */
  install(meta: SnapshotMeta, staged: S): Promise<void>;
  /** Forget a staged transfer that will not be installed. */
  discard(staged: S): void;
}

export interface CompactionPolicy {
  /** Compact once this many applied entries are in the log beyond the kept window. */
  readonly everyEntries: number;
  /** Entries kept behind the applied index, so a briefly lagging follower needs no snapshot. */
  readonly keepEntries: number;
}

export interface DriverOptions<R, S extends StagedTransfer = StagedFile> {
  readonly node: RaftNode;
  readonly storage: LogStorage;
  readonly transport: Transport;
  /**
   * Applies committed entries, in order, to the state machine (sharing writes
   * where it can), and calls `applied` for each entry, in order, once it is in;
   * its result goes to whoever proposed it. Resolves once all are applied.
   */
  readonly apply: (entries: readonly Entry[], applied: (entry: Entry, result: R) => void) => Promise<void>;
  readonly tickMs: number;
  /** Clocks and timers; the system's unless a simulation supplies virtual ones. */
  readonly clock?: DriverClock;
  /** Draws this process's tag for read contexts (crypto-random unless a simulation supplies its own). */
  readonly random?: RandomSource;
  /** Called when the role or the known leader changes. */
  readonly onSoftState?: (state: SoftState) => void;
  /** Called when the storage failed: the node must stop, since its durability promise is broken. */
  readonly onFatal: (err: unknown) => void;
  /** Without it, the log is never compacted and no snapshot can be sent or installed. */
  readonly snapshots?: SnapshotIO<S>;
  readonly compaction?: CompactionPolicy;
  /** Reports a snapshot sent, installed or compacted into; one whose sending failed; or one received that failed verification (refused). */
  readonly onSnapshotEvent?: (event: SnapshotEvent) => void;
  /** On the leader: a heartbeat answered by `peer`, this long (seconds) after the round was sent. */
  readonly onPeerRoundTrip?: (peer: NodeId, seconds: number) => void;
  /**
   * Something held the core still for at least `stallWarnMs`: a Ready that took that long to
   * persist and apply (heartbeats wait behind it), or ticks that came that late (the thread was
   * busy). Past the election timeout, followers elect another leader: this says why.
   */
  readonly onStall?: (stall: Stall) => void;
  readonly stallWarnMs?: number;
}

export type Stall =
  | { readonly kind: 'ready'; readonly ms: number; readonly persistMs: number; readonly applyMs: number; readonly entries: number; readonly committed: number }
  | { readonly kind: 'tick'; readonly ms: number };

export interface SnapshotEvent {
  readonly kind: 'sent' | 'installed' | 'failed' | 'refused' | 'compacted';
  readonly peer?: NodeId;
  readonly index: number;
  readonly bytes?: number;
  readonly error?: string;
  /** How long it took: streaming it to the peer (sent), or installing it (installed). */
  readonly seconds?: number;
}

/**
 * How much faster than this node's clock another member's clock may run: the lease
 * is shortened by this fraction. Real clock rates differ by parts per million.
 */
const CLOCK_RATE_ALLOWANCE = 0.1;
/** Send times of this many recent heartbeat rounds are kept (only the latest confirmed one matters). */
const MAX_ROUND_TIMES = 128;

/** While a snapshot installs, the core must not move; messages wait here (bounded; Raft tolerates loss). */
const MAX_HELD_MESSAGES = 10_000;
/** A snapshot stream waits while this much is queued for its peer. */
const SNAPSHOT_QUEUE_HIGH_WATER = 4 * 1024 * 1024;

interface PendingProposal<R> {
  readonly term: number;
  resolve(result: R): void;
  reject(err: RaftError): void;
}

interface PendingRead {
  index: number | null;
  resolve(index: number): void;
  reject(err: RaftError): void;
  cancelTimer: Cancel;
}

/** A read on a member (not the leader) waiting for a shared ReadIndex request (see MemberReads). */
interface MemberRead {
  resolve(index: number): void;
  reject(err: RaftError): void;
  cancelTimer: Cancel;
}

/**
 * A member's linearizable reads: at most one ReadIndex request to the leader in flight; reads
 * that arrive meanwhile wait for the next one, which leaves when it is answered. They may not
 * join the one in flight: its answer may be a commit index from before they began.
 */
interface MemberReads {
  inFlight: { readonly context: string; readonly leader: NodeId | null; readonly reads: Set<MemberRead>; readonly cancelRetry: Cancel } | null;
  readonly next: Set<MemberRead>;
  /** A request for the next reads leaves once the current synchronous work is done (reads arriving together share it). */
  sendDue: boolean;
}

export class RaftDriver<R, S extends StagedTransfer = StagedFile> {
  private readonly node: RaftNode;
  private readonly opts: DriverOptions<R, S>;
  private readonly clock: DriverClock;
  private readonly proposals = new Map<number, PendingProposal<R>>();
  /** Entries another member proposed that callers here wait for (awaitEntry), by index. */
  private readonly awaited = new Map<number, Array<PendingProposal<R>>>();
  private readonly reads = new Map<string, PendingRead>();
  private readonly memberReads: MemberReads = { inFlight: null, next: new Set(), sendDue: false };
  private readonly appliedWaiters: Array<{ index: number; resolve: () => void }> = [];
  private stopTicker: Cancel | null = null;
  private running = false;
  private scheduled = false;
  private stopped = false;
  private nextReadId = 1;
  /**
   * Read contexts are `${readTag}.${n}`, unique to this process: a leader may still answer a
   * context an earlier process of this node asked (a queued or delayed message), and that
   * answer must not be taken for one of ours, whose index it may be below.
   */
  private readonly readTag: string;
  private applied: number;
  /** Null without SnapshotIO: then no snapshot can be received. */
  private readonly assembler: SnapshotAssembler<S> | null;
  private pendingInstall: { message: SnapshotRequest; staged: S } | null = null;
  private installing = false;
  private held: Message[] = [];
  private readonly streaming = new Set<NodeId>();
  /** The hard state last written; null until the first write of this process. */
  private persistedHardState: HardState | null = null;
  /** The term on disk: the loaded one until this process writes one. */
  private durableTerm: number;
  /** When the Ready (or the log compaction after it) being handled began; null between them (holding). */
  private readyStartedAt: number | null = null;
  /** How long heartbeats go out while one Ready is held (sendBeatsEarly). */
  private readonly maxHeldBeatMs: number;
  /** Heartbeat round -> when its Ready was taken (no later than it was sent), on both clocks (see leaseIndex). */
  private readonly roundSentAt = new Map<number, { readonly monotonic: number; readonly wall: number }>();
  /** How long after sending a round its quorum acknowledgement lets reads skip a round (RaftNode.leaseRound). */
  private readonly leaseMs: number;
  private readonly readCounts = { lease: 0, round: 0 };
  /** Leader: members' ReadIndex requests answered under the lease, without a round. */
  private memberReadsLeased = 0;
  private readonly stallWarnMs: number;

  constructor(options: DriverOptions<R, S>, appliedIndex: number) {
    this.node = options.node;
    this.opts = options;
    this.clock = options.clock ?? systemClock;
    const random = options.random ?? { int: (n: number) => randomInt(n) };
    this.readTag = `${random.int(2 ** 32).toString(36)}-${random.int(2 ** 32).toString(36)}`;
    this.applied = appliedIndex;
    this.assembler = options.snapshots ? new SnapshotAssembler(options.snapshots.staging) : null;
    // Two ticks of margin: a follower's first tick may come right after it heard the round, and timers jitter.
    this.leaseMs = Math.max(0, (this.node.leaseTicks - 2) * options.tickMs * (1 - CLOCK_RATE_ALLOWANCE));
    this.stallWarnMs = options.stallWarnMs ?? Number.POSITIVE_INFINITY;
    this.durableTerm = this.node.status().term;
    this.maxHeldBeatMs = 2 * (2 * this.node.electionTicks) * options.tickMs;
  }

  start(): void {
    let lastTick = this.clock.monotonic();
    this.stopTicker = this.clock.every(this.opts.tickMs, () => {
      const now = this.clock.monotonic();
      const late = now - lastTick - this.opts.tickMs;
      lastTick = now;
      if (late >= this.stallWarnMs) this.opts.onStall?.({ kind: 'tick', ms: Math.round(late) });
      if (this.installing) return; // time stands still for the core while its state is replaced
      this.node.tick();
      this.sendBeatsEarly();
      this.schedule();
    });
    // A lone voter leads itself at once (after the lease window, if it may have answered a leader before).
    if (this.node.status().config.voters.length === 1) this.node.campaign();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopTicker?.();
    this.failAll(new RaftError('UNAVAILABLE', 'server is shutting down'));
    while (this.running) await new Promise<void>((r) => this.clock.defer(r));
    this.assembler?.abandon();
    this.discardPendingInstall();
  }

  get appliedIndex(): number {
    return this.applied;
  }

  status(): Status {
    return this.node.status();
  }

  /** Term and configuration of the state at applied index `index` (see RaftNode.snapshotMetaAt). */
  snapshotMetaAt(index: number): SnapshotMeta | null {
    return this.node.snapshotMetaAt(index);
  }

  /** A message from a peer. */
  step(message: Message): void {
    if (this.stopped) return;
    if (message.type === 'heartbeatResp' && this.opts.onPeerRoundTrip !== undefined) {
      const sent = this.roundSentAt.get(Number(message.context));
      if (sent !== undefined) this.opts.onPeerRoundTrip(message.from, (this.clock.monotonic() - sent.monotonic) / 1000);
    }
    if (this.installing) {
      if (this.held.length < MAX_HELD_MESSAGES) this.held.push(message);
      return;
    }
    if (message.type === 'snapshot') {
      this.receiveSnapshotChunk(message);
      return;
    }
    if (message.type === 'readIndex' && this.answerReadUnderLease(message)) return;
    this.node.step(message);
    if (message.type === 'heartbeat') this.sendBeatsEarly();
    this.schedule();
  }

  /** Leader: a member's ReadIndex request answered at once while the lease holds (else the core takes a round). */
  private answerReadUnderLease(m: ReadIndexRequest): boolean {
    if (this.leaseIndex() === null || this.node.respondReadIndex(m) === null) return false;
    this.memberReadsLeased++;
    this.schedule();
    return true;
  }

  /**
   * While a Ready is being written and applied, heartbeats (and answers to them) need not wait for
   * it (RaftNode.takeBeats): a slow batch must not cost the leadership. One held for longer than
   * twice the longest election timeout is a disk that hangs, not a slow batch: then the beats wait
   * too, so that the followers elect a leader that can still commit.
   */
  private sendBeatsEarly(): void {
    if (!this.running || this.readyStartedAt === null) return;
    if (this.clock.monotonic() - this.readyStartedAt > this.maxHeldBeatMs) return;
    const beats = this.node.takeBeats(this.durableTerm);
    if (beats.length === 0) return;
    this.noteRoundsSent(beats);
    for (const m of beats) this.opts.transport.send(m);
    this.opts.transport.flush?.();
  }

  /** Propose a command; resolves with its apply result once committed and applied here. */
  propose(data: Uint8Array): Promise<R> {
    return this.track(this.node.propose(data));
  }

  proposeConfigChange(change: ConfigChange): Promise<R> {
    return this.track(this.node.proposeConfigChange(change));
  }

  /** `propose`, also saying where the entry went in the log (null: refused, and `result` rejects why). */
  proposePlaced(data: Uint8Array): { readonly place: { readonly index: number; readonly term: number } | null; readonly result: Promise<R> } {
    // Stopped: nothing may reach the core's log, so a refusal (place null) means not proposed.
    if (this.stopped) return { place: null, result: Promise.reject(new RaftError('UNAVAILABLE', 'server is shutting down', null, true)) };
    const proposed = this.node.propose(data);
    const place = proposed.ok ? { index: proposed.index, term: proposed.term } : null;
    return { place, result: this.track(proposed) };
  }

  /**
   * Waits for the entry another member proposed at (`index`, `term`) (a forwarded write the
   * leader answered with its place in the log): resolves with this member's apply result of
   * it, settled like a local proposal. Unlike a proposal it survives role changes here (this
   * member never led it). Rejects with `notProposed` when the entry applied at `index` has
   * another term: by Log Matching that command can never be applied. An index applied
   * already rejects too (UNAVAILABLE), since its result was not kept; callers that may be
   * late find their entry by other means (the envelope's request id). `cancel` gives up the
   * wait (a forward's deadline): the waiter is forgotten at once, not kept until the index
   * applies, and the promise rejects UNAVAILABLE (outcome unknown).
   */
  awaitEntry(index: number, term: number, cancel?: AbortSignal): Promise<R> {
    if (this.stopped) return Promise.reject(new RaftError('UNAVAILABLE', 'server is shutting down'));
    if (cancel?.aborted === true) return Promise.reject(abandonedEntry(index));
    if (index <= this.applied) {
      const applied = this.node.termAt(index);
      if (applied !== null && applied !== term) return Promise.reject(supersededEntry(index));
      return Promise.reject(new RaftError('UNAVAILABLE', `entry ${index} was applied here before it was awaited; its result was not kept`));
    }
    return new Promise<R>((resolve, reject) => {
      const waiter: PendingProposal<R> = { term, resolve, reject };
      const waiting = this.awaited.get(index);
      if (waiting === undefined) this.awaited.set(index, [waiter]);
      else waiting.push(waiter);
      if (cancel === undefined) return;
      const onCancel = (): void => {
        const still = this.awaited.get(index);
        const at = still?.indexOf(waiter) ?? -1;
        if (at < 0) return; // settled already
        still!.splice(at, 1);
        if (still!.length === 0) this.awaited.delete(index);
        reject(abandonedEntry(index));
      };
      cancel.addEventListener('abort', onCancel, { once: true });
      // Settled some other way: the listener has nothing left to do.
      waiter.resolve = (result) => {
        cancel.removeEventListener('abort', onCancel);
        resolve(result);
      };
      waiter.reject = (err) => {
        cancel.removeEventListener('abort', onCancel);
        reject(err);
      };
    });
  }

  /** Entries awaited here (awaitEntry) and not yet settled nor given up. */
  get awaitedEntries(): number {
    let n = 0;
    for (const waiting of this.awaited.values()) n += waiting.length;
    return n;
  }

  /** The transport saw `peer`'s process gone: if it led us, elect a new leader soon (RaftNode.leaderUnreachable). */
  leaderUnreachable(peer: NodeId): void {
    if (this.stopped) return;
    this.node.leaderUnreachable(peer);
    this.schedule();
  }

  /** Start an election now (an operator's or a test's choice; the core campaigns on its own on timeouts). */
  campaign(): void {
    if (this.stopped || this.installing) return;
    this.node.campaign();
    this.schedule();
  }

  transferLeadership(to: NodeId): boolean {
    const ok = this.node.transferLeadership(to);
    this.schedule();
    return ok;
  }

  /**
   * The core was called directly, not through this driver (a scripted test steps a
   * core by hand): handle whatever Ready that left, as after any call made here.
   */
  wake(): void {
    this.schedule();
  }

  /**
   * A linearizable read point: resolves with an index once it is applied locally,
   * so that reading the state machine now reflects every write acknowledged before the call.
   */
  readIndex(timeoutMs: number): Promise<number> {
    if (this.stopped) return Promise.reject(new RaftError('UNAVAILABLE', 'server is shutting down'));
    const leased = this.leaseIndex();
    if (leased !== null) {
      this.readCounts.lease++;
      return this.waitApplied(leased).then(() => leased);
    }
    this.readCounts.round++;
    if (this.node.status().role !== 'leader') return this.memberReadIndex(timeoutMs);
    const context = `${this.readTag}.${this.nextReadId++}`;
    if (!this.node.readIndex(context)) {
      return Promise.reject(new RaftError('NO_LEADER', 'no leader is known for a linearizable read'));
    }
    this.schedule();
    return new Promise<number>((resolve, reject) => {
      const cancelTimer = this.clock.after(timeoutMs, () => {
        this.reads.delete(context);
        reject(new RaftError('TIMEOUT', `linearizable read not confirmed within ${timeoutMs} ms`));
      });
      this.reads.set(context, { index: null, resolve, reject, cancelTimer });
    });
  }

  /** A read on a member: waits for the next ReadIndex request, shared with every read waiting for it (MemberReads). */
  private memberReadIndex(timeoutMs: number): Promise<number> {
    const reads = this.memberReads;
    if (reads.inFlight === null && this.node.status().leader === null) {
      // Nothing in flight and nobody to ask: refused at once, as a leader-less node always has.
      return Promise.reject(new RaftError('NO_LEADER', 'no leader is known for a linearizable read'));
    }
    return new Promise<number>((resolve, reject) => {
      const read: MemberRead = {
        resolve,
        reject,
        cancelTimer: this.clock.after(timeoutMs, () => {
          reads.inFlight?.reads.delete(read);
          reads.next.delete(read);
          reject(new RaftError('TIMEOUT', `linearizable read not confirmed within ${timeoutMs} ms`));
        }),
      };
      reads.next.add(read);
      if (reads.inFlight !== null || reads.sendDue) return;
      reads.sendDue = true;
      const send = (): void => {
        reads.sendDue = false;
        if (reads.inFlight === null) void this.sendMemberReads();
      };
      if (this.clock.soon !== undefined) this.clock.soon(send);
      else this.clock.defer(send);
    });
  }

  /**
   * Sends one ReadIndex request for every read waiting: the next ones and those of a request in
   * flight, which is given up (a request sent after a read began may always answer it). Called
   * when the one in flight is answered, when a leader other than the one asked becomes known (this
   * node too), and when an election timeout passed without an answer (lost, or the leader is
   * gone). Returns false, leaving the reads waiting (until a leader is known, or their own
   * timeouts), when no leader is known.
   */
  private sendMemberReads(): boolean {
    const reads = this.memberReads;
    reads.inFlight?.cancelRetry();
    // The reads of the request given up, then the next ones (in arrival order); that request's set is not used again.
    const waiting = reads.inFlight?.reads ?? new Set<MemberRead>();
    for (const read of reads.next) waiting.add(read);
    reads.inFlight = null;
    reads.next.clear();
    if (waiting.size === 0) return true;
    const context = `${this.readTag}.${this.nextReadId++}`;
    if (!this.node.readIndex(context)) {
      for (const read of waiting) reads.next.add(read);
      return false;
    }
    const retryMs = this.node.electionTicks * this.opts.tickMs;
    reads.inFlight = { context, leader: this.node.status().leader, reads: waiting, cancelRetry: this.clock.after(retryMs, () => void this.sendMemberReads()) };
    this.schedule();
    return true;
  }

  /** The answer to a member's ReadIndex request: its reads resolve once `index` is applied here; the next request leaves. */
  private answerMemberReads(context: string, index: number): boolean {
    const inFlight = this.memberReads.inFlight;
    if (inFlight === null || inFlight.context !== context) return false;
    inFlight.cancelRetry();
    this.memberReads.inFlight = null;
    for (const read of inFlight.reads) read.cancelTimer();
    void this.waitApplied(index).then(() => {
      for (const read of inFlight.reads) read.resolve(index);
    });
    void this.sendMemberReads();
    return true;
  }

  /** Leader: how many members' ReadIndex requests it answered under its lease, without a round. */
  get memberReadsAnsweredUnderLease(): number {
    return this.memberReadsLeased;
  }

  /**
   * A linearizable read point with nothing to wait for: the commit index if this leader's
   * lease covers this moment and the state machine has applied up to it (reading the state
   * machine now, synchronously, reflects every write acknowledged before the call); null
   * otherwise (use readIndex). Counted as a lease read only when `count` (a caller that
   * may not read after all counts later with countLeaseRead).
   */
  readIndexNow(count = true): number | null {
    if (this.stopped) return null;
    const leased = this.leaseIndex();
    if (leased === null || this.applied < leased) return null;
    if (count) this.readCounts.lease++;
    return leased;
  }

  /** A read served from a readIndexNow(false) point. */
  countLeaseRead(): void {
    this.readCounts.lease++;
  }

  /** How many linearizable reads were served under the leader lease, and how many took a heartbeat round. */
  get linearizableReads(): { readonly lease: number; readonly round: number } {
    return { ...this.readCounts };
  }

  /**
   * The commit index, if this leader's lease covers this moment; otherwise null.
   * The monotonic clock keeps running while the process is paused, but not while
   * the machine sleeps; the wall clock does, but can be stepped. The lease holds
   * only while both say it does, and a wall clock stepped back ends it.
   */
  leaseIndex(): number | null {
    const round = this.node.leaseRound();
    if (round === null) return null;
    const sent = this.roundSentAt.get(round);
    if (sent === undefined) return null;
    const wallElapsed = this.clock.wall() - sent.wall;
    if (this.clock.monotonic() - sent.monotonic >= this.leaseMs || wallElapsed >= this.leaseMs || wallElapsed < 0) return null;
    return this.node.committedIndex;
  }

  private noteRoundsSent(messages: readonly Message[]): void {
    const now = { monotonic: this.clock.monotonic(), wall: this.clock.wall() };
    for (const m of messages) {
      if (m.type !== 'heartbeat') continue;
      const round = Number(m.context);
      if (!this.roundSentAt.has(round)) this.roundSentAt.set(round, now);
    }
    for (const oldest of this.roundSentAt.keys()) {
      if (this.roundSentAt.size <= MAX_ROUND_TIMES) break;
      this.roundSentAt.delete(oldest);
    }
  }

  /**
   * Resolves once the state machine has applied `index`. `cancel` gives up the wait (a
   * relayed answer settled at its deadline): the waiter is forgotten at once, not kept until
   * the index applies, and the promise rejects UNAVAILABLE.
   */
  waitApplied(index: number, cancel?: AbortSignal): Promise<void> {
    if (this.applied >= index) return Promise.resolve();
    if (cancel?.aborted === true) return Promise.reject(abandonedApply(index));
    return new Promise((resolve, reject) => {
      const waiter = { index, resolve };
      this.appliedWaiters.push(waiter);
      if (cancel === undefined) return;
      const onCancel = (): void => {
        const at = this.appliedWaiters.indexOf(waiter);
        if (at < 0) return; // released already
        this.appliedWaiters.splice(at, 1);
        reject(abandonedApply(index));
      };
      cancel.addEventListener('abort', onCancel, { once: true });
      waiter.resolve = () => {
        cancel.removeEventListener('abort', onCancel);
        resolve();
      };
    });
  }

  /** Waits for an applied index (waitApplied) not yet released nor given up. */
  get appliedWaits(): number {
    return this.appliedWaiters.length;
  }

  private track(result: ProposeResult): Promise<R> {
    if (this.stopped) return Promise.reject(new RaftError('UNAVAILABLE', 'server is shutting down'));
    if (!result.ok) {
      if (result.reason === 'notLeader') {
        return Promise.reject(
          result.leader === null
            ? new RaftError('NO_LEADER', 'no leader is known')
            : new RaftError('NOT_LEADER', `this node is not the leader; ${result.leader} is`, result.leader),
        );
      }
      const why =
        result.reason === 'transferring'
          ? 'leadership is being transferred'
          : result.reason === 'overloaded'
            ? 'too many writes are waiting to commit; retry shortly'
            : 'a membership change is in progress';
      return Promise.reject(new RaftError('UNAVAILABLE', why, result.leader, true));
    }
    this.schedule();
    // A proposal of an earlier term at the same index can no longer commit: settle it now.
    this.proposals.get(result.index)?.reject(new RaftError('UNAVAILABLE', `proposal at index ${result.index} was superseded`));
    return new Promise<R>((resolve, reject) => {
      this.proposals.set(result.index, { term: result.term, resolve, reject });
    });
  }

  private schedule(): void {
    if (this.scheduled || this.running || this.stopped) return;
    this.scheduled = true;
    // As soon as the caller's synchronous work is done, not after a turn of the event loop: every
    // call made in that work (each message of a frame, each proposal of a batch) is in the core by
    // then, and a single put waits one hand-off less at each member. Whatever arrives while the
    // Ready's write is in flight is group-committed by the next Ready, as before.
    const run = (): void => {
      this.scheduled = false;
      void this.runReadyLoop();
    };
    if (this.clock.soon !== undefined) this.clock.soon(run);
    else this.clock.defer(run);
  }

  private async runReadyLoop(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (!this.stopped && (this.pendingInstall !== null || this.node.hasReady())) {
        await this.holding(() => (this.pendingInstall !== null ? this.installSnapshot() : this.handleReady(this.node.ready())));
        // Here, not after the loop: under steady load the loop may never drain.
        await this.holding(() => this.maybeCompact());
      }
    } catch (err) {
      this.stopped = true;
      this.stopTicker?.();
      this.failAll(new RaftError('UNAVAILABLE', 'storage failed; the node stopped'));
      this.opts.onFatal(err);
    } finally {
      this.running = false;
    }
    if (!this.stopped && (this.pendingInstall !== null || this.node.hasReady())) this.schedule();
  }

  /** Runs a step of the Ready loop that holds the core's output back, marking when it began (sendBeatsEarly). */
  private async holding(work: () => Promise<void>): Promise<void> {
    this.readyStartedAt = this.clock.monotonic();
    try {
      await work();
    } finally {
      this.readyStartedAt = null;
    }
  }

  private async handleReady(rd: Ready): Promise<void> {
    const started = this.clock.monotonic();
    const timed = await this.timeReady(rd);
    const ms = this.clock.monotonic() - started;
    if (ms >= this.stallWarnMs) {
      this.opts.onStall?.({ kind: 'ready', ms: Math.round(ms), persistMs: Math.round(timed.persistMs), applyMs: Math.round(timed.applyMs), entries: rd.entries.length, committed: rd.committedEntries.length });
    }
  }

  /** Handles one Ready; returns how long its persist and its apply took (they may overlap). */
  private async timeReady(rd: Ready): Promise<{ persistMs: number; applyMs: number }> {
    const times = { persistMs: 0, applyMs: 0 };
    const { transport } = this.opts;
    this.noteRoundsSent(rd.messages);
    const persist = async (): Promise<void> => {
      const started = this.clock.monotonic();
      await this.persist(rd);
      times.persistMs = this.clock.monotonic() - started;
    };
    // The write starts first (on to the thread pool), then the appends leave: sending them wakes
    // the followers, which may take this core for a while; the disk need not wait for that.
    const persisting = this.mustPersist(rd) ? persist() : null;
    // Awaited below; marked handled now in case a send throws first (the Ready's error then wins).
    persisting?.catch(() => undefined);
    const early = rd.messages.filter(mayBeSentBeforePersist);
    for (const m of early) transport.send(m);
    if (early.length > 0) transport.flush?.();
    const sendRest = (): void => {
      let sent = 0;
      for (const m of rd.messages) if (!mayBeSentBeforePersist(m)) (transport.send(m), sent++);
      if (sent > 0) transport.flush?.();
    };
    // A configuration change takes effect in the core at advance(): its proposer is answered only then
    // (from here to advance() nothing awaits), so it sees the change in status(). Every other entry is
    // answered as soon as it is written, before notifications of later entries go out.
    const configResults: Array<[Entry, R]> = [];
    const applyCommitted = async (): Promise<void> => {
      if (rd.committedEntries.length === 0) return;
      const started = this.clock.monotonic();
      await this.opts.apply(rd.committedEntries, (entry, result) => {
        if (entry.index !== this.applied + 1) throw new Error(`apply reported entry ${entry.index} after ${this.applied}`);
        this.applied = entry.index;
        if (entry.kind === 'config') configResults.push([entry, result]);
        else this.settleProposal(entry, result);
      });
      const last = rd.committedEntries[rd.committedEntries.length - 1]!.index;
      if (this.applied !== last) throw new Error(`apply reported entries up to ${this.applied}, not ${last}`);
      times.applyMs = this.clock.monotonic() - started;
    };
    if (persisting === null) {
      sendRest();
      await applyCommitted();
    } else if (this.committedAreDurable(rd)) {
      // Entries an earlier Ready wrote are applied while this Ready's write is in flight: the
      // apply no longer waits a whole synced write (and its trip back) before it starts.
      const outcomes = await Promise.allSettled([persisting.then(sendRest), applyCommitted()]);
      for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
    } else {
      await persisting;
      sendRest();
      await applyCommitted();
    }
    for (const [entry, result] of configResults) this.settleProposal(entry, result);
    // After applying: a proposal that committed in this very Ready gets its result, not UNAVAILABLE.
    if (rd.softState !== null) this.onSoftState(rd.softState);
    this.releaseAppliedWaiters();
    for (const rs of rd.readStates) {
      if (this.answerMemberReads(rs.context, rs.index)) continue;
      const read = this.reads.get(rs.context);
      if (!read) continue;
      this.reads.delete(rs.context);
      read.cancelTimer();
      void this.waitApplied(rs.index).then(() => read.resolve(rs.index));
    }
    for (const need of rd.snapshotRequests) void this.streamSnapshot(need.to);
    this.node.advance(rd);
    return times;
  }

  // ---------------------------------------------------------------- snapshots

  /** Stream the current state machine to a follower whose missing entries were compacted. */
  private async streamSnapshot(to: NodeId): Promise<void> {
    const io = this.opts.snapshots;
    if (!io || this.streaming.has(to)) return;
    this.streaming.add(to);
    let index = 0;
    const started = performance.now();
    try {
      const captured = await io.capture();
      try {
        index = captured.index;
        const meta = this.node.snapshotMetaAt(captured.index);
        const { term, role } = this.node.status();
        if (meta === null || role !== 'leader') throw new Error(`no snapshot meta at ${captured.index} (role ${role})`);
        const hash = createHash('sha256');
        let offset = 0;
        const base = { type: 'snapshot' as const, from: this.node.id, to, term, meta };
        for await (const chunk of captured.chunks()) {
          await this.waitForRoom(to, term);
          hash.update(chunk);
          this.opts.transport.send({ ...base, offset, chunk, done: false, checksum: '' });
          offset += chunk.length;
        }
        this.opts.transport.send({ ...base, offset, chunk: new Uint8Array(0), done: true, checksum: hash.digest('hex') });
        this.node.reportSnapshot(to, true);
        this.opts.onSnapshotEvent?.({ kind: 'sent', peer: to, index, bytes: offset, seconds: (performance.now() - started) / 1000 });
      } finally {
        await captured.release();
      }
    } catch (err) {
      this.node.reportSnapshot(to, false);
      this.opts.onSnapshotEvent?.({ kind: 'failed', peer: to, index, error: String(err) });
    } finally {
      this.streaming.delete(to);
      this.schedule();
    }
  }

  /** Backpressure: wait while the peer's queue is full; give up if leadership moved on. */
  private async waitForRoom(to: NodeId, term: number): Promise<void> {
    const queued = this.opts.transport.queuedBytes;
    while (queued && queued.call(this.opts.transport, to) > SNAPSHOT_QUEUE_HIGH_WATER) {
      if (this.stopped || this.node.status().term !== term) throw new Error('leadership changed during the snapshot');
      await new Promise<void>((r) => this.clock.after(5, r));
    }
    if (this.stopped || this.node.status().term !== term) throw new Error('leadership changed during the snapshot');
  }

  private receiveSnapshotChunk(m: SnapshotRequest): void {
    if (this.assembler === null) return;
    let staged: S | null;
    try {
      staged = this.assembler.accept(`${m.from}/${m.term}/${m.meta.index}`, m.offset, m.chunk, m.done, m.checksum);
    } catch (err) {
      this.opts.onSnapshotEvent?.({ kind: 'refused', peer: m.from, index: m.meta.index, error: String(err) });
      return;
    }
    if (staged === null) return;
    this.discardPendingInstall(); // a newer complete snapshot replaces one not yet installed
    this.pendingInstall = { message: m, staged };
    this.schedule();
  }

  private discardPendingInstall(): void {
    if (this.pendingInstall === null) return;
    this.opts.snapshots?.discard(this.pendingInstall.staged);
    this.pendingInstall = null;
  }

  /** Runs inside the Ready loop, with no Ready outstanding: the core holds still until it is done. */
  private async installSnapshot(): Promise<void> {
    const { message, staged } = this.pendingInstall!;
    this.pendingInstall = null;
    const io = this.opts.snapshots;
    if (!io || !this.node.shouldInstallSnapshot(message)) {
      io?.discard(staged);
      // Still step it in (nothing is installed): a follower that already has it must
      // answer with its commit index, or a leader whose acknowledgement was lost would
      // resend the same snapshot forever while no quorum can form without us.
      this.node.step({ ...message, chunk: new Uint8Array(0) });
      return;
    }
    this.installing = true;
    const started = performance.now();
    try {
      await io.install(message.meta, staged);
      this.applied = message.meta.index;
      this.node.step({ ...message, chunk: new Uint8Array(0) });
      this.releaseAppliedWaiters();
      this.settleAwaitedBySnapshot(message.meta);
      this.opts.onSnapshotEvent?.({ kind: 'installed', peer: message.from, index: message.meta.index, bytes: staged.bytes, seconds: (performance.now() - started) / 1000 });
    } finally {
      this.installing = false;
      const held = this.held;
      this.held = [];
      for (const m of held) this.step(m);
    }
  }

  /** Drop the log prefix the state machine no longer needs, keeping a window for lagging followers. */
  private async maybeCompact(): Promise<void> {
    const policy = this.opts.compaction;
    if (!policy || !this.opts.snapshots) return;
    const start = this.node.logStart();
    if (this.applied - start < policy.everyEntries + policy.keepEntries) return;
    const meta = this.node.compact(this.applied - policy.keepEntries);
    await this.opts.storage.compact(meta);
    this.opts.onSnapshotEvent?.({ kind: 'compacted', index: meta.index });
  }

  private async persist(rd: Ready): Promise<void> {
    await this.opts.storage.persist(rd.hardState, rd.entries);
    if (rd.hardState !== null) {
      this.persistedHardState = rd.hardState;
      this.durableTerm = rd.hardState.term;
    }
  }

  /**
   * Whether every committed entry of `rd` is durable here already: it lies below the entries
   * this Ready writes, and every Ready before this one finished its write before the next was
   * taken. An entry this Ready writes itself is applied only once that write is done, so no
   * member ever applies (or answers from) an entry its own log does not yet hold.
   */
  private committedAreDurable(rd: Ready): boolean {
    const firstNew = rd.entries[0];
    const lastCommitted = rd.committedEntries[rd.committedEntries.length - 1];
    return lastCommitted !== undefined && (firstNew === undefined || lastCommitted.index < firstNew.index);
  }

  /**
   * A Ready that only moved the commit index needs no fsync: the commit index is
   * recomputed after a restart (it is never below the applied index), so writing it
   * lazily with the next real write is safe and saves one sync per proposal.
   */
  private mustPersist(rd: Ready): boolean {
    if (rd.entries.length > 0) return true;
    const hs = rd.hardState;
    if (hs === null) return false;
    const prev = this.persistedHardState;
    return prev === null || hs.term !== prev.term || hs.vote !== prev.vote;
  }

  private settleProposal(entry: Entry, result: R): void {
    if (this.awaited.size > 0) this.settleAwaited(entry, result);
    const pending = this.proposals.get(entry.index);
    if (!pending) return;
    this.proposals.delete(entry.index);
    if (pending.term === entry.term) pending.resolve(result);
    else pending.reject(new RaftError('UNAVAILABLE', `proposal at index ${entry.index} was superseded by a new leader`));
  }

  private settleAwaited(entry: Entry, result: R): void {
    const waiting = this.awaited.get(entry.index);
    if (waiting === undefined) return;
    this.awaited.delete(entry.index);
    for (const w of waiting) (w.term === entry.term ? w.resolve(result) : w.reject(supersededEntry(entry.index)));
  }

  /**
   * A snapshot moved the applied index past awaited entries without applying them here one by
   * one: an entry of a term above the snapshot's can not be in it (terms never fall along the
   * log), so it can never apply; any other may be in it, its outcome unknown.
   */
  private settleAwaitedBySnapshot(meta: SnapshotMeta): void {
    for (const [index, waiting] of this.awaited) {
      if (index > meta.index) continue;
      this.awaited.delete(index);
      for (const w of waiting) w.reject(coveredBySnapshot(index, w.term, meta));
    }
  }

  private onSoftState(state: SoftState): void {
    if (state.role !== 'leader') {
      // The outcome of what we proposed is unknown now: it may still commit under the next leader.
      const err = new RaftError('UNAVAILABLE', 'leadership was lost while the request was pending; the outcome is unknown', state.leader);
      for (const p of this.proposals.values()) p.reject(err);
      this.proposals.clear();
    }
    // A request to a leader that is no longer the one known may never be answered: ask the one known now.
    const member = this.memberReads;
    if (state.leader !== null && (member.inFlight === null ? member.next.size > 0 : member.inFlight.leader !== state.leader)) void this.sendMemberReads();
    this.opts.onSoftState?.(state);
  }

  private releaseAppliedWaiters(): void {
    if (this.appliedWaiters.length === 0) return;
    const still: typeof this.appliedWaiters = [];
    for (const w of this.appliedWaiters) (w.index <= this.applied ? w.resolve() : still.push(w));
    this.appliedWaiters.length = 0;
    for (const w of still) this.appliedWaiters.push(w);
  }

  private failAll(err: RaftError): void {
    for (const p of this.proposals.values()) p.reject(err);
    this.proposals.clear();
    for (const waiting of this.awaited.values()) for (const w of waiting) w.reject(err);
    this.awaited.clear();
    for (const r of this.reads.values()) {
      r.cancelTimer();
      r.reject(err);
    }
    this.reads.clear();
    const member = this.memberReads;
    member.inFlight?.cancelRetry();
    for (const waiting of [member.inFlight?.reads, member.next]) {
      for (const r of waiting ?? []) {
        r.cancelTimer();
        r.reject(err);
      }
    }
    member.inFlight = null;
    member.next.clear();
  }
}

/**
 * Why an awaited entry (`index`, `term`) that a snapshot covered is not answered: an entry of a
 * term above the snapshot's cannot be in it (terms never fall along the log), so it never
 * applies (not proposed: safe to send again); any other may be in it, its outcome unknown.
 * Answering "not proposed" for the second kind would let a client apply a write twice.
 */
export function coveredBySnapshot(index: number, term: number, meta: SnapshotMeta): RaftError {
  return term > meta.term ? supersededEntry(index) : new RaftError('UNAVAILABLE', `entry ${index} was covered by an installed snapshot; the outcome is unknown`);
}

/** The caller gave up waiting for the entry at `index` (its deadline): whether it applies is unknown to it. */
function abandonedApply(index: number): RaftError {
  return new RaftError('UNAVAILABLE', `the wait for index ${index} to apply was given up`);
}

function abandonedEntry(index: number): RaftError {
  return new RaftError('UNAVAILABLE', `the wait for entry ${index} was given up; its outcome is unknown`);
}

/** Another entry took the index: the awaited command was never in a committed log, and never will be. */
function supersededEntry(index: number): RaftError {
  return new RaftError('UNAVAILABLE', `the entry at index ${index} has another term: the awaited command was not applied and never will be`, null, true);
}
