// Password guessing, slowed per user and address and per address. Each password
// check is a slow hash, and a member runs only two at once, so a flood of guesses
// from one address used to keep every other user out. Now every password attempt
// counts against its (user, address) and its address until it succeeds; past a few
// free attempts each further one waits twice as long as the one before (up to
// MAX_DELAY_MS), and one that comes sooner is refused at once, before any hash, with
// RATE_LIMITED and how long to wait; it counts too, so knocking during a wait only
// makes it longer. A flood from one address therefore spends
// about one hash at a time, and a user at another address still gets in. An
// attempt is counted when it starts (so a burst sent at once is counted whole), and
// a success takes it back and clears its user's count at that address.
// In memory, per member; the tables are bounded (the longest quiet entries go first).

/** Attempts a (user, address) may fail before it has to wait, and an address. */
export const FREE_PER_USER_ADDRESS = 5;
export const FREE_PER_ADDRESS = 20;
/** The first wait, doubled for each further failure, and the longest. */
export const FIRST_DELAY_MS = 250;
export const MAX_DELAY_MS = 30_000;
/** Failures are forgotten this long after the last one (or its wait, if longer). */
export const FORGET_AFTER_MS = 10 * 60_000;
/** Entries per table; past it, the oldest is forgotten. */
export const MAX_ENTRIES = 16_384;

interface Tally {
  failures: number;
  /** No attempt before this time (ms). */
  until: number;
  /** The last attempt counted (ms). */
  last: number;
}

class Table {
  private readonly tallies = new Map<string, Tally>();

  constructor(private readonly free: number) {}

  /** Milliseconds until `key` may try again; 0: now. */
  wait(key: string, now: number): number {
    const t = this.live(key, now);
    return t === undefined ? 0 : Math.max(0, t.until - now);
  }

  count(key: string, now: number): void {
    const t = this.live(key, now) ?? { failures: 0, until: 0, last: now };
    t.failures++;
    t.last = now;
    const over = t.failures - this.free;
    t.until = over <= 0 ? 0 : now + Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(over - 1, 20));
    // Re-inserted: the map's order is then the order of last use, oldest first.
    this.tallies.delete(key);
    if (this.tallies.size >= MAX_ENTRIES) this.tallies.delete(this.tallies.keys().next().value!);
    this.tallies.set(key, t);
  }

  forgive(key: string, all: boolean): void {
    const t = this.tallies.get(key);
    if (t === undefined) return;
    if (all || t.failures <= 1) this.tallies.delete(key);
    else t.failures--;
  }

  private live(key: string, now: number): Tally | undefined {
    const t = this.tallies.get(key);
    if (t !== undefined && now > Math.max(t.until, t.last) + FORGET_AFTER_MS) {
      this.tallies.delete(key);
      return undefined;
    }
    return t;
  }
}

/** The host of an address as the server names a client ('127.0.0.1:50012', '[::1]:50012', or a bare host). */
export function hostOf(remote: string): string {
  return /^(.*):\d+$/.exec(remote)?.[1] ?? remote;
}

export class LoginBackoff {
  private readonly byUserAddress = new Table(FREE_PER_USER_ADDRESS);
  private readonly byAddress = new Table(FREE_PER_ADDRESS);

  /** Milliseconds `user` at `remote` must wait before a password attempt; 0: it may try now. */
  wait(user: string, remote: string, now: number): number {
    const host = hostOf(remote);
    return Math.max(this.byUserAddress.wait(`${user}\u0000${host}`, now), this.byAddress.wait(host, now));
  }

  /** Counts an attempt (refused or going on to a hash) as a failure until `succeeded` says otherwise. */
  attempt(user: string, remote: string, now: number): void {
    const host = hostOf(remote);
    this.byUserAddress.count(`${user}\u0000${host}`, now);
    this.byAddress.count(host, now);
  }

  /** The attempt proved the password: its user starts afresh at that address, and the address gets the attempt back. */
  succeeded(user: string, remote: string): void {
    const host = hostOf(remote);
    this.byUserAddress.forgive(`${user}\u0000${host}`, true);
    this.byAddress.forgive(host, false);
  }
}
