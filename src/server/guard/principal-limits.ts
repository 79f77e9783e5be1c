// Limits per user (with authentication on): connections to this member,
// sessions in the cluster, watches across the user's sessions, and requests a
// second to this member, and (judged in apply) items and bytes stored in the
// cluster. One user, however many addresses it comes from, cannot take the
// whole server. Sessions are judged in apply (openSession's
// principalSessions), the rest here, before anything is proposed.
import { VeraError } from '../../protocol/index.js';

export interface PrincipalLimits {
  readonly connections: number;
  readonly sessions: number;
  readonly watches: number;
  readonly requestsPerSecond: number;
  /** List items one user may store in the cluster, and their stored bytes, unless set per user or role (judged in apply: families/quota). */
  readonly items: number;
  readonly bytes: number;
}

export const DEFAULT_PRINCIPAL_LIMITS: PrincipalLimits = { connections: 1000, sessions: 1000, watches: 100_000, requestsPerSecond: 10_000, items: 1_000_000, bytes: 1024 ** 3 };

interface Bucket {
  tokens: number;
  at: number;
}

export class PrincipalMeter {
  private readonly connections = new Map<string, number>();
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    readonly limits: PrincipalLimits,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Counts a connection of `user` on this member; returns its release, or throws RATE_LIMITED past the limit. */
  connect(user: string): () => void {
    const held = this.connections.get(user) ?? 0;
    if (held >= this.limits.connections) {
      throw new VeraError('RATE_LIMITED', `user ${user} already has ${held} connections to this member, the most one user may hold (--connections-per-user ${this.limits.connections})`, { retryAfterMs: 1000 });
    }
    this.connections.set(user, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.connections.get(user) ?? 1) - 1;
      if (left === 0) this.connections.delete(user);
      else this.connections.set(user, left);
    };
  }

  /** Takes one request from `user`'s budget (a token bucket holding a second's worth), or throws RATE_LIMITED. */
  request(user: string): void {
    const rate = this.limits.requestsPerSecond;
    const now = this.now();
    let bucket = this.buckets.get(user);
    if (bucket === undefined) this.buckets.set(user, (bucket = { tokens: rate, at: now }));
    bucket.tokens = Math.min(rate, bucket.tokens + ((now - bucket.at) * rate) / 1000);
    bucket.at = now;
    if (bucket.tokens < 1) {
      throw new VeraError('RATE_LIMITED', `user ${user} sends more than ${rate} requests a second to this member (--requests-per-user)`, { retryAfterMs: Math.ceil(((1 - bucket.tokens) * 1000) / rate) });
    }
    bucket.tokens -= 1;
  }
}
