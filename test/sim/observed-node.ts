// The real RaftNode, watched: every call into it (by the driver or by the
// simulator) runs through the simulator's watch, which turns an exception into a
// failure of the run and checks the node's state after the call. A few hooks
// let the simulator check what the driver does with the core's answers.

import { RaftNode } from '../../src/raft/core.js';
import type { ConfigChange, Message, NodeId, ProposeResult, RaftOptions, Ready, RestoredState, SnapshotMeta, SnapshotRequest } from '../../src/raft/types.js';

export interface CoreWatch {
  /** Runs one call into the core; afterwards the node's state is observed. */
  call<T>(what: string, fn: () => T): T;
  onReady(rd: Ready): void;
  onAdvance(rd: Ready): void;
  onCompact(index: number, meta: SnapshotMeta): void;
  onSnapshotMeta(index: number, meta: SnapshotMeta | null): void;
  /** The core's answer to shouldInstallSnapshot; the watch may overrule it (a mutation). */
  shouldInstall(m: SnapshotRequest, wanted: boolean): boolean;
  /** The driver stepped a snapshot message in (after installing it, or instead of installing it). */
  onSnapshotStepped(m: SnapshotRequest): void;
}

export class ObservedRaftNode extends RaftNode {
  private readonly watch: CoreWatch;

  constructor(options: RaftOptions, restored: RestoredState, watch: CoreWatch) {
    super(options, restored);
    this.watch = watch;
  }

  override tick(): void {
    this.watch.call('tick', () => super.tick());
  }

  override campaign(): void {
    this.watch.call('campaign', () => super.campaign());
  }

  override leaderUnreachable(peer: NodeId): void {
    this.watch.call(`leaderUnreachable(${peer})`, () => super.leaderUnreachable(peer));
  }

  override step(m: Message): void {
    this.watch.call(`step(${m.type})`, () => super.step(m));
    if (m.type === 'snapshot') this.watch.onSnapshotStepped(m);
  }

  override propose(data: Uint8Array): ProposeResult {
    return this.watch.call('propose', () => super.propose(data));
  }

  override proposeConfigChange(change: ConfigChange): ProposeResult {
    return this.watch.call('proposeConfigChange', () => super.proposeConfigChange(change));
  }

  override readIndex(context: string): boolean {
    return this.watch.call('readIndex', () => super.readIndex(context));
  }

  override transferLeadership(to: NodeId): boolean {
    return this.watch.call(`transferLeadership(${to})`, () => super.transferLeadership(to));
  }

  override ready(): Ready {
    const rd = this.watch.call('ready', () => super.ready());
    this.watch.onReady(rd);
    return rd;
  }

  override advance(rd: Ready): void {
    this.watch.call('advance', () => super.advance(rd));
    this.watch.onAdvance(rd);
  }

  override compact(index: number): SnapshotMeta {
    const meta = this.watch.call(`compact(${index})`, () => super.compact(index));
    this.watch.onCompact(index, meta);
    return meta;
  }

  override snapshotMetaAt(index: number): SnapshotMeta | null {
    const meta = this.watch.call(`snapshotMetaAt(${index})`, () => super.snapshotMetaAt(index));
    this.watch.onSnapshotMeta(index, meta);
    return meta;
  }

  override shouldInstallSnapshot(m: SnapshotRequest): boolean {
    return this.watch.shouldInstall(m, this.watch.call('shouldInstallSnapshot', () => super.shouldInstallSnapshot(m)));
  }

  override reportSnapshot(to: NodeId, ok: boolean): void {
    this.watch.call(`reportSnapshot(${to}, ${ok})`, () => super.reportSnapshot(to, ok));
  }
}
