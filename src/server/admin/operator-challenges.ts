// The nonces GET /v1/challenge hands out (operator-auth.ts), kept until used or
// expired. Anyone may ask for one, so asking must not cost an operator the nonce
// it is about to answer: a live nonce is never evicted to make room. Instead each
// remote address may hold a few at once and the member a bounded number in all;
// past either bound a new challenge is refused (429 with Retry-After) until one
// is used or expires. A nonce is taken on its first use, whether its MAC proves
// the secret or not, so no request can be sent twice under it.
import { randomBytes } from 'node:crypto';

export interface ChallengeLimits {
  /** Outstanding nonces one remote address may hold. */
  readonly perAddress: number;
  /** Outstanding nonces in all. */
  readonly total: number;
  /** How long a nonce may wait for its use. */
  readonly ttlMs: number;
}

export const DEFAULT_CHALLENGE_LIMITS: ChallengeLimits = { perAddress: 16, total: 1024, ttlMs: 30_000 };

export type Issued = { readonly nonce: string; readonly expiresInMs: number } | { readonly refused: string; readonly retryAfterMs: number };

export class OperatorChallenges {
  /** Nonce -> its address and expiry, in the order issued (so also of expiry: the TTL is fixed). */
  private readonly open = new Map<string, { readonly remote: string; readonly expires: number }>();
  private readonly perAddress = new Map<string, number>();

  constructor(
    readonly limits: ChallengeLimits = DEFAULT_CHALLENGE_LIMITS,
    private readonly clock: () => number = Date.now,
  ) {}

  /** A fresh nonce for `remote`, or why not and when to ask again. */
  issue(remote: string): Issued {
    const now = this.clock();
    this.expire(now);
    const held = this.perAddress.get(remote) ?? 0;
    if (held >= this.limits.perAddress) {
      return { refused: `${remote} already holds ${held} unanswered challenges, the most one address may; answer one or wait for it to expire`, retryAfterMs: this.retryAfter(now, remote) };
    }
    if (this.open.size >= this.limits.total) {
      return { refused: `this member already has ${this.open.size} unanswered challenges out, the most it keeps; wait for one to expire`, retryAfterMs: this.retryAfter(now) };
    }
    const nonce = randomBytes(24).toString('base64url');
    this.open.set(nonce, { remote, expires: now + this.limits.ttlMs });
    this.perAddress.set(remote, held + 1);
    return { nonce, expiresInMs: this.limits.ttlMs };
  }

  /** Uses `nonce` up: true when it was issued and had not expired. It is gone afterwards either way. */
  take(nonce: string): boolean {
    const open = this.open.get(nonce);
    if (open === undefined) return false;
    this.forget(nonce, open.remote);
    return open.expires > this.clock();
  }

  /** Nonces outstanding (for tests and metrics). */
  get size(): number {
    return this.open.size;
  }

  private expire(now: number): void {
    for (const [nonce, open] of this.open) {
      if (open.expires > now) break;
      this.forget(nonce, open.remote);
    }
  }

  private forget(nonce: string, remote: string): void {
    this.open.delete(nonce);
    const held = (this.perAddress.get(remote) ?? 1) - 1;
    if (held <= 0) this.perAddress.delete(remote);
    else this.perAddress.set(remote, held);
  }

  /** Until the oldest nonce (of `remote`, or of anyone) expires. */
  private retryAfter(now: number, remote?: string): number {
    for (const open of this.open.values()) if (remote === undefined || open.remote === remote) return Math.max(1, open.expires - now);
    return this.limits.ttlMs;
  }
}
