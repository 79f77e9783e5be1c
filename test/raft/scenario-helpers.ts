// A hand-driven cluster for scenario tests: the test decides when each node
// ticks and which message is delivered or dropped. Each node runs the real
// RaftDriver (src/raft/driver.ts) over a MemoryLogStorage, a list of applied
// entries as its state machine, and the simulator's clock (test/sim/sim-clock.ts),
// so the Ready rules (persist, send, apply, advance, snapshots) are the driver's
// own. Its messages go into this helper's queue; delivering one steps it into the
// receiving driver.
//
// Every operation that can give a core a Ready ends by draining the drivers (see
// flush()), so after an awaited call every node's durable state is up to date.
// Calls a test makes on a core directly (c.node(id).step(...)) are picked up by
// the next flush.
//
// Snapshots go through the driver too: a leader's driver captures the state
// machine (its applied entries) and streams it; the scenario network joins the
// stream into one message (see send()), so a test can count, drop or replay a
// snapshot as one. The receiver's driver assembles it, asks its core, installs it
// here and steps it in. Compaction happens only when a test calls compact().

import { RaftDriver, type SnapshotIO } from '../../src/raft/driver.js';
import { leaseTicksFor, RaftNode } from '../../src/raft/core.js';
import { MemoryLogStorage } from '../../src/raft/memory-storage.js';
import type { CapturedState } from '../../src/raft/state-transfer.js';
import type {
  ClusterConfig,
  Entry,
  EntryKind,
  Message,
  MessageType,
  NodeId,
  ProposeResult,
  RaftOptions,
  RandomSource,
  Ready,
  ReadState,
  RestoredState,
  SnapshotMeta,
  SnapshotRequest,
  Status,
} from '../../src/raft/types.js';
import { simStaging, type SimStaged } from '../sim/cluster.js';
import { SimClock } from '../sim/sim-clock.js';

export interface ScenarioOptions {
  readonly electionTicks?: number;
  readonly heartbeatTicks?: number;
  /**
   * Per node, the offset added to electionTicks for its election timeout (the core
   * draws it from `random.int(electionTicks)`). Default: electionTicks - 1, the
   * longest, so no node campaigns on its own unless a test lets enough time pass.
   */
  readonly timeoutOffsets?: Readonly<Record<NodeId, number>>;
  readonly maxMessageBytes?: number;
}

/** Virtual milliseconds per tick on each node's clock (only the driver's lease arithmetic reads them). */
const TICK_MS = 10;
/** Rounds of (timers, deferred callbacks, drain) in one flush before the drivers count as livelocked. */
const MAX_FLUSH_ROUNDS = 1000;

/** Always returns the same number (clamped), so election timeouts are exact. */
class FixedRandom implements RandomSource {
  constructor(private readonly value: number) {}
  int(n: number): number {
    return Math.min(this.value, n - 1);
  }
}

/** What the helper hears from a core while its driver runs it. */
interface CoreHooks {
  onReady(rd: Ready): void;
  onInstallDecision(m: SnapshotRequest, install: boolean): void;
}

/** The real RaftNode; it reports its Readys and snapshot decisions, and keeps its answers to proposals. */
class ScenarioNode extends RaftNode {
  /** The core's answer to the latest proposal (the driver turns it into a promise). */
  lastProposal: ProposeResult | null = null;

  constructor(
    options: RaftOptions,
    restored: RestoredState,
    private readonly hooks: CoreHooks,
  ) {
    super(options, restored);
  }

  override propose(data: Uint8Array): ProposeResult {
    this.lastProposal = super.propose(data);
    return this.lastProposal;
  }

  override ready(): Ready {
    const rd = super.ready();
    this.hooks.onReady(rd);
    return rd;
  }

  override shouldInstallSnapshot(m: SnapshotRequest): boolean {
    const install = super.shouldInstallSnapshot(m);
    this.hooks.onInstallDecision(m, install);
    return install;
  }
}

/** One run of a node's process: its core, driver and clock. A crash ends it. */
class Incarnation {
  alive = true;
  /** This process's virtual time, in ticks. */
  ticks = 0;
  readonly clock = new SimClock(() => this.ticks * TICK_MS, 1, TICK_MS);
  core!: ScenarioNode;
  driver!: RaftDriver<Entry, SimStaged>;
}

/**
 * Lets the promise chains the drivers started run to their end. All their I/O here
 * resolves at once (storage, apply, capture, install), so a chain waits only on
 * microtasks, and a macrotask runs only once none is left: this is deterministic.
 */
function drain(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export type MessageFilter = (m: Message) => boolean;

/** Matches messages by type, sender and receiver (each optional). */
export function msg(type?: MessageType | readonly MessageType[], from?: NodeId, to?: NodeId): MessageFilter {
  const types = type === undefined ? null : typeof type === 'string' ? [type] : type;
  return (m) => (types === null || types.includes(m.type)) && (from === undefined || m.from === from) && (to === undefined || m.to === to);
}

export class ScenarioCluster {
  readonly ids: readonly NodeId[];
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  private readonly runs = new Map<NodeId, Incarnation | null>();
  private readonly storage = new Map<NodeId, MemoryLogStorage>();
  private readonly appliedEntries = new Map<NodeId, Entry[]>();
  private readonly reads = new Map<NodeId, ReadState[]>();
  /** Sent and not yet delivered or dropped, oldest first. */
  queue: Message[] = [];
  /** Every message ever sent, for assertions about what went over the wire. */
  readonly sent: Message[] = [];
  /** Directed links that drop everything: `${from}>${to}`. */
  private readonly cut = new Set<string>();
  /** Chunks of snapshot streams under way, per link, until their last message joins them. */
  private readonly streams = new Map<string, Uint8Array[]>();
  /** Complete snapshots each node received, and whether it installed them. */
  readonly snapshotsReceived: Array<{ readonly node: NodeId; readonly index: number; readonly installed: boolean }> = [];
  /** Nodes whose next snapshot install loses power right after its write, before the core adopts it. */
  private readonly powerLossAfterInstall = new Set<NodeId>();
  /** The first failure a driver reported where no caller sees it (its Ready loop); thrown by flush(). */
  private failure: { readonly error: unknown } | null = null;

  constructor(
    ids: readonly NodeId[],
    private readonly options: ScenarioOptions = {},
  ) {
    this.ids = ids;
    this.electionTicks = options.electionTicks ?? 10;
    this.heartbeatTicks = options.heartbeatTicks ?? 1;
    const config: ClusterConfig = { voters: [...ids], learners: [] };
    for (const id of ids) {
      this.storage.set(id, new MemoryLogStorage({ initialConfig: config }));
      this.appliedEntries.set(id, []);
      this.reads.set(id, []);
      this.start(id);
    }
  }

  node(id: NodeId): RaftNode {
    return this.run(id).core;
  }

  status(id: NodeId): Status {
    return this.node(id).status();
  }

  /** Terms of the node's log entries from index 1 on. */
  logTerms(id: NodeId): number[] {
    const n = this.node(id);
    return n.entries(1, n.lastIndex() + 1).map((e) => e.term);
  }

  /** Entries the node's state machine has applied, in order. */
  applied(id: NodeId): readonly Entry[] {
    return this.appliedEntries.get(id)!;
  }

  readStates(id: NodeId): readonly ReadState[] {
    return this.reads.get(id)!;
  }

  /**
   * Runs every live driver until it waits for the test: each whose core has a Ready
   * (also from a direct call) is woken, then deferred callbacks (the Ready loops) and
   * due timers run and the promise chains they start are drained, until none is left.
   */
  async flush(): Promise<void> {
    for (const run of this.live()) if (run.core.hasReady()) run.driver.wake();
    for (let round = 0; ; round++) {
      if (round >= MAX_FLUSH_ROUNDS) throw new Error(`drivers still busy after ${MAX_FLUSH_ROUNDS} rounds`);
      let progressed = false;
      for (const run of this.live()) {
        if (run.clock.fireDueTimers()) progressed = true;
        if (run.alive && run.clock.runDeferred()) progressed = true;
      }
      await drain();
      if (this.failure !== null) throw this.failure.error;
      if (!progressed) break;
    }
    for (const run of this.live()) {
      if (run.core.hasReady()) throw new Error(`${run.core.id}'s driver left a Ready unhandled`);
    }
  }

  private live(): Incarnation[] {
    return this.ids.map((id) => this.runs.get(id)).filter((r): r is Incarnation => r != null && r.alive);
  }

  private run(id: NodeId): Incarnation {
    const run = this.runs.get(id);
    if (run === undefined || run === null) throw new Error(`node ${id} is down or unknown`);
    return run;
  }

  /** The driver's transport: a snapshot stream is joined into one message; everything else is queued as sent. */
  private send(m: Message): void {
    if (m.type !== 'snapshot') {
      this.enqueue(m);
      return;
    }
    const link = `${m.from}>${m.to}`;
    const parts = m.offset === 0 ? [] : (this.streams.get(link) ?? []);
    parts.push(m.chunk);
    if (!m.done) {
      this.streams.set(link, parts);
      return;
    }
    this.streams.delete(link);
    this.enqueue({ ...m, offset: 0, chunk: Buffer.concat(parts) });
  }

  private enqueue(m: Message): void {
    this.sent.push(m);
    if (!this.cut.has(`${m.from}>${m.to}`)) this.queue.push(m);
  }

  /** The driver's state machine: its applied entries, durable with them (it survives a crash). */
  private apply(id: NodeId, entries: readonly Entry[], applied: (entry: Entry, result: Entry) => void): Promise<void> {
    const list = this.appliedEntries.get(id)!;
    for (const e of entries) {
      list.push(e);
      applied(e, e);
    }
    return Promise.resolve();
  }

  /** How a driver captures and replaces the state machine (its applied entries, as JSON). */
  private snapshotIO(id: NodeId): SnapshotIO<SimStaged> {
    return {
      capture: async (): Promise<CapturedState> => {
        const state = [...this.appliedEntries.get(id)!];
        const data = Buffer.from(encodeEntries(state));
        return { index: state.length, chunks: () => oneChunk(data), release: async () => undefined };
      },
      staging: simStaging,
      install: async (meta, staged) => {
        // State machine and log reset together, durably (one LevelDB batch in a real member).
        this.storage.get(id)!.installSnapshotSync(meta);
        this.appliedEntries.set(id, decodeEntries(staged.data));
        if (this.powerLossAfterInstall.delete(id)) {
          this.crash(id);
          return new Promise<void>(() => undefined); // the process is gone: its driver never goes on
        }
      },
      discard: () => undefined,
    };
  }

  /**
   * Log compaction on `id` up to `index` (default: everything it has applied),
   * in its core and its storage, as the driver's compaction does. Returns the new log start.
   */
  compact(id: NodeId, index = this.appliedEntries.get(id)!.length): SnapshotMeta {
    const meta = this.node(id).compact(index);
    this.storage.get(id)!.compactSync(meta);
    return meta;
  }

  /** The next snapshot `id` installs hits a power loss after the install write, before its core sees it. */
  losePowerAfterNextInstall(id: NodeId): void {
    this.powerLossAfterInstall.add(id);
  }

  /** What `id`'s storage would restart from. */
  stored(id: NodeId): ReturnType<MemoryLogStorage['loadSync']> {
    return this.storage.get(id)!.loadSync();
  }

  /** A proposal through the node's driver; returns the core's answer once the drivers have settled. */
  async propose(id: NodeId, data: string): Promise<ProposeResult> {
    const run = this.run(id);
    run.driver.propose(bytes(data)).catch(() => undefined); // its outcome shows in the logs and applied entries
    const result = run.core.lastProposal!;
    await this.flush();
    return result;
  }

  /** A ReadIndex with the test's context, into the core (the driver would pick its own context); its read states are kept. */
  async readIndex(id: NodeId, context: string): Promise<boolean> {
    const accepted = this.node(id).readIndex(context);
    await this.flush();
    return accepted;
  }

  async transferLeadership(id: NodeId, to: NodeId): Promise<boolean> {
    const accepted = this.run(id).driver.transferLeadership(to);
    await this.flush();
    return accepted;
  }

  async campaign(id: NodeId): Promise<void> {
    this.run(id).driver.campaign();
    await this.flush();
  }

  /** One tick of the node's clock: its driver's ticker runs, and time moves on by a tick. */
  private tickOnce(id: NodeId): void {
    const run = this.run(id);
    run.ticks++;
    if (run.clock.ticker === null) throw new Error(`${id}'s driver has no ticker`);
    run.clock.ticker();
  }

  async tick(id: NodeId, times = 1): Promise<void> {
    for (let i = 0; i < times; i++) {
      this.tickOnce(id);
      await this.flush();
    }
  }

  /**
   * One heartbeat round from `leader`, delivered: followers learn the commit index from it
   * (a leader sends no append for a commit alone, see RaftNode.broadcastCommit).
   */
  async heartbeat(leader: NodeId): Promise<void> {
    await this.tick(leader, this.heartbeatTicks);
    await this.settle();
  }

  /** Ticks every live node `times` times, delivering nothing. */
  async tickAll(times = 1): Promise<void> {
    for (let i = 0; i < times; i++) {
      for (const id of this.ids) if (this.runs.get(id)) this.tickOnce(id);
      await this.flush();
    }
  }

  /**
   * Delivers the queued messages that match (in order), leaving the rest queued.
   * Messages they cause are queued, not delivered. Returns how many were delivered.
   */
  async deliver(filter: MessageFilter = () => true): Promise<number> {
    await this.flush();
    const now = this.queue;
    this.queue = [];
    let delivered = 0;
    for (const m of now) {
      if (!filter(m)) {
        this.queue.push(m);
        continue;
      }
      const target = this.runs.get(m.to);
      if (target === null || target === undefined || this.cut.has(`${m.from}>${m.to}`)) continue;
      target.driver.step(m);
      delivered++;
      await this.flush();
    }
    return delivered;
  }

  /** Drops queued messages that match; returns how many. */
  async drop(filter: MessageFilter = () => true): Promise<number> {
    await this.flush();
    const before = this.queue.length;
    this.queue = this.queue.filter((m) => !filter(m));
    return before - this.queue.length;
  }

  /** Delivers until no message is left (cut links drop theirs); `filter` drops non-matching ones. */
  async settle(filter: MessageFilter = () => true, maxRounds = 1000): Promise<void> {
    for (let round = 0; this.queue.length > 0; round++) {
      if (round >= maxRounds) throw new Error(`messages still flowing after ${maxRounds} rounds`);
      await this.drop((m) => !filter(m));
      await this.deliver();
    }
  }

  /** Cuts every link between the two groups, both ways. */
  partition(a: readonly NodeId[], b: readonly NodeId[]): void {
    for (const x of a) {
      for (const y of b) {
        this.cut.add(`${x}>${y}`);
        this.cut.add(`${y}>${x}`);
      }
    }
    this.queue = this.queue.filter((m) => !this.cut.has(`${m.from}>${m.to}`));
  }

  isolate(id: NodeId): void {
    this.partition([id], this.ids.filter((x) => x !== id));
  }

  heal(): void {
    this.cut.clear();
  }

  /** Power loss: the process (core, driver, clock) and undelivered messages to it are gone; storage keeps what was persisted. */
  crash(id: NodeId): void {
    const run = this.runs.get(id);
    if (run) {
      run.alive = false;
      run.clock.kill();
    }
    this.runs.set(id, null);
    for (const link of this.streams.keys()) if (link.startsWith(`${id}>`)) this.streams.delete(link);
    this.queue = this.queue.filter((m) => m.to !== id && m.from !== id);
    this.storage.get(id)!.crash();
  }

  async restart(id: NodeId): Promise<void> {
    this.start(id);
    await this.flush();
  }

  /**
   * Lets an election timeout's worth of time pass on the given followers (default:
   * all live non-leaders) that know a leader, without them campaigning (their
   * timeouts are longer), so their leader lease expires and they answer vote requests.
   */
  async expireLeases(ids?: readonly NodeId[]): Promise<void> {
    for (const id of ids ?? this.ids) {
      const st = this.runs.get(id)?.core.status();
      if (st === undefined || st.role === 'leader') continue;
      // A node that knows no leader may still be in the lease window of one it heard (or of its start).
      const ticks = st.leader !== null ? this.electionTicks : leaseTicksFor(this.electionTicks);
      for (let i = 0; i < ticks; i++) this.tickOnce(id);
    }
    await this.flush();
  }

  /** Lets the lease window pass on `id` (ticks it, short of its election timeout), so it may campaign. */
  async passLeaseWindow(id: NodeId): Promise<void> {
    for (let i = 0; i < leaseTicksFor(this.electionTicks); i++) this.tickOnce(id);
    await this.flush();
  }

  /**
   * Makes `id` campaign and delivers messages until quiet; with `filter`, only the
   * matching ones (the rest are dropped). Returns its status afterwards.
   */
  async elect(id: NodeId, filter: MessageFilter = () => true): Promise<Status> {
    await this.expireLeases(this.ids.filter((x) => x !== id));
    await this.passLeaseWindow(id);
    await this.campaign(id);
    await this.settle(filter);
    return this.status(id);
  }

  /** A process starts from its storage and its (durable) state machine; its driver's first Ready waits for the next flush. */
  private start(id: NodeId): void {
    const storage = this.storage.get(id)!;
    const loaded = storage.loadSync();
    const offset = this.options.timeoutOffsets?.[id] ?? this.electionTicks - 1;
    const applied = this.appliedEntries.get(id)!.length;
    const run = new Incarnation();
    const hooks: CoreHooks = {
      onReady: (rd) => this.reads.get(id)!.push(...rd.readStates),
      onInstallDecision: (m, installed) => this.snapshotsReceived.push({ node: id, index: m.meta.index, installed }),
    };
    run.core = new ScenarioNode(
      {
        id,
        electionTicks: this.electionTicks,
        heartbeatTicks: this.heartbeatTicks,
        random: new FixedRandom(offset),
        maxInflightMessages: 64,
        maxInflightBytes: 1 << 20,
        maxMessageBytes: this.options.maxMessageBytes ?? 1 << 20,
      },
      { ...loaded, applied },
      hooks,
    );
    run.driver = new RaftDriver<Entry, SimStaged>(
      {
        node: run.core,
        storage,
        transport: { send: (m) => run.alive && this.send(m) },
        apply: (entries, done) => this.apply(id, entries, done),
        tickMs: TICK_MS,
        clock: run.clock,
        random: new FixedRandom(0),
        onFatal: (error) => {
          this.failure ??= { error };
        },
        snapshots: this.snapshotIO(id),
        onSnapshotEvent: (e) => {
          // Scenario streams are never corrupted: a refused one is a helper or driver bug.
          if (e.kind === 'refused') this.failure ??= { error: new Error(`${id} refused a snapshot from ${String(e.peer)}: ${String(e.error)}`) };
        },
      },
      applied,
    );
    this.runs.set(id, run);
    run.driver.start();
  }
}

/** A captured state as one chunk. */
async function* oneChunk(data: Buffer): AsyncGenerator<Buffer> {
  yield data;
}

/** The scenario state machine's snapshot format: its applied entries as JSON. */
function encodeEntries(entries: readonly Entry[]): Uint8Array {
  return bytes(JSON.stringify(entries.map((e) => ({ index: e.index, term: e.term, kind: e.kind, data: Array.from(e.data) }))));
}

function decodeEntries(data: Uint8Array): Entry[] {
  const parsed = JSON.parse(text(data)) as Array<{ index: number; term: number; kind: EntryKind; data: number[] }>;
  return parsed.map((e) => ({ index: e.index, term: e.term, kind: e.kind, data: Uint8Array.from(e.data) }));
}

export const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
export const text = (b: Uint8Array): string => new TextDecoder().decode(b);
