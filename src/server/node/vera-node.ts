// One Vera member: its data directory, Raft core and driver, state machine and
// event log, wired together. It knows nothing about WebSocket or HTTP; the
// front end (client-server.ts) talks to it through propose/read calls and the
// hooks below.

import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { decodeConfigChange, type MemberChange } from '../../raft/config.js';
import { RaftNode } from '../../raft/core.js';
import { openDataDir, SNAPSHOTS_DIRNAME, readPeerIncarnations, rememberClusterId, writePeerIncarnations, type OpenedDataDir, type StoreIdentity } from '../../raft/datadir.js';
import { RaftDriver, type CompactionPolicy, type SnapshotEvent, type SnapshotIO, type Transport } from '../../raft/driver.js';
import { captureState, fileStaging, type CapturedState } from '../../raft/state-transfer.js';
import { installStagedSnapshot } from '../../raft/snapshot-install.js';
import type { ClusterConfig, Entry, Message, NodeId, RandomSource, SnapshotMeta, SoftState, Status } from '../../raft/types.js';
import { encodeMembers, MEMBERS_KEY, StateMachine, type ApplyOutcome, type Member } from '../../statemachine/index.js';
import { completeEnvelope, decodeEntryCommand, encodeEntryCommand, encodeForwardBody, mayBeOfFamily, readForwardEnvelope, REQUEST_ID_SINCE, type ForwardEnvelope } from '../../families/commands.js';
import { type AnyCommand } from '../../families/core-commands.js';
import { EventLog, type RecordedEvent } from './event-log.js';
import { APPLIED_INDEX } from '../../statemachine/applied.js';
import { stateExtras } from '../../statemachine/state-extras.js';
import { checkAuditHead } from '../../families/audit/head-check.js';
import { WritePressure, type WritePressureLimits } from './write-pressure.js';
import { watchersOf } from '../../families/watches/queries.js';
import { FAMILIES, REGISTRY } from '../../families/registry.js';

export interface RaftTiming {
  readonly tickMs: number;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
}

// A heartbeat round every tick (50 ms) renews the leader lease (90 ms, see RaftDriver) before it runs out.
/** A slow apply's warning names at most this many of its commands' ops. */
const MAX_OPS_NAMED = 8;

/** The distinct ops of a run's outcomes (a refusal by its code), at most MAX_OPS_NAMED: only for a slow apply's warning. */
function opsNamed(outcomes: readonly ApplyOutcome[]): string[] {
  const ops = new Set<string>();
  for (const o of outcomes) {
    if (ops.size >= MAX_OPS_NAMED) break;
    ops.add(o.result.ok ? o.result.op : `refused ${o.result.code}`);
  }
  return [...ops];
}

export const DEFAULT_RAFT_TIMING: RaftTiming = { tickMs: 50, electionTicks: 20, heartbeatTicks: 1 };

export interface VeraNodeOptions {
  readonly id: NodeId;
  readonly dataDir: string;
  /**
   * The members (all voters, with addresses) a brand-new data directory starts
   * with; empty for a member that joins an existing cluster and learns its
   * configuration from the log or a snapshot.
   */
  readonly initialMembers: readonly Member[];
  /** The cluster id a brand-new store records (null when joining: learned from the first peer). */
  readonly clusterId: string | null;
  readonly timing: RaftTiming;
  readonly logger: Logger;
  /** How many events (plus their recipients) the event log keeps for replay to resuming sessions. */
  readonly eventLogCapacity: number;
  readonly compaction: CompactionPolicy;
  /** LevelDB's share of the open-file limit (fd-budget.ts). */
  readonly levelMaxOpenFiles?: number;
}

export const DEFAULT_COMPACTION: CompactionPolicy = { everyEntries: 10_000, keepEntries: 1_000 };

export type ClosableTransport = Transport & { close(): Promise<void> };

/** The leader must advertise at least this command version for a member to forward to it (entries with `r`). */
export const FORWARDING_SINCE = REQUEST_ID_SINCE;

/** Sends a non-leader's proposals to the leader (peer-service/forwarder.ts). */
export interface ProposalForwarder {
  /** Whether a proposal made now goes to `leader`. */
  accepts(leader: NodeId): boolean;
  /** Resolves with this member's apply outcome of the entry made from `body` (encodeForwardBody). */
  forward(leader: NodeId, body: Uint8Array): Promise<ApplyOutcome>;
  /** Every applied outcome carrying a request id, in apply order. */
  onApplied(outcome: ApplyOutcome): void;
}

/** What the front end hears about. All called synchronously, in apply order. */
export interface VeraNodeHooks {
  /** An entry was applied: its outcome and the recorded events (with recipients). */
  onApplied(outcome: ApplyOutcome, recorded: readonly RecordedEvent[]): void;
  onSoftState(state: SoftState): void;
  /** The address book changed: a config entry applied or a snapshot was installed. */
  onMembersChanged(members: readonly Member[]): void;
  /** A snapshot was installed: the state and the event log restart at `index` (no entry before it is applied here any more). */
  onSnapshotInstalled?(index: number): void;
  onFatal(err: unknown): void;
  /** For the metrics: each synced write of the Raft log, each run of entries applied, each snapshot event. */
  onLogSynced?(seconds: number): void;
  onAppliedRun?(seconds: number, entries: number): void;
  onSnapshot?(event: SnapshotEvent): void;
  onPeerRoundTrip?(peer: NodeId, seconds: number): void;
}

/** The Raft core refuses writes ('overloaded') past this many uncommitted entry bytes. */
const MAX_UNCOMMITTED_BYTES = 256 * 1024 * 1024;
/** Client connections stop reading well before that: a quarter of it, or 16,384 writes waiting. */
const WRITE_PRESSURE: WritePressureLimits = { writes: 16_384, bytes: MAX_UNCOMMITTED_BYTES / 4 };

const cryptoRandom: RandomSource = {
  int(n: number): number {
    return randomBytes(4).readUInt32BE(0) % n;
  },
};

/**
 * This member's store disagrees with the cluster about the membership, typically
 * because it was re-added with the store it had before (or a wiped store that
 * bootstrapped itself). Continuing could let it vote on the wrong configuration.
 */
export class MembershipDivergedError extends Error {
  override readonly name = 'MembershipDivergedError';
  constructor(id: NodeId) {
    super(`the cluster changed the membership of ${id} in a way this store's configuration refuses: its data directory is not the cluster's view of it; stop it, wipe its data directory and start it with --join`);
  }
}

function changeConcerns(entry: Entry, id: NodeId): boolean {
  try {
    return decodeConfigChange(entry.data).node === id;
  } catch {
    return false;
  }
}

/** The forwarder attached after the node opened, which the apply loop tells of forwarded entries. */
interface ForwarderSlot {
  current: ProposalForwarder | null;
}

/** Messages go to the transport attached after the node opened (the transport needs the store's identity). */
class TransportSlot implements Transport {
  current: ClosableTransport | null = null;

  send(message: Message): void {
    this.current?.send(message);
  }

  flush(): void {
    this.current?.flush?.();
  }

  queuedBytes(to: NodeId): number {
    return this.current?.queuedBytes?.(to) ?? 0;
  }
}

export class VeraNode {
  private constructor(
    readonly id: NodeId,
    private readonly dir: OpenedDataDir,
    readonly stateMachine: StateMachine,
    readonly events: EventLog,
    private readonly driver: RaftDriver<ApplyOutcome>,
    private readonly slot: TransportSlot,
    private readonly forwarding: ForwarderSlot,
  ) {}

  static async open(opts: VeraNodeOptions, hooks: VeraNodeHooks): Promise<VeraNode> {
    const initialConfig: ClusterConfig = { voters: opts.initialMembers.map((m) => m.id), learners: [] };
    const dir = await openDataDir(opts.dataDir, {
      initialConfig,
      nodeId: opts.id,
      clusterId: opts.clusterId,
      // The address book is part of a new store from the start, so no crash can leave it unseeded.
      initialState: opts.initialMembers.length === 0 ? [] : [{ key: MEMBERS_KEY, value: encodeMembers(opts.initialMembers) }],
      ...(opts.levelMaxOpenFiles === undefined ? {} : { maxOpenFiles: opts.levelMaxOpenFiles }),
      appliedIndex: APPLIED_INDEX,
    });
    try {
      if (hooks.onLogSynced !== undefined) dir.storage.onSynced = (seconds) => hooks.onLogSynced!(seconds);
      const loaded = await dir.storage.load();
      const sm = await StateMachine.open(dir.db, REGISTRY);
      dir.storage.appliedSource = () => sm.appliedIndex;
      const auditProblem = await checkAuditHead(loaded.entries, sm, { mayBeOfFamily, decodeEntry: decodeEntryCommand });
      if (auditProblem !== null) opts.logger.error({ event: 'audit-log-cut-back', problem: auditProblem }, 'the audit log does not hold what this member applied');
      const events = new EventLog(opts.eventLogCapacity, sm.appliedIndex);
      const node = new RaftNode(
        {
          id: opts.id,
          electionTicks: opts.timing.electionTicks,
          heartbeatTicks: opts.timing.heartbeatTicks,
          random: cryptoRandom,
          maxInflightMessages: 256,
          maxInflightBytes: 32 * 1024 * 1024,
          maxMessageBytes: 1024 * 1024,
          maxUncommittedBytes: MAX_UNCOMMITTED_BYTES,
        },
        { ...loaded, applied: sm.appliedIndex },
      );
      const slot = new TransportSlot();
      const forwarding: ForwarderSlot = { current: null };
      const snapshots: SnapshotIO = {
        capture: () => captureState(dir.db, APPLIED_INDEX, stateExtras(dir.db, FAMILIES)),
        staging: fileStaging(join(opts.dataDir, SNAPSHOTS_DIRNAME)),
        discard: (staged) => rmSync(staged.path, { force: true }),
        install: async (meta, staged) => {
          // Reads wait while the state is replaced in several batches: none may see it half done.
          await sm.replaceUnderneath(() => installStagedSnapshot(dir.db, dir.storage, meta, staged, APPLIED_INDEX));
          events.reset(meta.index);
          try {
            hooks.onSnapshotInstalled?.(meta.index);
          } catch (err) {
            // The state is replaced already: the book update below must still happen.
            opts.logger.error({ event: 'snapshot-installed-hook-failed', err: String(err) }, 'the connections could not be brought in step with the installed snapshot');
          }
          hooks.onMembersChanged(sm.members());
        },
      };
      type Applied = (entry: Entry, outcome: ApplyOutcome) => void;
      const applyConfig = async (entry: Entry, applied: Applied): Promise<void> => {
        const bookBefore = sm.members();
        const outcome = await sm.apply(entry);
        hooks.onApplied(outcome, []);
        if (!outcome.ignored) {
          if (sm.members() !== bookBefore) hooks.onMembersChanged(sm.members());
          else if (changeConcerns(entry, opts.id)) {
            // A leader only proposes changes that fit the configuration; one about us that does not
            // fit ours means this store's idea of the cluster is not the cluster's.
            hooks.onFatal(new MembershipDivergedError(opts.id));
          }
        }
        applied(entry, outcome);
      };
      // Half the shortest election timeout: a stall this long is worth an operator's look before it costs a leader.
      const stallWarnMs = (opts.timing.electionTicks * opts.timing.tickMs) / 2;
      const applyCommands = async (run: readonly Entry[], applied: Applied): Promise<void> => {
        // Recipients are decided as each entry is planned, against the watches as of that entry, so replay later is exact.
        const recipients: RecordedEvent[][] = [];
        let written = 0;
        const started = performance.now();
        const outcomes = await sm.applyMany(run, {
          onPlanned: (outcome) => recipients.push(outcome.events.map((event) => ({ event, recipients: [...watchersOf(sm, event.path)] }))),
          // Once its batch went to the db: a watcher told of a change, and the proposer, read it (reads wait for the batch).
          onWritten: (outcome) => {
            const recorded = recipients[written]!;
            events.record(recorded);
            hooks.onApplied(outcome, recorded);
            if (outcome.r !== undefined) forwarding.current?.onApplied(outcome);
            applied(run[written++]!, outcome);
          },
        });
        const ms = performance.now() - started;
        hooks.onAppliedRun?.(ms / 1000, run.length);
        // Which commands a slow apply held (the stall warning says how long, this says what).
        if (ms >= stallWarnMs) opts.logger.warn({ event: 'apply-slow', ms: Math.round(ms), entries: run.length, ops: opsNamed(outcomes) }, `applying ${run.length} entries took ${Math.round(ms)} ms`);
      };
      const apply = async (entries: readonly Entry[], applied: Applied): Promise<void> => {
        let run: Entry[] = [];
        for (const entry of entries) {
          if (entry.kind !== 'config') {
            run.push(entry);
            continue;
          }
          if (run.length > 0) await applyCommands(run, applied);
          run = [];
          await applyConfig(entry, applied);
        }
        if (run.length > 0) await applyCommands(run, applied);
      };
      const driver = new RaftDriver<ApplyOutcome>(
        {
          node,
          storage: dir.storage,
          transport: slot,
          apply,
          tickMs: opts.timing.tickMs,
          onSoftState: (s) => hooks.onSoftState(s),
          onFatal: (err) => hooks.onFatal(err),
          snapshots,
          compaction: opts.compaction,
          ...(hooks.onPeerRoundTrip === undefined ? {} : { onPeerRoundTrip: (peer: NodeId, seconds: number) => hooks.onPeerRoundTrip!(peer, seconds) }),
          stallWarnMs,
          onStall: (stall) => {
            const what = stall.kind === 'ready' ? 'persisting and applying one batch' : 'the thread was busy: ticks came late';
            opts.logger.warn({ event: `raft-stall-${stall.kind}`, ...stall }, `the consensus loop stood still for ${stall.ms} ms (${what})`);
          },
          onSnapshotEvent: (e) => {
            opts.logger.info({ event: `snapshot-${e.kind}`, ...e }, `snapshot ${e.kind} at index ${e.index}`);
            hooks.onSnapshot?.(e);
          },
        },
        sm.appliedIndex,
      );
      opts.logger.info({ event: 'node-opened', id: opts.id, fresh: dir.fresh, applied: sm.appliedIndex, term: loaded.hardState.term, lastIndex: node.lastIndex() }, 'data directory opened');
      return new VeraNode(opts.id, dir, sm, events, driver, slot, forwarding);
    } catch (err) {
      await dir.close();
      throw err;
    }
  }

  start(): void {
    this.driver.start();
  }

  /** Where messages to other members go from now on (set once, before start()). */
  attachTransport(transport: ClosableTransport): void {
    if (this.slot.current !== null) throw new Error('a transport is already attached');
    this.slot.current = transport;
  }

  async close(): Promise<void> {
    await this.driver.stop();
    await this.slot.current?.close();
    await this.dir.close();
  }

  /** The store's incarnation and cluster id (null while a joining store has not learned it). */
  get identity(): StoreIdentity {
    return this.dir.identity;
  }

  /** Persists the cluster id a joining member learned from its first authenticated peer. */
  rememberClusterId(clusterId: string): Promise<void> {
    return rememberClusterId(this.dir.db, clusterId);
  }

  /** The incarnations first seen for other members (trust on first use), and how to save them. */
  loadPeerIncarnations(): Promise<Map<NodeId, string>> {
    return readPeerIncarnations(this.dir.db);
  }

  savePeerIncarnations(known: ReadonlyMap<NodeId, string>): Promise<void> {
    return writePeerIncarnations(this.dir.db, known);
  }

  /** The replicated address book as of the applied index. */
  members(): readonly Member[] {
    return this.stateMachine.members();
  }

  status(): Status {
    return this.driver.status();
  }

  /** A message from another member (via the transport). */
  step(message: Message): void {
    this.driver.step(message);
  }

  /** Linearizable reads served here: under the leader lease, or after a heartbeat round. */
  get linearizableReads(): { readonly lease: number; readonly round: number } {
    return this.driver.linearizableReads;
  }

  get appliedIndex(): number {
    return this.driver.appliedIndex;
  }

  /**
   * Checked before every proposal with the command version its entry needs; throws
   * to refuse it (the cluster's active command version, see families/cluster).
   */
  private proposalGate: ((command: AnyCommand, version: number) => void) | null = null;

  setProposalGate(gate: (command: AnyCommand, version: number) => void): void {
    this.proposalGate = gate;
  }

  /** Writes proposed here and not yet applied: past its bound, client connections stop reading (write-pressure.ts). */
  readonly pressure = new WritePressure(WRITE_PRESSURE);

  /** Forward proposals made while another member leads (set once the peer service exists; null: refuse them as before). */
  setForwarder(forwarder: ProposalForwarder | null): void {
    this.forwarding.current = forwarder;
  }

  /**
   * Propose a state-machine command; resolves with its apply outcome once committed and applied here.
   * On a member that does not lead, with a forwarder that accepts the leader (it advertised
   * FORWARDING_SINCE) and a proposal gate that allows that version, the command is forwarded
   * and answered with this member's outcome of it (docs/scale-out.md); otherwise, as before.
   */
  propose(command: AnyCommand): Promise<ApplyOutcome> {
    const forwarded = this.forwardIfFollowing(command);
    if (forwarded !== null) return forwarded;
    return this.proposeAsLeader(command);
  }

  /**
   * Proposes `command` here only: never forwarded. On a member that does not lead the core
   * refuses it (NOT_LEADER). For a leader's duties, whose work may outlive its leadership:
   * the new leader runs its own (docs/scale-out.md, step 8a).
   */
  proposeAsLeader(command: AnyCommand): Promise<ApplyOutcome> {
    let bytes: Uint8Array;
    try {
      // The leader's wall clock rides in the entry: the replicated clock every member applies with.
      const entry = encodeEntryCommand(command, Date.now());
      this.proposalGate?.(command, entry.version);
      bytes = entry.bytes;
    } catch (err) {
      return Promise.reject(err);
    }
    return this.pressure.track(this.driver.propose(bytes), bytes.byteLength);
  }

  private forwardIfFollowing(command: AnyCommand): Promise<ApplyOutcome> | null {
    const forwarder = this.forwarding.current;
    if (forwarder === null) return null;
    const { role, leader } = this.driver.status();
    if (role === 'leader' || leader === null || leader === this.id || !forwarder.accepts(leader)) return null;
    let body: Uint8Array;
    try {
      const encoded = encodeForwardBody(command);
      // Below the version the cluster runs, no forward: the core refuses it as before (NOT_LEADER).
      this.proposalGate?.(command, encoded.version);
      body = encoded.bytes;
    } catch {
      return null;
    }
    return this.pressure.track(forwarder.forward(leader, body), body.byteLength);
  }

  /**
   * The leader's half of a forward: checks the body's envelope, the caller's `admit` (the
   * desk's: may a member forward this command?) and the proposal gate (each throws to
   * refuse), completes it with this leader's clock and the request id, and proposes it.
   * `place` is null when the core refused it (then `result` rejects why).
   */
  proposeForwarded(body: Uint8Array, rid: string, admit?: (envelope: ForwardEnvelope) => void): { readonly place: { readonly index: number; readonly term: number } | null; readonly result: Promise<ApplyOutcome> } {
    const envelope = readForwardEnvelope(body);
    admit?.(envelope);
    this.proposalGate?.({ family: envelope.family, op: envelope.op } as unknown as AnyCommand, envelope.v);
    const bytes = completeEnvelope(body, Date.now(), rid);
    const { place, result } = this.driver.proposePlaced(bytes);
    return { place, result: this.pressure.track(result, bytes.byteLength) };
  }

  /** Waits for an entry another member proposed (RaftDriver.awaitEntry); `cancel` gives the wait up. */
  awaitEntry(index: number, term: number, cancel?: AbortSignal): Promise<ApplyOutcome> {
    return this.driver.awaitEntry(index, term, cancel);
  }

  /** Entries awaited here and not yet settled nor given up (RaftDriver.awaitedEntries). */
  get awaitedEntries(): number {
    return this.driver.awaitedEntries;
  }

  /** Resolves once a linearizable read may be served from the local state machine. */
  async linearizableBarrier(timeoutMs: number): Promise<void> {
    await this.driver.readIndex(timeoutMs);
  }

  /**
   * Whether a linearizable read may be served from the local state machine right now,
   * synchronously (the leader's lease holds and what it covers is applied); counted as
   * a lease read by countLeaseRead once it is served. False: use linearizableBarrier.
   */
  linearizableNow(): boolean {
    return this.driver.readIndexNow(false) !== null;
  }

  countLeaseRead(): void {
    this.driver.countLeaseRead();
  }

  /** A consistent view of the state machine, for backups (see state-transfer.ts). */
  async captureState(): Promise<CapturedState> {
    await this.stateMachine.settled(); // a write already answered is in the backup
    return captureState(this.dir.db, APPLIED_INDEX, stateExtras(this.dir.db, FAMILIES));
  }

  snapshotMetaAt(index: number): SnapshotMeta | null {
    return this.driver.snapshotMetaAt(index);
  }

  /** A peer's port refused a connection: its process is gone (see RaftNode.leaderUnreachable). */
  peerProcessGone(peer: NodeId): void {
    this.driver.leaderUnreachable(peer);
  }

  transferLeadership(to: NodeId): boolean {
    return this.driver.transferLeadership(to);
  }

  /** Resolves once the state machine has applied `index`; `cancel` gives the wait up (RaftDriver.waitApplied). */
  waitApplied(index: number, cancel?: AbortSignal): Promise<void> {
    return this.driver.waitApplied(index, cancel);
  }

  /** Propose a membership change; resolves once it is committed and applied here. */
  proposeConfigChange(change: MemberChange): Promise<ApplyOutcome> {
    return this.driver.proposeConfigChange(change);
  }
}
