// One Vera member: its data directory, Raft core and driver, state machine and
// event log, wired together. It knows nothing about WebSocket or HTTP; the
// front end (client-server.ts) talks to it through propose/read calls and the
// hooks below.

import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { RaftNode } from '../raft/core.js';
import { openDataDir, type OpenedDataDir } from '../raft/datadir.js';
import { RaftDriver, type CompactionPolicy, type SnapshotIO, type Transport } from '../raft/driver.js';
import { appliedIndexOf, captureState, replaceStateOps, SnapshotError } from '../raft/state-transfer.js';
import type { ClusterConfig, Entry, Message, NodeId, RandomSource, SoftState, Status } from '../raft/types.js';
import { encodeCommand, StateMachine, type ApplyOutcome, type Command } from '../statemachine/index.js';
import { EventLog, type RecordedEvent } from './event-log.js';

export interface RaftTiming {
  readonly tickMs: number;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
}

export const DEFAULT_RAFT_TIMING: RaftTiming = { tickMs: 50, electionTicks: 20, heartbeatTicks: 2 };

export interface VeraNodeOptions {
  readonly id: NodeId;
  readonly dataDir: string;
  /** Voting members a brand-new data directory starts with. */
  readonly initialMembers: readonly NodeId[];
  readonly timing: RaftTiming;
  readonly logger: Logger;
  /** How many events (plus their recipients) the event log keeps for replay to resuming sessions. */
  readonly eventLogCapacity: number;
  /** Carries messages to the other members; null for a single-member cluster. Incoming ones go to step(). */
  readonly transport: ClosableTransport | null;
  readonly compaction: CompactionPolicy;
}

export const DEFAULT_COMPACTION: CompactionPolicy = { everyEntries: 10_000, keepEntries: 1_000 };

export type ClosableTransport = Transport & { close(): Promise<void> };

/** What the front end hears about. All called synchronously, in apply order. */
export interface VeraNodeHooks {
  /** An entry was applied: its outcome and the recorded events (with recipients). */
  onApplied(outcome: ApplyOutcome, recorded: readonly RecordedEvent[]): void;
  onSoftState(state: SoftState): void;
  onFatal(err: unknown): void;
}

const cryptoRandom: RandomSource = {
  int(n: number): number {
    return randomBytes(4).readUInt32BE(0) % n;
  },
};

export class VeraNode {
  private constructor(
    readonly id: NodeId,
    private readonly dir: OpenedDataDir,
    readonly stateMachine: StateMachine,
    readonly events: EventLog,
    private readonly driver: RaftDriver<ApplyOutcome>,
    private readonly transport: ClosableTransport | null,
  ) {}

  static async open(opts: VeraNodeOptions, hooks: VeraNodeHooks): Promise<VeraNode> {
    const initialConfig: ClusterConfig = { voters: [...opts.initialMembers], learners: [] };
    const dir = await openDataDir(opts.dataDir, { initialConfig, nodeId: opts.id });
    try {
      const loaded = await dir.storage.load();
      const sm = await StateMachine.open(dir.db);
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
          maxUncommittedBytes: 256 * 1024 * 1024,
        },
        { ...loaded, applied: sm.appliedIndex },
      );
      const transport = opts.transport;
      const snapshots: SnapshotIO = {
        capture: () => captureState(dir.db),
        install: async (meta, data) => {
          const carried = appliedIndexOf(data);
          if (carried !== meta.index) throw new SnapshotError(`snapshot data reflects index ${carried}, its meta says ${meta.index}`);
          await dir.storage.installSnapshot(meta, await replaceStateOps(dir.db, data));
          await sm.reload();
          events.reset(meta.index);
        },
      };
      const apply = async (entry: Entry): Promise<ApplyOutcome> => {
        const outcome = await sm.apply(entry);
        // Recipients are decided now, against the watches as of this entry, so replay later is exact.
        const recorded = outcome.events.map((event) => ({ event, recipients: [...sm.watchersOf(event.path)] }));
        events.record(recorded);
        hooks.onApplied(outcome, recorded);
        return outcome;
      };
      const driver = new RaftDriver<ApplyOutcome>(
        {
          node,
          storage: dir.storage,
          transport: transport ?? { send: () => undefined },
          apply,
          tickMs: opts.timing.tickMs,
          onSoftState: (s) => hooks.onSoftState(s),
          onFatal: (err) => hooks.onFatal(err),
          snapshots,
          compaction: opts.compaction,
          onSnapshotEvent: (e) => opts.logger.info({ event: `snapshot-${e.kind}`, ...e }, `snapshot ${e.kind} at index ${e.index}`),
        },
        sm.appliedIndex,
      );
      opts.logger.info({ event: 'node-opened', id: opts.id, fresh: dir.fresh, applied: sm.appliedIndex, term: loaded.hardState.term, lastIndex: node.lastIndex() }, 'data directory opened');
      return new VeraNode(opts.id, dir, sm, events, driver, transport);
    } catch (err) {
      await dir.close();
      throw err;
    }
  }

  start(): void {
    this.driver.start();
  }

  async close(): Promise<void> {
    await this.driver.stop();
    await this.transport?.close();
    await this.dir.close();
  }

  status(): Status {
    return this.driver.status();
  }

  /** A message from another member (via the transport). */
  step(message: Message): void {
    this.driver.step(message);
  }

  get appliedIndex(): number {
    return this.driver.appliedIndex;
  }

  /** Propose a state-machine command; resolves with its apply outcome once committed and applied here. */
  propose(command: Command): Promise<ApplyOutcome> {
    return this.driver.propose(encodeCommand(command));
  }

  /** Resolves once a linearizable read may be served from the local state machine. */
  async linearizableBarrier(timeoutMs: number): Promise<void> {
    await this.driver.readIndex(timeoutMs);
  }

  transferLeadership(to: NodeId): boolean {
    return this.driver.transferLeadership(to);
  }
}
