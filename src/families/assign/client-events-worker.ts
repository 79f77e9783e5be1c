// Account events from a durable queue: producers (an SQS bridge, FxA's webhook, the
// assign.enqueueEvent op) add each event to a journal keyed by its id; this worker
// claims them and applies each with its id, then marks it done. Upstream's
// process_account_events reads SQS the same way. A worker that dies between applying
// an event and marking it done leaves it to be claimed again: applied again with the
// same id, it changes nothing (the family remembers the ids it applied), so each
// event id takes effect once.
import type { AccountEventKind } from './wire.js';
import { EVENT_KINDS } from './wire.js';

/** An account event as queued: the journal item's key is `eventId`, its data the rest. */
export interface AccountEvent {
  readonly eventId: string;
  readonly kind: AccountEventKind;
  readonly email: string;
  /** The account's new generation (password change, reset). */
  readonly generation?: number;
}

interface ClaimedItem {
  readonly key: string;
  readonly data: unknown;
  readonly timeouts: number;
  readonly failures?: number;
}

/** The journal calls the worker makes: a JournalClient (vera/journal) is one. */
export interface EventQueue {
  claim(name: string, options: { max?: number; waitMs?: number }): Promise<{ readonly lease: number; readonly items: readonly ClaimedItem[] }>;
  done(name: string, key: string, lease: number): Promise<void>;
  release(name: string, key: string, lease: number, processAt?: number): Promise<unknown>;
}

/** How the worker applies one event: AssignClient's event(kind, email, generation, eventId) is one. */
export type ApplyEvent = (kind: AccountEventKind, email: string, generation: number | undefined, eventId: string) => Promise<{ changed: number; duplicate?: boolean }>;

export interface EventsWorkerOptions {
  /** Events per claim (1-100). Default 20. */
  readonly max?: number;
  readonly waitMs?: number;
  /** Stop at the first claim that finds nothing due. */
  readonly untilEmpty?: boolean;
  readonly maxEvents?: number;
  readonly signal?: AbortSignal;
  readonly onEvent?: (eventId: string, outcome: EventOutcome, detail: string) => void;
}

/** `applied`; `repeat`: its id was applied before, nothing changed; `failed`: released to retry; `invalid`: not an event, released as a failure. */
export type EventOutcome = 'applied' | 'repeat' | 'failed' | 'invalid';
export type EventsWorkerReport = Record<EventOutcome, number>;

function parseEvent(key: string, data: unknown): AccountEvent | string {
  if (typeof data !== 'object' || data === null) return 'data is not a map';
  const d = data as Record<string, unknown>;
  if (!EVENT_KINDS.includes(d.kind as AccountEventKind)) return `kind must be one of ${EVENT_KINDS.join(', ')}`;
  if (typeof d.email !== 'string') return 'email is not text';
  if (d.generation !== undefined && typeof d.generation !== 'number') return 'generation is not a number';
  return { eventId: key, kind: d.kind as AccountEventKind, email: d.email, ...(d.generation === undefined ? {} : { generation: d.generation as number }) };
}

function retryAt(item: ClaimedItem): number {
  return Date.now() + Math.min(1000 * 2 ** Math.min(item.failures ?? item.timeouts, 6), 60_000);
}

async function handle(queue: EventQueue, apply: ApplyEvent, name: string, lease: number, item: ClaimedItem, options: EventsWorkerOptions): Promise<EventOutcome> {
  const event = parseEvent(item.key, item.data);
  if (typeof event === 'string') {
    await queue.release(name, item.key, lease, retryAt(item));
    options.onEvent?.(item.key, 'invalid', event);
    return 'invalid';
  }
  let outcome: EventOutcome;
  let detail: string;
  try {
    const r = await apply(event.kind, event.email, event.generation, event.eventId);
    outcome = r.duplicate === true ? 'repeat' : 'applied';
    detail = `${event.kind} ${event.email}: ${r.changed} changed`;
  } catch (err) {
    // A refused event (bad email, an unknown service) is flagged after its failures; an
    // unavailable leader is retried. Either way the journal keeps it.
    await queue.release(name, item.key, lease, retryAt(item));
    options.onEvent?.(item.key, 'failed', err instanceof Error ? err.message : String(err));
    return 'failed';
  }
  await queue.done(name, item.key, lease);
  options.onEvent?.(item.key, outcome, detail);
  return outcome;
}

/** Applies the events of journal `name`, in claim order, until it is empty (untilEmpty), `maxEvents`, or `signal`. */
export async function runEventsWorker(queue: EventQueue, apply: ApplyEvent, name: string, options: EventsWorkerOptions = {}): Promise<EventsWorkerReport> {
  const max = Math.min(Math.max(options.max ?? 20, 1), 100);
  const report: EventsWorkerReport = { applied: 0, repeat: 0, failed: 0, invalid: 0 };
  let handled = 0;
  while (options.signal?.aborted !== true && (options.maxEvents === undefined || handled < options.maxEvents)) {
    const want = options.maxEvents === undefined ? max : Math.min(max, options.maxEvents - handled);
    const claim = await queue.claim(name, { max: want, waitMs: options.waitMs ?? (options.untilEmpty === true ? 0 : 10_000) });
    if (claim.items.length === 0) {
      if (options.untilEmpty === true) break;
      continue;
    }
    // One at a time, in the order claimed: two events of one account apply in that order.
    for (const item of claim.items) {
      report[await handle(queue, apply, name, claim.lease, item, options)]++;
      handled++;
    }
  }
  return report;
}
