// What only the leader does, on timers: the duties the command families declare
// (session clocks and expiry, writing acknowledged indexes, ...). Each runs every
// `timings[name]` ms while this member leads; when it stops leading, the duties
// stop and the clients attached here are sent to the new leader.

import { CloseCode, type FrontEnd } from '../front/context.js';
import type { PluginDuty } from '../../kit/plugin.js';

/** Period of each duty by name (ms). */
export type LeaderDutyTimings = Readonly<Record<string, number>>;

export const DEFAULT_DUTY_TIMINGS: LeaderDutyTimings = {
  // Bounds how late an expiry is proposed.
  'session-expiry': 25,
  'ack-flush': 1000,
  'command-version': 1000,
};

export class LeaderDuties {
  private timers: NodeJS.Timeout[] = [];
  private leading = false;

  constructor(
    private readonly fe: FrontEnd,
    private readonly duties: readonly PluginDuty[],
    private readonly timings: LeaderDutyTimings,
  ) {
    for (const duty of duties) if (!(this.periodOf(duty) > 0)) throw new Error(`no period for the leader duty ${duty.name}`);
  }

  /** The server's timing for the duty if it has one (tests shorten them), else the duty's own. */
  private periodOf(duty: PluginDuty): number {
    return this.timings[duty.name] ?? duty.periodMs;
  }

  /** Called on every role change. */
  setLeading(leading: boolean): void {
    if (leading === this.leading) return;
    this.leading = leading;
    this.stopTimers();
    const { fe } = this;
    if (leading) {
      for (const duty of this.duties) {
        duty.start?.();
        this.timers.push(setInterval(() => duty.tick(), this.periodOf(duty)));
      }
    } else {
      for (const duty of this.duties) duty.stop?.();
      // Sessions live on the leader: send their clients to the new one.
      for (const conn of [...fe.connections.values()]) conn.close(CloseCode.notLeader, 'this node is no longer the leader; reconnect');
      fe.connections.clear();
      // Not close(): that is for shutdown, and a closed notifier never resyncs a stalled feed once this member leads again.
      fe.notifier.detachAll();
    }
  }

  /** The server closes: timers end, and while it led, each duty's stop runs (what a duty started ends with it). */
  stop(): void {
    this.stopTimers();
    if (this.leading) for (const duty of this.duties) duty.stop?.();
    this.leading = false;
  }

  private stopTimers(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }
}
