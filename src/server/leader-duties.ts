// What only the leader does: keep every session's clock, propose expiry when one
// runs out, and write acknowledged notification indexes through Raft in batches.
// A new leader starts every session's clock at the full timeout (seed 003).

import { CloseCode, type FrontEnd } from './context.js';

export interface LeaderDutyTimings {
  /** How often session deadlines are checked: bounds how late an expiry is proposed. */
  readonly expiryCheckMs: number;
  /** How often acknowledged indexes are written through Raft. */
  readonly ackFlushMs: number;
}

export const DEFAULT_DUTY_TIMINGS: LeaderDutyTimings = { expiryCheckMs: 25, ackFlushMs: 1000 };

export class LeaderDuties {
  private timers: NodeJS.Timeout[] = [];
  private leading = false;

  constructor(
    private readonly fe: FrontEnd,
    private readonly timings: LeaderDutyTimings,
  ) {}

  /** Called on every role change. */
  setLeading(leading: boolean): void {
    if (leading === this.leading) return;
    this.leading = leading;
    this.stopTimers();
    const { fe } = this;
    fe.expiry.clear();
    if (leading) {
      for (const [session, info] of fe.node.stateMachine.sessions()) fe.expiry.track(session, info.timeoutMs);
      this.timers.push(setInterval(() => this.checkSessions(), this.timings.expiryCheckMs));
      this.timers.push(setInterval(() => this.flushAcks(), this.timings.ackFlushMs));
      fe.logger.info({ event: 'leader-duties-started', sessions: fe.expiry.size }, 'this node leads: session clocks started');
    } else {
      // Sessions live on the leader: send their clients to the new one.
      for (const conn of [...fe.connections.values()]) conn.close(CloseCode.notLeader, 'this node is no longer the leader; reconnect');
      fe.connections.clear();
      fe.notifier.close();
    }
  }

  stop(): void {
    this.stopTimers();
    this.leading = false;
  }

  private stopTimers(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  /**
   * Bring the clocks in line with the replicated sessions (some open or close through
   * entries applied after we took over), then propose the expiry of overdue ones.
   */
  private checkSessions(): void {
    const { fe } = this;
    const live = fe.node.stateMachine.sessions();
    for (const [session, info] of live) if (!fe.expiry.has(session)) fe.expiry.track(session, info.timeoutMs);
    for (const session of fe.expiry.sessions()) {
      if (live.has(session)) continue;
      fe.expiry.remove(session);
      fe.notifier.forgetSession(session);
      const conn = fe.connections.get(session);
      if (conn) {
        fe.connections.delete(session);
        conn.close(CloseCode.sessionEnded, 'session ended');
      }
    }
    for (const session of fe.expiry.takeDue()) {
      fe.logger.info({ event: 'session-expired', session }, 'session timed out; deleting its ephemeral items');
      fe.metrics.expirations.inc();
      fe.node.propose({ op: 'closeSession', session, reason: 'expired' }).then(
        () => undefined,
        (err: unknown) => {
          fe.logger.warn({ event: 'session-expiry-failed', session, err: String(err) }, 'expiry proposal failed; will retry');
          fe.expiry.retry(session);
        },
      );
    }
  }

  private flushAcks(): void {
    const { fe } = this;
    const live = fe.node.stateMachine.sessions();
    const acks = fe.notifier.takeUnwrittenAcks().filter(([s, index]) => live.has(s) && index > fe.node.stateMachine.lagOf(s));
    if (acks.length === 0) return;
    fe.node.propose({ op: 'ack', acks }).catch((err: unknown) => {
      fe.logger.debug({ event: 'ack-write-failed', err: String(err) }, 'acknowledged indexes not written; a resume may replay more');
    });
  }
}
