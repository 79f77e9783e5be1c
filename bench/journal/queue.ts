// What the journal benchmark (J1) asks of each work queue: add jobs (now or
// later), run workers that take one job at a time, and stop. Every system is
// driven through its ordinary Node client; each adapter says how it maps.

export interface Job {
  /** Unique per run: the checker counts completions by key. */
  readonly key: string;
  /** When the job may first run (ms since the epoch); absent = now. */
  readonly dueAt?: number;
}

export interface Workers {
  /** Stops taking jobs and waits for the running ones; does not complete anything more. */
  stop(): Promise<void>;
}

export interface QueueSystem {
  readonly name: string;
  /** How durability and replication are configured, for the report. */
  readonly settings: string;
  /** A fresh, empty queue for one measurement; `lockMs` is the claim/lock/visibility timeout. */
  open(queue: string, lockMs: number): Promise<QueueHandle>;
  stop(): Promise<void>;
}

export interface QueueHandle {
  add(jobs: readonly Job[]): Promise<void>;
  /**
   * `concurrency` workers each take one job at a time, call `handle`, and complete the job
   * when it resolves. A job whose handler never resolves is never completed (a dead worker).
   */
  work(concurrency: number, handle: (key: string) => Promise<void>): Promise<Workers>;
  /** Workers that take one job and then vanish without completing it, as a killed process would. */
  takeAndDie(): Promise<string>;
  close(): Promise<void>;
}
