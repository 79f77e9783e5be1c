// Counters in the client library: `new CounterClient(client)`, then add, get and
// remove, typed from the family's op schemas.
import type { VeraClient } from '../../client/client.js';
import { typedCaller, type TypedCall } from '../../client/typed-ops.js';
import { COUNTER_OPS, type CounterValue } from './wire.js';

export type { CounterValue } from './wire.js';

export class CounterClient {
  private readonly call: TypedCall<typeof COUNTER_OPS>;

  constructor(client: VeraClient) {
    this.call = typedCaller(client, COUNTER_OPS);
  }

  /**
   * Adds `delta` (default 1, may be negative) and resolves with the new value. With
   * `ifValue`, only if the counter holds that value now (0 when absent), else CONFLICT:
   * a compare-and-set, e.g. to take the next fencing token only once.
   */
  add(name: string, delta = 1, options: { readonly ifValue?: number } = {}): Promise<CounterValue> {
    return this.call('add', { name, delta, ...options });
  }

  /** Its value (0 and `exists: false` when absent); linearizable unless `stale`. */
  get(name: string, options: { readonly stale?: boolean } = {}): Promise<CounterValue> {
    return this.call('get', { name, consistency: options.stale === true ? 'stale' : 'linearizable' });
  }

  /** Removes it; `removed` says whether it existed. */
  async remove(name: string): Promise<boolean> {
    return (await this.call('remove', { name })).removed;
  }
}
