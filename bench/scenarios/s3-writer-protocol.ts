// Messages between S3 and its writer process. The writer runs in its own
// process so the moment its write is acknowledged is not delayed by the
// thousand notifications the watchers' process is busy handling. Times are
// epoch milliseconds with sub-millisecond precision (performance.timeOrigin +
// performance.now()), comparable across processes on one machine.
import type { ClientRecipe } from '../systems/system.js';

export type ToWriter =
  | { readonly type: 'init'; readonly recipe: ClientRecipe; readonly list: string }
  | { readonly type: 'write'; readonly tag: string }
  | { readonly type: 'close' };

export type FromWriter =
  | { readonly type: 'ready' }
  | { readonly type: 'written'; readonly sentAt: number; readonly ackedAt: number }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'closed' };

export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}
