// Session liveness on a running member (docs/scale-out.md "Session liveness", step 8b):
// every member's MemberLiveness batches the sessions whose connections it holds and
// sends them to the leader it knows over the service channel (the leader's own go
// straight into its clocks); the leader's SessionClocks, sharing the session-expiry
// duty's ExpiryQueue, moves the clocks of the sessions the sender holds and answers
// each batch only after proving it still leads. Every interval, a connection whose
// session's confirmation is more than half its timeout old while its client keeps
// talking is closed with 4009, so the client resumes elsewhere before it could expire.
import type { Logger } from 'pino';
import type { NodeId, Status } from '../../raft/types.js';
import type { ExpiryQueue } from '../node/expiry.js';
import { MemberLiveness, type LiveAck, type LiveBatch } from './liveness.js';
import { decodeLivenessMessage, encodeLivenessMessage } from './liveness-codec.js';
import { SessionClocks } from './session-clocks.js';
import type { ServiceChannel } from './service.js';

/** Batches go out this often (`--liveness-interval` of the design; fixed here). */
export const LIVENESS_INTERVAL_MS = 100;

export interface LivenessWiringOptions {
  readonly selfId: NodeId;
  status(): Status;
  readonly channel: ServiceChannel;
  /** The session-expiry duty's clocks, which the batches move on the leader. */
  readonly expiry: ExpiryQueue;
  /** The replicated holder of a live session: its member, null when it records none, undefined when not live. */
  holderOf(session: string): string | null | undefined;
  /** Every live session and its timeout, for the clocks of a new leader. */
  liveSessions(): Iterable<readonly [string, number]>;
  /** The notifier's acknowledge (acks heard by other members reach the leader's ack-flush so). */
  acknowledge(session: string, index: number): void;
  /** Resolves once this member proved it led when called (a ReadIndex on the leader). */
  confirmLeadership(): Promise<unknown>;
  /** Whether this leader's writes waiting to commit are past their bound. */
  busy(): boolean;
  /** Closes the session's connection here with 4009: its confirmation is too old. */
  sendAway(session: string): void;
  readonly logger: Logger;
  readonly intervalMs?: number;
}

export class LivenessWiring {
  readonly member: MemberLiveness;
  readonly clocks: SessionClocks;
  private leader: NodeId | null = null;
  private leading = false;
  private moveTimer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: LivenessWiringOptions) {
    const intervalMs = opts.intervalMs ?? LIVENESS_INTERVAL_MS;
    this.member = new MemberLiveness({
      clock: {
        now: () => performance.now(),
        every: (ms, fn) => {
          const timer = setInterval(fn, ms);
          return () => clearInterval(timer);
        },
      },
      intervalMs,
      term: () => opts.status().term,
      send: (batch) => this.sendBatch(batch),
    });
    this.clocks = new SessionClocks({
      now: () => performance.now(),
      checkEveryMs: intervalMs,
      queue: opts.expiry,
      holderOf: (session) => opts.holderOf(session),
      leadership: {
        leadingTerm: () => {
          const st = opts.status();
          return st.role === 'leader' ? st.term : null;
        },
        confirm: () => opts.confirmLeadership(),
      },
      acknowledge: (session, index) => opts.acknowledge(session, index),
      sendAck: (member, ack) => this.sendAck(member, ack),
      busy: () => opts.busy(),
    });
  }

  start(): void {
    this.member.start();
    this.moveTimer ??= setInterval(() => this.sendAwayUnconfirmed(), this.opts.intervalMs ?? LIVENESS_INTERVAL_MS);
    this.onStatus(this.opts.status());
  }

  stop(): void {
    this.member.stop();
    this.clocks.stop();
    if (this.moveTimer !== null) clearInterval(this.moveTimer);
    this.moveTimer = null;
  }

  /** Every role or leader change: a new leader hears of every session held here at once; a leader starts its clocks. */
  onStatus(st: Pick<Status, 'role' | 'leader'>): void {
    const leading = st.role === 'leader';
    if (leading !== this.leading) {
      this.leading = leading;
      // Taken before start clears the clocks, which are shared with the duty that just tracked them.
      if (leading) this.clocks.start([...this.opts.liveSessions()]);
      else this.clocks.stop();
    }
    if (st.leader !== this.leader) {
      this.leader = st.leader;
      if (st.leader !== null) this.member.leaderChanged();
    }
  }

  /** A `live` or `liveAck` payload from `from` (PeerService hands them here); throws PeerProtocolError when malformed. */
  onPayload(from: NodeId, payload: Uint8Array): void {
    const m = decodeLivenessMessage(payload);
    if (m.k === 'live') this.clocks.onBatch(from, m);
    // Only the leader this member knows confirms anything (a deposed one cannot prove it leads anyway).
    else if (from === this.opts.status().leader) this.member.onLiveAck(m);
  }

  private sendBatch(batch: LiveBatch): void {
    const leader = this.opts.status().leader;
    if (leader === null) return; // nobody to tell: the confirmations stop moving, and the 4009 rule sends clients on
    if (leader === this.opts.selfId) {
      this.clocks.onBatch(this.opts.selfId, batch);
      return;
    }
    this.opts.channel.sendService(leader, encodeLivenessMessage({ k: 'live', ...batch }));
  }

  private sendAck(member: NodeId, ack: LiveAck): void {
    if (member === this.opts.selfId) {
      this.member.onLiveAck(ack);
      return;
    }
    this.opts.channel.sendService(member, encodeLivenessMessage({ k: 'liveAck', ...ack }));
  }

  private sendAwayUnconfirmed(): void {
    for (const session of this.member.sessionsToMove()) {
      this.opts.logger.warn({ event: 'session-sent-away', session }, 'no leader confirmed this session for half its timeout; closing its connection (4009) so its client resumes on another member');
      this.member.release(session);
      this.opts.sendAway(session);
    }
  }
}
