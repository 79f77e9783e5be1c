// Counting what workers did with a run's jobs: completions per key, so a job
// completed twice or never is seen, and how late delayed jobs were delivered.
import { roundSummary, Samples, type LatencySummary } from '../lib/samples.js';

export interface ThroughputResult {
  readonly workers: number;
  readonly jobs: number;
  readonly seconds: number;
  /** Jobs handled per second (all of them, or as many as the time cap allowed). */
  readonly jobsPerSec: number;
  /** Jobs still queued when the time cap ended the level (not lost: it stopped waiting). */
  readonly unfinished: number;
  /** Jobs added and never handled, once the level ran to the end (0 when it was cut short). */
  readonly lost: number;
  /** Jobs whose handler ran to completion more than once. */
  readonly doubled: number;
}

/** Handler completions by key; `expect` names every key that was added. */
export class CompletionTally {
  private readonly counts = new Map<string, number>();
  private readonly known: ReadonlySet<string>;
  private finished = 0;
  private resolveAll: (() => void) | null = null;

  constructor(private readonly expected: readonly string[]) {
    this.known = new Set(expected);
  }

  /** A handler finished the job with this key. */
  handled(key: string): void {
    const n = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, n);
    if (n === 1 && this.known.has(key)) {
      this.finished++;
      if (this.finished === this.expected.length) this.resolveAll?.();
    }
  }

  /** Resolves once every expected key was handled at least once. */
  allHandled(): Promise<void> {
    if (this.finished === this.expected.length) return Promise.resolve();
    return new Promise((resolve) => (this.resolveAll = resolve));
  }

  get handledKeys(): number {
    return this.finished;
  }

  lost(): number {
    return this.expected.filter((k) => !this.counts.has(k)).length;
  }

  doubled(): number {
    let n = 0;
    for (const c of this.counts.values()) if (c > 1) n++;
    return n;
  }

  /** Keys handled that were never added (a queue inventing work). */
  strangers(): number {
    let n = 0;
    for (const k of this.counts.keys()) if (!this.known.has(k)) n++;
    return n;
  }
}

/** Lateness of delayed jobs: delivery time minus due time, in ms (negative = early). */
export class Lateness {
  private readonly samples = new Samples();
  private early = 0;

  delivered(dueAt: number, at: number): void {
    const late = at - dueAt;
    if (late < 0) this.early++;
    this.samples.add(late);
  }

  summary(): LatencySummary & { readonly early: number } {
    return { ...roundSummary(this.samples.summary(), 2), early: this.early };
  }
}
