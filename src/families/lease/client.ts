// Leases in the client library: grant one, keep it alive (by hand, or with
// keepAlive's automatic loop), revoke it, and use its id with the kv family's
// put and txn so the items live exactly as long as the lease.
import type { VeraClient } from '../../client/client.js';
import { typedCaller, type TypedCall } from '../../client/typed-ops.js';
import { VeraError } from '../../protocol/index.js';
import { LEASE_SCHEMAS, type LeaseInfo } from './wire.js';

export type { LeaseInfo } from './wire.js';

export interface KeptAlive {
  /** Stops the keep-alives (the lease then expires after its TTL, unless revoked first). */
  stop(): void;
  /** Resolves when the lease is gone (expired or revoked): the items it owned are deleted. */
  readonly lost: Promise<VeraError>;
}

export class LeaseClient {
  private readonly call: TypedCall<typeof LEASE_SCHEMAS>;

  constructor(client: VeraClient) {
    this.call = typedCaller(client, LEASE_SCHEMAS);
  }

  /** A new lease that ends `ttlMs` after its last keep-alive (1 s to about 24 days). */
  async grant(ttlMs: number): Promise<{ lease: string; ttlMs: number }> {
    return this.call('grant', { ttlMs });
  }

  /** Restarts the lease's clock at its full TTL; NOT_FOUND once it has expired or was revoked. */
  async keepAliveOnce(lease: string): Promise<{ ttlMs: number }> {
    return this.call('keepAlive', { lease });
  }

  /**
   * Keeps the lease alive every third of its TTL until stop(), across reconnects
   * (a keep-alive that fails for want of a connection is tried again at the next
   * beat). `lost` resolves when the lease is found gone.
   */
  keepAlive(lease: string, ttlMs: number): KeptAlive {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let lose!: (err: VeraError) => void;
    const lost = new Promise<VeraError>((resolve) => (lose = resolve));
    const beat = (): void => {
      if (stopped) return;
      this.keepAliveOnce(lease).then(
        () => undefined,
        (err: unknown) => {
          if (err instanceof VeraError && (err.code === 'NOT_FOUND' || err.code === 'FORBIDDEN')) {
            stopped = true;
            clearTimeout(timer);
            lose(err);
          }
        },
      );
      timer = setTimeout(beat, Math.max(100, ttlMs / 3));
    };
    beat();
    return {
      stop: () => {
        stopped = true;
        clearTimeout(timer);
      },
      lost,
    };
  }

  /** Ends the lease now, deleting every item it owns (in one entry, with events to watchers). */
  async revoke(lease: string): Promise<void> {
    await this.call('revoke', { lease });
  }

  /** Its TTL and the time left before it expires without a keep-alive. */
  async show(lease: string): Promise<LeaseInfo> {
    return this.call('show', { lease });
  }
}
