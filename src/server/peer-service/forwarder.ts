// The member side of forwarded writes (docs/scale-out.md "Writes: forwarding to the
// leader"): a proposal made on a member that does not lead goes to the leader as
// `fwd {id, rid, body}`, and is answered with THIS member's apply outcome of the
// entry carrying `rid` (read-your-writes on the member; apply is deterministic, so
// it is the leader's outcome too).
//
// How each way a forward can end is settled (the design's failure cases 2 and 5):
// - the entry carrying `rid` applies here: its outcome, whether or not fwdOk came;
// - fwdOk {index, term}, then another entry applies at `index`: UNAVAILABLE
//   not-proposed (Log Matching: the command can never apply; the desk proposed it once);
// - fwdErr: refused before proposing. A NOT_LEADER / NO_LEADER refusal is sent once
//   more to the leader known now, if that is another member; others become the error;
// - the payload never reached a socket (the link dropped first): not-proposed;
// - nothing by the deadline: UNAVAILABLE with the outcome unknown. Nobody resends
//   it, so it is applied at most once.
import { randomInt } from 'node:crypto';
import { RaftError } from '../../raft/driver.js';
import type { NodeId } from '../../raft/types.js';
import { VeraError } from '../../protocol/errors.js';
import type { ApplyOutcome } from '../../statemachine/types.js';
import { nextLeader } from './relay.js';
import { encodeServiceMessage, unsentIds, type ForwardedMessage, type ForwardRefusedMessage } from './codec.js';

export interface ForwarderOptions {
  readonly selfId: NodeId;
  /** Unique to this process: a request id of an earlier process of this member is never taken for one of ours. */
  readonly processTag: string;
  /** The peer transport's sendService: false when the payload was not queued (it may throw, for one too large). */
  readonly send: (to: NodeId, payload: Uint8Array) => boolean;
  /** The largest service payload the transport carries (maxServicePayloadBytes of its maxFrameBytes). */
  readonly maxPayloadBytes: number;
  /** The command version `peer` advertised in its handshake, if it is connected. */
  readonly peerVersion: (peer: NodeId) => number | undefined;
  /** Forwards go only to a leader advertising at least this version (the envelope's `r` needs it). */
  readonly minLeaderVersion: number;
  /** RaftDriver.awaitEntry through the node; `cancel` fires when the forward settles otherwise (its deadline, its `r`). */
  readonly awaitEntry: (index: number, term: number, cancel: AbortSignal) => Promise<ApplyOutcome>;
  /** The leader this member knows now, for the one re-forward after a refusal. */
  readonly currentLeader: () => NodeId | null;
  /** How long a forward may wait for its entry before it is answered UNAVAILABLE (outcome unknown). */
  readonly deadlineMs: number;
  readonly after: (ms: number, run: () => void) => () => void;
}

interface PendingForward {
  readonly rid: string;
  readonly body: Uint8Array;
  /** The link the current attempt went on, and its id there. */
  to: NodeId;
  id: number;
  reforwarded: boolean;
  readonly resolve: (outcome: ApplyOutcome) => void;
  readonly reject: (err: Error) => void;
  readonly cancelDeadline: () => void;
  /** Gives up the driver's wait for the entry (awaitEntry), so a settled forward leaves nothing waiting there. */
  readonly giveUp: AbortController;
}

export class Forwarder {
  /** Random start: an answer meant for an earlier process of this member can match no forward of this one. */
  private nextId = randomInt(1, 2 ** 30);
  private nextRequest = 1;
  private readonly byId = new Map<number, PendingForward>();
  private readonly byRid = new Map<string, PendingForward>();
  private closed = false;

  constructor(private readonly opts: ForwarderOptions) {}

  /** Whether a proposal made now goes to `leader` (it takes forwards), not to this member's core. */
  accepts(leader: NodeId): boolean {
    return !this.closed && (this.opts.peerVersion(leader) ?? 0) >= this.opts.minLeaderVersion;
  }

  /** Forwards waiting for their answer. */
  get pending(): number {
    return this.byRid.size;
  }

  /** Sends `body` (encodeForwardBody) to `leader`; resolves with this member's outcome of its entry. */
  forward(leader: NodeId, body: Uint8Array): Promise<ApplyOutcome> {
    if (this.closed) return Promise.reject(new RaftError('UNAVAILABLE', 'server is shutting down', null, true));
    const rid = `${this.opts.selfId}/${this.opts.processTag}/${this.nextRequest++}`;
    // Sized with the widest id (ids stay below 2^32), and refused before it is registered.
    const size = encodeServiceMessage({ k: 'fwd', id: 2 ** 32 - 1, rid, body }).byteLength;
    if (size > this.opts.maxPayloadBytes) {
      return Promise.reject(new VeraError('TOO_LARGE', `the write would be a ${size}-byte peer message, more than the ${this.opts.maxPayloadBytes} a member forwards to the leader`));
    }
    return new Promise<ApplyOutcome>((resolve, reject) => {
      const cancelDeadline = this.opts.after(this.opts.deadlineMs, () => {
        if (this.settle(p)) reject(new RaftError('UNAVAILABLE', `the leader did not answer a forwarded write within ${this.opts.deadlineMs} ms; the outcome is unknown`));
      });
      const p: PendingForward = { rid, body, to: leader, id: 0, reforwarded: false, resolve, reject, cancelDeadline, giveUp: new AbortController() };
      this.byRid.set(rid, p);
      if (!this.send(p, leader)) {
        this.settle(p);
        reject(new RaftError('UNAVAILABLE', `cannot reach the leader ${leader} to forward the write now`, leader, true));
      }
    });
  }

  /** An entry applied here: the answer to the forward whose request id it carries. */
  onApplied(outcome: ApplyOutcome): void {
    if (outcome.r === undefined) return;
    const p = this.byRid.get(outcome.r);
    if (p !== undefined && this.settle(p)) p.resolve(outcome);
  }

  /** A fwdOk or fwdErr payload from `from` (decoded by the service). */
  onAnswer(from: NodeId, m: ForwardedMessage | ForwardRefusedMessage): void {
    const p = this.byId.get(m.id);
    if (p === undefined || p.to !== from) return; // settled already (by its entry, or its deadline)
    if (m.k === 'fwdOk') {
      this.byId.delete(p.id);
      this.opts.awaitEntry(m.index, m.term, p.giveUp.signal).then(
        (outcome) => {
          // Only the entry carrying this forward's request id answers it; any other is left to `r` or the deadline.
          if (outcome.r === p.rid && this.settle(p)) p.resolve(outcome);
        },
        (err: unknown) => {
          // Another entry took the index: never applied. Anything else (applied before we
          // asked, a snapshot over it, shutting down): the entry's `r` or the deadline settles it.
          if (err instanceof RaftError && err.notProposed && this.settle(p)) p.reject(err);
        },
      );
      return;
    }
    this.byId.delete(p.id);
    if ((m.code === 'NOT_LEADER' || m.code === 'NO_LEADER') && m.notProposed && !p.reforwarded) {
      const leader = nextLeader(this.opts.currentLeader(), from, m.leader);
      if (leader !== null && this.accepts(leader)) {
        p.reforwarded = true;
        if (this.send(p, leader)) return;
      }
    }
    if (this.settle(p)) p.reject(refusal(m));
  }

  /** Payloads the transport accepted for `to` but never handed to a socket: those forwards were not sent. */
  onUnsent(to: NodeId, payloads: readonly Uint8Array[]): void {
    for (const id of unsentIds(payloads, 'fwd')) {
      const p = this.byId.get(id);
      if (p !== undefined && p.to === to && this.settle(p)) {
        p.reject(new RaftError('UNAVAILABLE', `the link to the leader ${to} dropped before the write was sent`, to, true));
      }
    }
  }

  /** Stops: every forward still waiting is answered UNAVAILABLE (its outcome unknown). */
  close(): void {
    this.closed = true;
    for (const p of [...this.byRid.values()]) {
      if (this.settle(p)) p.reject(new RaftError('UNAVAILABLE', 'server is shutting down; the outcome of a forwarded write is unknown'));
    }
  }

  private send(p: PendingForward, to: NodeId): boolean {
    const id = this.nextId++;
    p.to = to;
    p.id = id;
    this.byId.set(id, p);
    let sent: boolean;
    try {
      sent = this.opts.send(to, encodeServiceMessage({ k: 'fwd', id, rid: p.rid, body: p.body }));
    } catch {
      sent = false; // the transport refused it outright: it was not sent
    }
    if (!sent) this.byId.delete(id);
    return sent;
  }

  /** Forgets `p`; true the first time (only its first settlement answers). */
  private settle(p: PendingForward): boolean {
    if (this.byRid.get(p.rid) !== p) return false;
    this.byRid.delete(p.rid);
    this.byId.delete(p.id);
    p.cancelDeadline();
    p.giveUp.abort();
    return true;
  }
}

/** The error a refusal becomes on this member: what the leader's own client would have got. */
function refusal(m: ForwardRefusedMessage): Error {
  switch (m.code) {
    case 'NOT_LEADER':
    case 'NO_LEADER':
      // No leader took it, even after one re-forward: to this member's client, there is no leader now.
      return new RaftError('NO_LEADER', m.message);
    case 'UNAVAILABLE':
      return new RaftError('UNAVAILABLE', m.message, m.leader ?? null, m.notProposed);
    case 'TIMEOUT':
      return new RaftError('TIMEOUT', m.message);
    default:
      return new VeraError(m.code, m.message, m.retryAfterMs === undefined ? {} : { retryAfterMs: m.retryAfterMs });
  }
}
