// Claims that wait for work (long-poll), on the member that serves them. When
// items become available, as many waiting claimers are woken as there are new
// items, oldest first (no herd); when only future items wait, one timer wakes
// one claimer at the earliest process date. Nothing polls.
import type { FrontEnd } from '../../server/front/context.js';
import { journal } from './index.js';
import { earliestProcessAt } from './reads.js';

interface Waiter {
  readonly deadline: number;
  readonly wake: () => void;
  timer: NodeJS.Timeout;
}

/** A claim request in progress here, which its session may call off (journal.cancelWait). */
export interface ClaimTicket {
  readonly name: string;
  readonly session: string;
  cancelled: boolean;
  /** Wakes the claim if it waits now. */
  wake: (() => void) | null;
}

export class JournalWaiters {
  private readonly byJournal = new Map<string, Waiter[]>();
  private readonly dueTimers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly fe: FrontEnd) {}

  private readonly tickets = new Set<ClaimTicket>();

  /** A claim of `name` for `session` starts here; end it with `finish`. */
  begin(name: string, session: string): ClaimTicket {
    const ticket: ClaimTicket = { name, session, cancelled: false, wake: null };
    this.tickets.add(ticket);
    return ticket;
  }

  finish(ticket: ClaimTicket): void {
    this.tickets.delete(ticket);
  }

  /** Calls off the session's claims of `name` in progress here: a waiting one answers at once. How many. */
  cancel(name: string, session: string): number {
    let n = 0;
    for (const t of this.tickets) {
      if (t.name !== name || t.session !== session || t.cancelled) continue;
      t.cancelled = true;
      t.wake?.();
      n++;
    }
    return n;
  }

  /** Resolves when woken for `name`, at `deadline` (ms, performance.now()), or when the ticket is cancelled, whichever is first. */
  wait(name: string, deadline: number, ticket?: ClaimTicket): Promise<void> {
    if (ticket?.cancelled === true) return Promise.resolve();
    return new Promise((resolve) => {
      const queue = this.byJournal.get(name) ?? [];
      this.byJournal.set(name, queue);
      const leave = (): void => {
        const at = queue.indexOf(waiter);
        if (at >= 0) queue.splice(at, 1);
        // No claim waits any more: expectsClaim must say so (held acknowledgements go at once).
        if (queue.length === 0 && this.byJournal.get(name) === queue) this.byJournal.delete(name);
      };
      const waiter: Waiter = {
        deadline,
        wake: () => {
          clearTimeout(waiter.timer);
          if (ticket !== undefined) ticket.wake = null;
          resolve();
        },
        timer: setTimeout(() => {
          leave();
          if (ticket !== undefined) ticket.wake = null;
          resolve();
        }, Math.max(0, deadline - performance.now())).unref(),
      };
      if (ticket !== undefined) {
        ticket.wake = () => {
          leave();
          waiter.wake();
        };
      }
      queue.push(waiter);
      this.armDueTimer(name);
    });
  }

  private readonly proposing = new Map<string, number>();

  /** A claim of `name` is being proposed here until the returned function is called. */
  claiming(name: string): () => void {
    this.proposing.set(name, (this.proposing.get(name) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = this.proposing.get(name)! - 1;
      if (n === 0) this.proposing.delete(name);
      else this.proposing.set(name, n);
    };
  }

  /** Whether a claim of `name` waits here or is being proposed (its claimer will likely ask again). */
  expectsClaim(name: string): boolean {
    return this.byJournal.has(name) || this.proposing.has(name);
  }

  /** `count` items of `name` became available: wake that many claimers, oldest first. */
  wake(name: string, count: number): void {
    const queue = this.byJournal.get(name);
    if (queue === undefined) return;
    for (const waiter of queue.splice(0, count)) waiter.wake();
    if (queue.length === 0) this.byJournal.delete(name);
    else this.armDueTimer(name);
  }

  /** One timer per journal with claimers waiting, at its earliest future process date. */
  private armDueTimer(name: string): void {
    const old = this.dueTimers.get(name);
    if (old !== undefined) clearTimeout(old);
    this.dueTimers.delete(name);
    const definition = this.fe.node.stateMachine.stateOf(journal).live(name);
    if (definition === null || definition.counts.waiting === 0) return;
    void this.fe.node.stateMachine
      .read(`journal ${name}`, (db, snapshot) => earliestProcessAt(db, snapshot, name, definition))
      .then((earliest) => {
        if (earliest === null || !this.byJournal.has(name) || this.dueTimers.has(name)) return;
        // The replicated clock stands in for the leader's: dates are compared with it in the claim.
        const delay = Math.max(1, earliest - Date.now());
        this.dueTimers.set(
          name,
          setTimeout(() => {
            this.dueTimers.delete(name);
            this.wake(name, 1);
          }, Math.min(delay, 2 ** 31 - 1)).unref(),
        );
      })
      .catch(() => undefined);
  }

  close(): void {
    for (const t of this.dueTimers.values()) clearTimeout(t);
    this.dueTimers.clear();
    for (const queue of this.byJournal.values()) for (const w of queue) w.wake();
    this.byJournal.clear();
  }
}
