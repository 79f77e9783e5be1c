// Simulated clients: numbered commands proposed to whoever leads, retried when
// a proposal is rejected, lost (its slot was overwritten) or seems stuck. A
// command counts as committed once any node applies it; retries may therefore
// commit a command twice, which is fine (at-least-once clients). What matters
// for safety is the acknowledgement: the accepting node applying the very
// (index, term) it handed out.

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

interface Acceptance {
  readonly term: number;
  readonly command: number;
}

export type ApplyOutcome =
  | { readonly kind: 'none' }
  | { readonly kind: 'acknowledged'; readonly command: number }
  /** The accepting node applied something else at that index: the proposal was overwritten. */
  | { readonly kind: 'lost'; readonly command: number }
  /** Same index and term as accepted, but another command: the core mislabelled a proposal. */
  | { readonly kind: 'mismatch'; readonly expected: number; readonly got: number | null };

export class SimClients {
  private nextId = 1;
  private readonly commands = new Map<number, Command>();
  /** Pending command ids, oldest first; may hold ids that are no longer pending (skipped lazily). */
  private queue: number[] = [];
  /** Per node (current incarnation): index -> the proposal it accepted there. */
  private readonly accepted = new Map<NodeId, Map<number, Acceptance>>();
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

  onAccepted(node: NodeId, command: number, index: number, term: number, now: number): void {
    const c = this.commands.get(command)!;
    if (c.state === 'pending') c.state = 'inflight';
    c.proposedAt = now;
    let byIndex = this.accepted.get(node);
    if (byIndex === undefined) {
      byIndex = new Map();
      this.accepted.set(node, byIndex);
    }
    byIndex.set(index, { term, command });
  }

  /** `node` applied `entry`: settles its own acceptance at that index, and marks the command committed. */
  onApplied(node: NodeId, entry: Entry): ApplyOutcome {
    const got = entry.kind === 'command' ? decodeCommand(entry.data) : null;
    if (got !== null) {
      const c = this.commands.get(got);
      if (c !== undefined && c.state !== 'done') {
        c.state = 'done';
        this.open--;
      }
    }
    const byIndex = this.accepted.get(node);
    const mine = byIndex?.get(entry.index);
    if (mine === undefined) return { kind: 'none' };
    byIndex!.delete(entry.index);
    if (mine.term !== entry.term) {
      this.lost++;
      this.requeue(mine.command);
      return { kind: 'lost', command: mine.command };
    }
    if (got !== mine.command) return { kind: 'mismatch', expected: mine.command, got };
    this.acknowledged++;
    return { kind: 'acknowledged', command: got };
  }

  /** A crashed node's clients lose their connections: its proposals will never be acknowledged. */
  onCrash(node: NodeId): void {
    const byIndex = this.accepted.get(node);
    if (byIndex === undefined) return;
    for (const a of byIndex.values()) this.requeue(a.command);
    byIndex.clear();
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
