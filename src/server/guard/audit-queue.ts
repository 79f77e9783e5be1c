// What this member has seen for the audit log and not yet handed to the leader's
// writer (src/families/audit/server.ts). A flood must not cost the log its facts
// that matter, so:
// - administrators' acts are never aggregated and never dropped (each follows a
//   committed change, so they come no faster than Raft writes);
// - a repeated failure (the same user and address), or a repeated denial (the
//   same user, address and act), is recorded once per REPEAT_WINDOW_MS, and the
//   repeats as one record with their count when the window closes;
// - denials and admin acts are written ahead of authentication failures, which
//   are the flood's usual material, and only NOISE_PER_TAKE failures go in one entry;
// - whatever did not fit is counted, and the count is recorded.

import { hostOf } from './login-backoff.js';

export type IncidentKind = 'auth-failed' | 'denied' | 'admin';

export interface QueuedFact {
  readonly at: number;
  readonly kind: IncidentKind;
  readonly principal: string | null;
  readonly remote: string;
  readonly what: string;
}

/** The longest `what` the audit family takes (MAX_WHAT_LENGTH there). */
const MAX_FACT_WHAT = 512;
/** How long repeats of one (kind, user, address) are counted into one record. */
export const REPEAT_WINDOW_MS = 10_000;
/** Windows open at once; past this, facts are queued one by one (and the queues' bounds hold). */
export const MAX_REPEAT_WINDOWS = 4096;
/** Authentication failures held; beyond this many, they are counted instead. */
export const NOISE_QUEUE_MAX = 4096;
/** Denials held (admin acts are held whatever their number); beyond this many, counted instead. */
export const VITAL_QUEUE_MAX = 65_536;
/** Authentication failures in one take, so a flood of them cannot roll the log's window over quickly. */
export const NOISE_PER_TAKE = 16;

interface RepeatWindow {
  readonly first: QueuedFact;
  repeats: number;
  lastAt: number;
  lastWhat: string;
}

export interface Suppressed {
  /** Denials, and authentication failures, that were counted but not recorded one by one. */
  denials: number;
  failures: number;
}

export interface Taken {
  readonly facts: QueuedFact[];
  readonly suppressed: Suppressed;
}

export class AuditQueue {
  /** Denials and admin acts, oldest first. */
  private vital: QueuedFact[] = [];
  /** Authentication failures, oldest first. */
  private noise: QueuedFact[] = [];
  private readonly windows = new Map<string, RepeatWindow>();
  private suppressed: Suppressed = { denials: 0, failures: 0 };

  get length(): number {
    return this.vital.length + this.noise.length;
  }

  add(fact: QueuedFact): void {
    if (fact.kind === 'admin') {
      this.vital.push(fact);
      return;
    }
    const key = repeatKey(fact);
    const open = this.windows.get(key);
    if (open !== undefined && fact.at - open.first.at < REPEAT_WINDOW_MS) {
      open.repeats++;
      open.lastAt = fact.at;
      open.lastWhat = fact.what;
      return;
    }
    if (open !== undefined) this.close(key, open);
    if (this.windows.size < MAX_REPEAT_WINDOWS) this.windows.set(key, { first: fact, repeats: 0, lastAt: fact.at, lastWhat: fact.what });
    this.enqueue(fact);
  }

  /** Up to `max` facts, denials and admin acts first, after closing the windows that ended by `now`. */
  take(max: number, now: number): Taken {
    for (const [key, w] of this.windows) if (now - w.first.at >= REPEAT_WINDOW_MS) this.close(key, w);
    const facts = this.vital.splice(0, max);
    facts.push(...this.noise.splice(0, Math.min(NOISE_PER_TAKE, max - facts.length)));
    const suppressed = this.suppressed;
    this.suppressed = { denials: 0, failures: 0 };
    return { facts, suppressed };
  }

  /** Puts facts back at the front (their write failed); counts come back too. */
  giveBack(taken: Taken): void {
    const vital = taken.facts.filter((f) => f.kind !== 'auth-failed');
    const noise = taken.facts.filter((f) => f.kind === 'auth-failed');
    // Denials and admin acts come back whatever the bound: they were held once already.
    this.vital.unshift(...vital);
    const room = Math.max(0, NOISE_QUEUE_MAX - this.noise.length);
    this.noise.unshift(...noise.slice(0, room));
    this.suppressed.denials += taken.suppressed.denials;
    this.suppressed.failures += taken.suppressed.failures + Math.max(0, noise.length - room);
  }

  private close(key: string, w: RepeatWindow): void {
    this.windows.delete(key);
    if (w.repeats === 0) return;
    const seconds = Math.max(1, Math.round((w.lastAt - w.first.at) / 1000));
    const what = `${w.repeats} more like this in ${seconds} s (the last: ${w.lastWhat})`.slice(0, MAX_FACT_WHAT);
    this.enqueue({ at: w.lastAt, kind: w.first.kind, principal: w.first.principal, remote: w.first.remote, what });
  }

  private enqueue(fact: QueuedFact): void {
    if (fact.kind === 'auth-failed') {
      if (this.noise.length < NOISE_QUEUE_MAX) this.noise.push(fact);
      else this.suppressed.failures++;
    } else if (this.vital.length < VITAL_QUEUE_MAX || fact.kind === 'admin') this.vital.push(fact);
    else this.suppressed.denials++;
  }
}

/**
 * What makes two facts repeats of one another: the kind, the user and the address
 * (its host: a flood comes from many ports), and for a denial also what was denied,
 * so that denials of different things are each recorded.
 */
function repeatKey(f: QueuedFact): string {
  return [f.kind, f.principal ?? '', hostOf(f.remote), f.kind === 'denied' ? f.what : ''].join('\u0000');
}

/** The record that says what was counted and not recorded one by one, or null when nothing was. */
export function suppressedWhat(s: Suppressed): string | null {
  if (s.denials === 0 && s.failures === 0) return null;
  return `not recorded one by one, the queue being full: ${s.denials} denials, ${s.failures} authentication failures`;
}
