// Lifecycle events (issue 35, item 12): what happened to each job, derived from each applied
// journal entry's result on every member alike, so an event is named by its entry's index as
// a flag event is (flag-feed.ts keeps and serves them the same way). A producer can wait for
// its own job's completion by watching its key.
import type { JournalValue } from './apply.js';
import type { FeedEvent } from './flag-feed.js';
export type { LifecycleType };

import type { LifecycleType } from './wire.js';

export interface LifecycleEvent extends FeedEvent {
  readonly type: LifecycleType;
}

/** Lifecycle events kept per journal on each member; a watcher further behind is told it missed some. */
export const LIFECYCLE_EVENTS_KEPT = 2000;

/** The events of one applied journal entry, in the order they happened in it. */
export function lifecycleEvents(v: JournalValue, index: number): LifecycleEvent[] {
  const out: LifecycleEvent[] = [];
  const push = (type: LifecycleType, keys: readonly string[]): void => {
    for (const key of keys) out.push({ index, key, type });
  };
  switch (v.op) {
    case 'add':
      push('added', v.keys ?? []);
      break;
    case 'claim':
      push('claimed', v.items.map((i) => i.key));
      break;
    case 'done':
      if (v.key !== undefined) push('completed', [v.key]);
      if (v.next !== undefined) push('claimed', v.next.items.map((i) => i.key));
      break;
    case 'doneMany':
      push('completed', v.keys ?? []);
      if (v.next !== undefined) push('claimed', v.next.items.map((i) => i.key));
      break;
    case 'release':
      push(v.flagged ? 'flagged' : v.failure === false ? 'released' : 'failed', [v.key]);
      break;
    case 'timeout':
      push('failed', v.requeued);
      push('flagged', v.flagged);
      break;
    case 'progress':
      push('progress', [v.key]);
      break;
    case 'remove':
      push('removed', [v.key]);
      break;
    case 'drain':
      push('removed', v.keys ?? []);
      break;
    case 'tick':
      // A schedule's job is added like any other.
      if (v.key !== null) push('added', [v.key]);
      break;
    default:
      break;
  }
  return out;
}
