// A mutex without herd effect: contenders queue on the lock's list (queue.ts);
// the lowest index holds the lock, and each waiter waits only on the contender
// just before it. The item index is a fencing token. The lock is released by
// deleting the item, or by the server when the holder's session expires: a
// holder that may outlive its session must check `lost` or pass the fencing
// token to what it protects.
import type { Item, VeraError } from '../../protocol/index.js';
import type { VeraClient } from '../client.js';
import { takeTurn } from './queue.js';

export interface LockHandle {
  readonly item: Item;
  readonly fencingToken: number;
  /** Resolves (with the reason) if the lock is lost without release(): session expired, item deleted, client closed. */
  readonly lost: Promise<VeraError>;
  release(): Promise<void>;
}

export interface AcquireOptions {
  /** Stored in the contender's item (who is waiting, for operators). Default null. */
  readonly data?: unknown;
  /** Gives up waiting when aborted; the contender's item is withdrawn. */
  readonly signal?: AbortSignal;
}

export class Mutex {
  /** `path` names the lock: one list, e.g. /locks/reindex. */
  constructor(
    private readonly client: VeraClient,
    readonly path: string,
  ) {}

  async acquire(options: AcquireOptions = {}): Promise<LockHandle> {
    const turn = await takeTurn(this.client, this.path, options.data ?? null, options.signal);
    return { item: turn.item, fencingToken: turn.fencingToken, lost: turn.lost, release: () => turn.leave() };
  }

  /** Runs `fn` holding the lock, releasing it afterwards whatever happens. */
  async withLock<T>(fn: (handle: LockHandle) => Promise<T>, options: AcquireOptions = {}): Promise<T> {
    const handle = await this.acquire(options);
    try {
      return await fn(handle);
    } finally {
      await handle.release();
    }
  }
}
