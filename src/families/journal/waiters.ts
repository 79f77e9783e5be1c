// Claims that wait for work (long-poll), on the member that serves them. When
// items become available, as many waiting claimers are woken as there are new
// items, oldest first (no herd); when only future items wait, one timer per
// journal wakes claimers at the earliest process date, enough for the items due
// then. Nothing polls.
//
// A claim proposed at T takes the items due by T (the entry's date): while it is
// in flight the timer aims past T, at the next item it will not take, so items due
// closer together than one Raft round are each claimed at their date by another
// waiting claim, rather than queueing behind the claim in flight. The dates come
// from the Waiting index's fronts held in memory (state.ts), the db only when those
// do not tell.
//
// The timer fires a Raft round ahead of the date (claim-ahead.ts: this member's recent
// claim rounds), and the claims it wakes take the items due by that date (the entry's
// `dueBy`), their replies held until it: the entry commits about when the item falls due.
import { ClaimRounds } from './claim-ahead.js';
import type { JournalDefinition } from './records.js';
import type { JournalState } from './state.js';

/** What the waiters read of the member they serve. */
export interface WaitersSource {
  /** The journal family's in-memory state (the Waiting index's fronts). */
  state(): JournalState;
  /** The replicated clock. */
  now(): number;
  /** The earliest process date of `name`'s Waiting items (after `after`, when given), read from the store; null: none. */
  earliestProcessAt(name: string, definition: JournalDefinition, after: number | undefined): Promise<number | null>;
}

interface Waiter {
  readonly deadline: number;
  /** Items the claim asks for. */
  readonly max: number;
  /** `dueBy`: the date the due timer woke it for, ahead of that date (its claim takes the items due by it). */
  readonly wake: (dueBy?: number) => void;
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
  /** The latest armDueTimer call of each journal (numbered across journals, so a forgotten entry never matches again). */
  private readonly latestArm = new Map<string, number>();
  private armCalls = 0;
  private isClosed = false;
  /** This member's claim rounds: how far ahead of a date the due timer wakes claims. */
  private readonly rounds = new ClaimRounds();
  /**
   * Per journal, the date a claim woken ahead of it came back empty for: the item there is not
   * taken ahead (it expires by its date), so woken ahead again the claim would find it again,
   * a wasted entry each round until the date. For that date the timer waits for the date itself.
   */
  private readonly emptyAhead = new Map<string, number>();

  constructor(private readonly source: WaitersSource) {}

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
    // One called off just as the timer woke it claims nothing: the others look again.
    if (n > 0 && this.byJournal.has(name)) this.armDueTimer(name);
    return n;
  }

  /**
   * Resolves when woken for `name`, at `deadline` (ms, performance.now()), or when the ticket is
   * cancelled, whichever is first; with a date when the due timer woke it ahead of that date
   * (the claim then takes the items due by it: `dueBy`).
   */
  wait(name: string, deadline: number, ticket?: ClaimTicket, max = 1): Promise<number | undefined> {
    if (ticket?.cancelled === true || this.isClosed) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const queue = this.byJournal.get(name) ?? [];
      this.byJournal.set(name, queue);
      const leave = (): void => {
        const at = queue.indexOf(waiter);
        if (at >= 0) queue.splice(at, 1);
        // No claim waits any more: expectsClaim must say so (held acknowledgements go at once), and
        // the journal's due timer has no one to wake (the next claim arms its own).
        if (queue.length === 0 && this.byJournal.get(name) === queue) {
          this.byJournal.delete(name);
          clearTimeout(this.dueTimers.get(name));
          this.dueTimers.delete(name);
          this.emptyAhead.delete(name);
        }
      };
      const waiter: Waiter = {
        deadline,
        max,
        wake: (dueBy) => {
          clearTimeout(waiter.timer);
          if (ticket !== undefined) ticket.wake = null;
          resolve(dueBy);
        },
        timer: setTimeout(() => {
          leave();
          if (ticket !== undefined) ticket.wake = null;
          resolve(undefined);
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

  /** Claims of each journal being proposed here: how many, the items they ask for, and the latest date one was sent (it takes the items due by then). */
  private readonly proposing = new Map<string, { count: number; asked: number; through: number }>();

  /** A claim woken ahead of `date` (its dueBy) took nothing: the timer goes no longer ahead for that date. */
  aheadCameBackEmpty(name: string, date: number): void {
    this.emptyAhead.set(name, date);
  }

  /**
   * A claim of `name` for `max` items, taking those due by `through` (its `dueBy`, or now), is
   * being proposed here until the returned function is called (its round is measured so).
   */
  claiming(name: string, max: number, through = Date.now()): () => void {
    const p = this.proposing.get(name) ?? { count: 0, asked: 0, through: -Infinity };
    p.count++;
    p.asked += max;
    p.through = Math.max(p.through, through);
    this.proposing.set(name, p);
    const started = performance.now();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.rounds.record(performance.now() - started);
      p.asked -= max;
      if (--p.count > 0) return;
      this.proposing.delete(name);
      // Applied or failed: what it left due (more than it asked for) is for the claims that wait.
      if (this.byJournal.has(name)) this.armDueTimer(name);
    };
  }

  /**
   * Whether the claims of `name` in flight here take every item due by `now`, as far as the
   * fronts in memory tell: a claim arriving now would find nothing left, so it waits.
   */
  covered(name: string, now: number): boolean {
    const p = this.proposing.get(name);
    if (p === undefined) return false;
    const state = this.source.state();
    const taken = state.dueBetween(name, -Infinity, p.through, p.asked + 1);
    return taken !== undefined && taken <= p.asked && (now <= p.through || state.dueBetween(name, p.through, now, 1) === 0);
  }

  /** Whether a claim of `name` waits here or is being proposed (its claimer will likely ask again). */
  expectsClaim(name: string): boolean {
    return this.byJournal.has(name) || this.proposing.has(name);
  }

  /** `count` items of `name` became available: wake that many claimers, oldest first. */
  wake(name: string, count: number): void {
    this.wakeOldest(name, count);
    if (this.byJournal.has(name)) this.armDueTimer(name);
  }

  private wakeOldest(name: string, count: number, dueBy?: number): void {
    const queue = this.byJournal.get(name);
    if (queue === undefined) return;
    for (const waiter of queue.splice(0, count)) waiter.wake(dueBy);
    if (queue.length === 0) this.byJournal.delete(name);
  }

  /** Wakes the oldest claimers that together ask for `items` (one at least), for the items due by `dueBy` when given. */
  private wakeFor(name: string, items: number, dueBy?: number): void {
    const queue = this.byJournal.get(name);
    if (queue === undefined) return;
    let n = 0;
    for (let asked = 0; n < queue.length && (n === 0 || asked < items); n++) asked += queue[n]!.max;
    this.wakeOldest(name, n, dueBy);
  }

  /**
   * One timer per journal with claimers waiting, at the earliest process date past what
   * the claims in flight here take, less the lead (a claim round, claim-ahead.ts). Then it
   * wakes claimers for the items due by that date, and aims at the next date past it.
   */
  private armDueTimer(name: string, after?: number, notBefore = -Infinity): void {
    const old = this.dueTimers.get(name);
    if (old !== undefined) clearTimeout(old);
    this.dueTimers.delete(name);
    if (this.isClosed) return;
    // Only this call's answer arms the timer: a db read started earlier may finish later, with a date from before.
    const call = ++this.armCalls;
    this.latestArm.set(name, call);
    const state = this.source.state();
    const definition = state.live(name);
    if (definition === null || definition.counts.waiting === 0) {
      this.latestArm.delete(name);
      return;
    }
    // Paused or at its rate limit: the claims wait for the end of that, not for a date. Paused has
    // no end (the resume wakes them all, server.ts); a full window ends, and then they look again.
    const now = Math.max(this.source.now(), Date.now(), notBefore);
    const blockedUntil = state.claimsBlockedUntil(name, now);
    if (blockedUntil !== null) {
      if (!Number.isFinite(blockedUntil)) return;
      const windowEnds = (): void => {
        this.dueTimers.delete(name);
        if (this.byJournal.has(name)) this.armDueTimer(name, undefined, blockedUntil);
      };
      this.dueTimers.set(name, setTimeout(windowEnds, Math.min(blockedUntil - now, 2 ** 31 - 1)).unref());
      return;
    }
    // Past the claims in flight, unless more is due by their date than they ask for.
    const p = this.proposing.get(name);
    const beyond = p !== undefined && (state.dueBetween(name, -Infinity, p.through, p.asked + 1) ?? 0) <= p.asked ? p.through : -Infinity;
    const from = Math.max(after ?? -Infinity, beyond);
    const arm = (earliest: number | null): void => {
      if (earliest === null || this.isClosed || !this.byJournal.has(name) || this.latestArm.get(name) !== call) return;
      // Not ahead of a date whose claim ahead came back empty (emptyAhead): at the date itself.
      const atTheDate = this.emptyAhead.get(name) === earliest;
      const lead = atTheDate ? 0 : this.rounds.lead();
      // The replicated clock stands in for the leader's: dates are compared with it in the claim.
      const fire = (): void => {
        // Timers run on the monotonic clock in whole ms and may fire a millisecond before the date
        // by the wall clock, which dates the claim's entry: woken then, the claim would find the
        // item not yet due and cost a wasted round and a second one (one fire in ten, measured in
        // bench/results/2026-11-28c-journal-lateness). Wait out the rest.
        // No claim waits any more (they ran out their waits): the next claim arms its own timer.
        if (!this.byJournal.has(name)) {
          this.dueTimers.delete(name);
          return;
        }
        const early = earliest - lead - Date.now();
        if (early > 0) {
          // Capped as the first arm is: Node fires a longer timer after 1 ms.
          this.dueTimers.set(name, setTimeout(fire, Math.min(early, 2 ** 31 - 1)).unref());
          return;
        }
        this.dueTimers.delete(name);
        if (atTheDate) this.emptyAhead.delete(name);
        const wall = Date.now();
        const now = Math.max(wall, earliest);
        const due = this.source.state().dueBetween(name, from, now, Number.MAX_SAFE_INTEGER) ?? 1;
        // Ahead of the date: the claims woken take the items due by it.
        this.wakeFor(name, Math.max(1, due), earliest > wall ? earliest : undefined);
        if (this.byJournal.has(name)) this.armDueTimer(name, now);
      };
      const delay = earliest - lead - Date.now();
      // Due already: at once (a timer of 0 waits a millisecond).
      if (delay <= 0) return fire();
      this.dueTimers.set(name, setTimeout(fire, Math.min(delay, 2 ** 31 - 1)).unref());
    };
    const known = state.earliestAfter(name, from);
    if (known !== undefined) return arm(known);
    void this.source
      .earliestProcessAt(name, definition, Number.isFinite(from) ? from : undefined)
      .then(arm)
      .catch(() => undefined);
  }

  /** Claims waiting here, and the timers held for them (theirs and the due timers): for tests of close. */
  holding(): { readonly claims: number; readonly timers: number } {
    let claims = 0;
    for (const queue of this.byJournal.values()) claims += queue.length;
    return { claims, timers: claims + this.dueTimers.size };
  }

  /**
   * The member is closing: every waiting claim is woken at once (server.ts finds the member
   * closed and answers so), every timer is cleared, and no store read starts after it.
   */
  close(): void {
    this.isClosed = true;
    for (const t of this.dueTimers.values()) clearTimeout(t);
    this.dueTimers.clear();
    this.latestArm.clear();
    this.emptyAhead.clear();
    const queues = [...this.byJournal.values()];
    this.byJournal.clear();
    for (const queue of queues) for (const w of queue) w.wake();
  }
}
