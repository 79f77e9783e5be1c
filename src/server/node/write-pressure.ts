// The writes this member has proposed and not yet seen applied. Past the bound,
// client connections stop reading requests (read-pauses.ts) until it drains, so
// the Raft core's own cap on uncommitted bytes, which refuses writes, is not
// reached by clients that merely send faster than the cluster commits.

export interface WritePressureLimits {
  /** Proposals waiting to commit and apply. */
  readonly writes: number;
  /** Bytes of their entries. */
  readonly bytes: number;
}

export class WritePressure {
  private writes = 0;
  private bytes = 0;
  private waiters: Array<() => void> = [];

  constructor(private readonly limits: WritePressureLimits) {}

  get over(): boolean {
    return this.writes >= this.limits.writes || this.bytes >= this.limits.bytes;
  }

  /** Counts `proposal` (of `bytes` entry bytes) until it settles. */
  track<T>(proposal: Promise<T>, bytes: number): Promise<T> {
    this.writes++;
    this.bytes += bytes;
    const done = (): void => {
      this.writes--;
      this.bytes -= bytes;
      if (!this.over && this.waiters.length > 0) {
        const waiters = this.waiters;
        this.waiters = [];
        for (const w of waiters) w();
      }
    };
    proposal.then(done, done);
    return proposal;
  }

  /** Calls `listener` once the pressure is below the bound (at once if it is). */
  whenBelow(listener: () => void): void {
    if (!this.over) listener();
    else this.waiters.push(listener);
  }
}
