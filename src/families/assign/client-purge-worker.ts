// The worker that finishes a purge: it claims the storage-node clean-up jobs a
// purge queued in a journal (cleanup.ts), sends each node the DELETE for the
// user's data, and marks the job done; a failed DELETE is released as a failure,
// so the journal retries it later and flags it after too many (docs/journal.md).
// Tokenserver's purge_old_records makes the same call inline, before deleting the
// record; here the record is gone already and the job is what remains of it.
import { parseCleanupJob, type CleanupJob } from './client-cleanup.js';

/** A claimed journal item, as much of it as the worker reads. */
interface ClaimedItem {
  readonly key: string;
  readonly data: unknown;
  readonly timeouts: number;
  readonly failures?: number;
}

/** The journal calls the worker makes: a JournalClient (vera/journal) is one. */
export interface CleanupQueue {
  claim(name: string, options: { max?: number; waitMs?: number }): Promise<{ readonly lease: number; readonly items: readonly ClaimedItem[] }>;
  done(name: string, key: string, lease: number): Promise<void>;
  release(name: string, key: string, lease: number, processAt?: number): Promise<unknown>;
}

/** Jobs one claim takes at most (each is one HTTP request in flight). */
export const MAX_JOBS_PER_CLAIM = 100;
/** Upstream's request timeout for the storage node's DELETE. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

export interface PurgeWorkerOptions {
  /** Jobs per claim (1-100). Default 10. */
  readonly max?: number;
  /** How long a claim waits for a job when the journal is empty (ms). Default 0 with untilEmpty, else 10 s. */
  readonly waitMs?: number;
  /** Stop at the first claim that finds nothing (a one-shot run); otherwise run until `signal` aborts. */
  readonly untilEmpty?: boolean;
  /** Stop after this many jobs. Default: no limit. */
  readonly maxJobs?: number;
  readonly requestTimeoutMs?: number;
  readonly signal?: AbortSignal;
  /**
   * Headers for a job's DELETE: where a deployment signs it as the storage node expects
   * (Tokenserver signs with Hawk, from a token of uid, node, fxaUid and fxaKid and the
   * node's shared secret). Default: none.
   */
  readonly headers?: (job: CleanupJob) => Record<string, string> | Promise<Record<string, string>>;
  /** Called after each job with what became of it. */
  readonly onJob?: (job: CleanupJob | null, outcome: JobOutcome, detail: string) => void;
}

/** `deleted`: the node answered 2xx/3xx; `gone`: 404 (nothing left to delete, as upstream counts it); `failed`: released to retry; `invalid`: not a clean-up job, released as a failure. */
export type JobOutcome = 'deleted' | 'gone' | 'failed' | 'invalid';

export type PurgeWorkerReport = Record<JobOutcome, number>;

async function deleteOnNode(job: CleanupJob, options: PurgeWorkerOptions): Promise<{ outcome: JobOutcome; detail: string }> {
  try {
    const headers = options.headers === undefined ? {} : await options.headers(job);
    const res = await fetch(job.endpoint, { method: 'DELETE', headers, signal: AbortSignal.timeout(options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS) });
    await res.body?.cancel();
    if (res.status === 404) return { outcome: 'gone', detail: '404' };
    if (res.status < 400) return { outcome: 'deleted', detail: String(res.status) };
    return { outcome: 'failed', detail: `HTTP ${res.status}` };
  } catch (err) {
    return { outcome: 'failed', detail: err instanceof Error ? err.message : String(err) };
  }
}

function retryDelayMs(item: ClaimedItem): number {
  return Math.min(1000 * 2 ** Math.min(item.failures ?? item.timeouts, 6), 60_000);
}

async function finish(journals: CleanupQueue, name: string, lease: number, item: ClaimedItem, options: PurgeWorkerOptions): Promise<JobOutcome> {
  const job = parseCleanupJob(item.data);
  if (typeof job === 'string') {
    await journals.release(name, item.key, lease, Date.now() + retryDelayMs(item));
    options.onJob?.(null, 'invalid', `${item.key}: ${job}`);
    return 'invalid';
  }
  const { outcome, detail } = await deleteOnNode(job, options);
  // Due again after a backoff counted from its failures so far (1 s, 2 s, ... up to 1 min), as the journal's own worker does.
  if (outcome === 'failed') await journals.release(name, item.key, lease, Date.now() + retryDelayMs(item));
  else await journals.done(name, item.key, lease);
  options.onJob?.(job, outcome, detail);
  return outcome;
}

/** Claims and finishes clean-up jobs of journal `name` until it is empty (untilEmpty), `maxJobs` are done, or `signal` aborts. */
export async function runPurgeWorker(journals: CleanupQueue, name: string, options: PurgeWorkerOptions = {}): Promise<PurgeWorkerReport> {
  const max = Math.min(Math.max(options.max ?? 10, 1), MAX_JOBS_PER_CLAIM);
  const report: PurgeWorkerReport = { deleted: 0, gone: 0, failed: 0, invalid: 0 };
  let handled = 0;
  while (options.signal?.aborted !== true && (options.maxJobs === undefined || handled < options.maxJobs)) {
    const want = options.maxJobs === undefined ? max : Math.min(max, options.maxJobs - handled);
    const claim = await journals.claim(name, { max: want, waitMs: options.waitMs ?? (options.untilEmpty === true ? 0 : 10_000) });
    if (claim.items.length === 0) {
      if (options.untilEmpty === true) break;
      continue;
    }
    const outcomes = await Promise.all(claim.items.map((item) => finish(journals, name, claim.lease, item, options)));
    for (const o of outcomes) report[o]++;
    handled += outcomes.length;
  }
  return report;
}
