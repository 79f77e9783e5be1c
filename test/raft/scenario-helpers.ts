// A hand-driven cluster for scenario tests: the test decides when each node
// ticks and which message is delivered or dropped. Ready handling is
// synchronous (persist to MemoryLogStorage, queue the messages, apply, advance),
// so after any call every node's durable state is up to date.
//
// Snapshots follow the real driver (src/raft/driver.ts): a leader's Ready that
// asks for one makes the leader capture its state machine (here: the list of
// entries it has applied) and send it as one 'snapshot' message with its sha256;
// the receiver assembles it, asks shouldInstallSnapshot, and if so replaces its
// state machine, resets its log storage and steps the message into its core.
// Compaction happens only when a test calls compact().

import { createHash } from 'node:crypto';
import { leaseTicksFor, RaftNode } from '../../src/raft/core.js';
import { MemoryLogStorage } from '../../src/raft/memory-storage.js';
import { SnapshotAssembler } from '../../src/raft/state-transfer.js';
import type {
  ClusterConfig,
  Entry,
  EntryKind,
  Message,
  MessageType,
  NodeId,
  ProposeResult,
  RandomSource,
  ReadState,
  SnapshotMeta,
  SnapshotRequest,
  Status,
} from '../../src/raft/types.js';

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

/** Always returns the same number (clamped), so election timeouts are exact. */
class FixedRandom implements RandomSource {
  constructor(private readonly value: number) {}
  int(n: number): number {
    return Math.min(this.value, n - 1);
  }
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
  private readonly nodes = new Map<NodeId, RaftNode | null>();
  private readonly storage = new Map<NodeId, MemoryLogStorage>();
  private readonly appliedEntries = new Map<NodeId, Entry[]>();
  private readonly reads = new Map<NodeId, ReadState[]>();
  /** Sent and not yet delivered or dropped, oldest first. */
  queue: Message[] = [];
  /** Every message ever sent, for assertions about what went over the wire. */
  readonly sent: Message[] = [];
  /** Directed links that drop everything: `${from}>${to}`. */
  private readonly cut = new Set<string>();
  private readonly assemblers = new Map<NodeId, SnapshotAssembler>();
  /** Complete snapshots each node received, and whether it installed them. */
  readonly snapshotsReceived: Array<{ readonly node: NodeId; readonly index: number; readonly installed: boolean }> = [];
  /** Nodes whose next snapshot install loses power right after its write, before the core adopts it. */
  private readonly powerLossAfterInstall = new Set<NodeId>();

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
    const n = this.nodes.get(id);
    if (n === undefined || n === null) throw new Error(`node ${id} is down or unknown`);
    return n;
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

  /** Handles every pending Ready of every live node (persist, queue messages, apply, advance). */
  flush(): void {
    let progress = true;
    while (progress) {
      progress = false;
      for (const id of this.ids) {
        const n = this.nodes.get(id);
        if (n === null || n === undefined || !n.hasReady()) continue;
        progress = true;
        const rd = n.ready();
        this.storage.get(id)!.persistSync(rd.hardState, rd.entries);
        for (const m of rd.messages) this.enqueue(m);
        this.appliedEntries.get(id)!.push(...rd.committedEntries);
        this.reads.get(id)!.push(...rd.readStates);
        n.advance(rd);
        for (const need of rd.snapshotRequests) this.sendSnapshot(n, need.to);
      }
    }
  }

  private enqueue(m: Message): void {
    this.sent.push(m);
    if (!this.cut.has(`${m.from}>${m.to}`)) this.queue.push(m);
  }

  /** Leader: capture the state machine (its applied entries) and send it whole, then report it sent. */
  private sendSnapshot(leader: RaftNode, to: NodeId): void {
    const state = [...this.appliedEntries.get(leader.id)!];
    const meta = leader.snapshotMetaAt(state.length);
    const { term, role } = leader.status();
    if (meta === null || role !== 'leader') {
      leader.reportSnapshot(to, false);
      return;
    }
    const chunk = encodeEntries(state);
    const checksum = createHash('sha256').update(chunk).digest('hex');
    this.enqueue({ type: 'snapshot', from: leader.id, to, term, meta, offset: 0, chunk, done: true, checksum });
    leader.reportSnapshot(to, true);
  }

  /**
   * Log compaction on `id` up to `index` (default: everything it has applied),
   * in its core and its storage. Returns the new log start.
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

  /** Receiver side of a snapshot message: assemble, ask the core, install, step it in. */
  private receiveSnapshot(target: RaftNode, m: SnapshotRequest): void {
    let assembler = this.assemblers.get(target.id);
    if (assembler === undefined) {
      assembler = new SnapshotAssembler();
      this.assemblers.set(target.id, assembler);
    }
    const data = assembler.accept(`${m.from}/${m.term}/${m.meta.index}`, m.offset, m.chunk, m.done, m.checksum);
    if (data === null) return;
    const install = target.shouldInstallSnapshot(m);
    this.snapshotsReceived.push({ node: target.id, index: m.meta.index, installed: install });
    if (!install) {
      // As src/raft/driver.ts: step it in without installing, so the core answers with its commit index.
      target.step({ ...m, chunk: new Uint8Array(0) });
      return;
    }
    // State machine and log reset together, durably (one LevelDB batch in the real driver).
    this.storage.get(target.id)!.installSnapshotSync(m.meta);
    this.appliedEntries.set(target.id, decodeEntries(data));
    if (this.powerLossAfterInstall.delete(target.id)) {
      this.crash(target.id);
      return;
    }
    target.step({ ...m, chunk: new Uint8Array(0) });
  }

  /** Calls into one node, then handles its Ready so the messages it caused are queued. */
  propose(id: NodeId, data: string): ProposeResult {
    const result = this.node(id).propose(bytes(data));
    this.flush();
    return result;
  }

  readIndex(id: NodeId, context: string): boolean {
    const accepted = this.node(id).readIndex(context);
    this.flush();
    return accepted;
  }

  transferLeadership(id: NodeId, to: NodeId): boolean {
    const accepted = this.node(id).transferLeadership(to);
    this.flush();
    return accepted;
  }

  campaign(id: NodeId): void {
    this.node(id).campaign();
    this.flush();
  }

  tick(id: NodeId, times = 1): void {
    for (let i = 0; i < times; i++) {
      this.node(id).tick();
      this.flush();
    }
  }

  /** Ticks every live node `times` times, delivering nothing. */
  tickAll(times = 1): void {
    for (let i = 0; i < times; i++) {
      for (const id of this.ids) if (this.nodes.get(id)) this.node(id).tick();
      this.flush();
    }
  }

  /**
   * Delivers the queued messages that match (in order), leaving the rest queued.
   * Messages they cause are queued, not delivered. Returns how many were delivered.
   */
  deliver(filter: MessageFilter = () => true): number {
    this.flush();
    const now = this.queue;
    this.queue = [];
    let delivered = 0;
    for (const m of now) {
      if (!filter(m)) {
        this.queue.push(m);
        continue;
      }
      const target = this.nodes.get(m.to);
      if (target === null || target === undefined || this.cut.has(`${m.from}>${m.to}`)) continue;
      if (m.type === 'snapshot') this.receiveSnapshot(target, m);
      else target.step(m);
      delivered++;
      this.flush();
    }
    return delivered;
  }

  /** Drops queued messages that match; returns how many. */
  drop(filter: MessageFilter = () => true): number {
    this.flush();
    const before = this.queue.length;
    this.queue = this.queue.filter((m) => !filter(m));
    return before - this.queue.length;
  }

  /** Delivers until no message is left (cut links drop theirs); `filter` drops non-matching ones. */
  settle(filter: MessageFilter = () => true, maxRounds = 1000): void {
    for (let round = 0; this.queue.length > 0; round++) {
      if (round >= maxRounds) throw new Error(`messages still flowing after ${maxRounds} rounds`);
      this.drop((m) => !filter(m));
      this.deliver();
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

  /** Power loss: memory and undelivered messages to the node are gone; storage keeps what was persisted. */
  crash(id: NodeId): void {
    this.nodes.set(id, null);
    this.assemblers.delete(id);
    this.queue = this.queue.filter((m) => m.to !== id && m.from !== id);
    this.storage.get(id)!.crash();
  }

  restart(id: NodeId): void {
    this.start(id);
  }

  /**
   * Lets an election timeout's worth of time pass on the given followers (default:
   * all live non-leaders) that know a leader, without them campaigning (their
   * timeouts are longer), so their leader lease expires and they answer vote requests.
   */
  expireLeases(ids?: readonly NodeId[]): void {
    for (const id of ids ?? this.ids) {
      const st = this.nodes.get(id)?.status();
      if (st === undefined || st.role === 'leader') continue;
      // A node that knows no leader may still be in the lease window of one it heard (or of its start).
      const ticks = st.leader !== null ? this.electionTicks : leaseTicksFor(this.electionTicks);
      for (let i = 0; i < ticks; i++) this.node(id).tick();
    }
    this.flush();
  }

  /** Lets the lease window pass on `id` (ticks it, short of its election timeout), so it may campaign. */
  passLeaseWindow(id: NodeId): void {
    for (let i = 0; i < leaseTicksFor(this.electionTicks); i++) this.node(id).tick();
    this.flush();
  }

  /**
   * Makes `id` campaign and delivers messages until quiet; with `filter`, only the
   * matching ones (the rest are dropped). Returns its status afterwards.
   */
  elect(id: NodeId, filter: MessageFilter = () => true): Status {
    this.expireLeases(this.ids.filter((x) => x !== id));
    this.passLeaseWindow(id);
    this.node(id).campaign();
    this.flush();
    this.settle(filter);
    return this.status(id);
  }

  private start(id: NodeId): void {
    const loaded = this.storage.get(id)!.loadSync();
    const offset = this.options.timeoutOffsets?.[id] ?? this.electionTicks - 1;
    const node = new RaftNode(
      {
        id,
        electionTicks: this.electionTicks,
        heartbeatTicks: this.heartbeatTicks,
        random: new FixedRandom(offset),
        maxInflightMessages: 64,
        maxInflightBytes: 1 << 20,
        maxMessageBytes: this.options.maxMessageBytes ?? 1 << 20,
      },
      { ...loaded, applied: this.appliedEntries.get(id)!.length },
    );
    this.nodes.set(id, node);
    this.flush();
  }
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
