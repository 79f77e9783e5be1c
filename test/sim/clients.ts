// Simulated clients: numbered commands proposed through a node's driver to
// whoever leads, retried when the driver refuses or gives up on a proposal, or
// when it seems stuck. A command counts as committed once any node applies it;
// retries may therefore commit a command twice, which is fine (at-least-once
// clients). What matters for safety is the acknowledgement: the driver answers a
// proposal only with the entry that carries it, and only once it is committed.

import type { Entry, NodeId } from '../../src/raft/types.js';

const COMMAND_TAG = 0xc7;

export function encodeCommand(id: number): Uint8Array {
  const data = new Uint8Array(5);
  data[0] = COMMAND_TAG;
  new DataView(data.buffer).setUint32(1, id);
  return data;
}

export function decodeCommand(data: Uint8Array): number | null {
  if (data.length !== 5 || data[0] !== COMMAND_TAG) return null;
  return new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(1);
}

interface Command {
  state: 'pending' | 'inflight' | 'done';
  /** When it was last proposed (for the stuck-proposal retry). */
  proposedAt: number;
}

/** What the simulated state machine reports to the driver for each applied entry: the proposer's answer. */
export interface SimApplied {
  readonly entry: Entry;
  /** The client command the entry carries; null for other entries. */
  readonly command: number | null;
}

export type AnswerOutcome =
  | { readonly kind: 'acknowledged'; readonly command: number }
  /** The driver answered a proposal with another command's entry: it settled the wrong proposal. */
  | { readonly kind: 'mismatch'; readonly expected: number; readonly got: number | null };

export class SimClients {
  private nextId = 1;
  private readonly commands = new Map<number, Command>();
  /** Pending command ids, oldest first; may hold ids that are no longer pending (skipped lazily). */
  private queue: number[] = [];
  /** Per node (current incarnation): commands handed to its driver and not yet answered. */
  private readonly proposedTo = new Map<NodeId, Set<number>>();
  acknowledged = 0;
  lost = 0;

  /** Commands proposed (or to be retried) but not yet committed. */
  private open = 0;

  constructor(private readonly concurrency: number) {}

  /** A command to propose now: the oldest pending one, else a new one if allowed and fewer than `concurrency` are open. */
  nextCommand(allowNew: boolean): number | null {
    while (this.queue.length > 0) {
      const id = this.queue[0]!;
      if (this.commands.get(id)?.state === 'pending') return id;
      this.queue.shift();
    }
    if (!allowNew || this.open >= this.concurrency) return null;
    this.open++;
    const id = this.nextId++;
    this.commands.set(id, { state: 'pending', proposedAt: 0 });
    this.queue.push(id);
    return id;
  }

  /** `command` was handed to `node`'s driver; its answer comes later (or never, if the node crashes). */
  onProposed(node: NodeId, command: number, now: number): void {
    const c = this.commands.get(command)!;
    if (c.state === 'pending') c.state = 'inflight';
    c.proposedAt = now;
    let mine = this.proposedTo.get(node);
    if (mine === undefined) {
      mine = new Set();
      this.proposedTo.set(node, mine);
    }
    mine.add(command);
  }

  /** `node`'s driver answered the proposal of `command` with what it applied: the client is told it succeeded. */
  onAnswered(node: NodeId, command: number, applied: SimApplied): AnswerOutcome {
    this.proposedTo.get(node)?.delete(command);
    if (applied.command !== command) return { kind: 'mismatch', expected: command, got: applied.command };
    this.acknowledged++;
    return { kind: 'acknowledged', command };
  }

  /**
   * `node`'s driver refused the proposal, or gave up on it (superseded, leadership lost,
   * storage failed): it may or may not commit, so the client retries it.
   */
  onRejected(node: NodeId, command: number, afterAcceptance: boolean): void {
    this.proposedTo.get(node)?.delete(command);
    if (afterAcceptance) this.lost++;
    this.requeue(command);
  }

  /** Some node applied `entry`: the command it carries is committed. */
  onApplied(entry: Entry): void {
    const got = entry.kind === 'command' ? decodeCommand(entry.data) : null;
    if (got === null) return;
    const c = this.commands.get(got);
    if (c !== undefined && c.state !== 'done') {
      c.state = 'done';
      this.open--;
    }
  }

  /** A crashed node's clients lose their connections: its proposals will never be answered. */
  onCrash(node: NodeId): void {
    const mine = this.proposedTo.get(node);
    if (mine === undefined) return;
    for (const command of mine) this.requeue(command);
    mine.clear();
  }

  /** Proposals without an answer for `timeout` steps are retried (the accepting leader may be cut off). */
  retryStuck(now: number, timeout: number): void {
    for (const [id, c] of this.commands) {
      if (c.state === 'inflight' && now - c.proposedAt >= timeout) this.requeue(id);
    }
  }

  /** Commands not yet applied anywhere. */
  get uncommitted(): number {
    return this.open;
  }

  get created(): number {
    return this.nextId - 1;
  }

  private requeue(id: number): void {
    const c = this.commands.get(id)!;
    if (c.state !== 'inflight') return;
    c.state = 'pending';
    this.queue.push(id);
  }
}
