// The queue primitive under leader election and locks: items of one list are
// ordered by index, the first one "holds", and every other holder-to-be waits
// for the item just before its own to go. Because every item lives in the same
// list, all waiters receive every event of that list; the herd effect is
// avoided by reacting (recomputing, deciding) only when the predecessor's
// delete arrives. Other events just update a local view: no request is sent.
// (The idea is ZooKeeper's lock recipe of sequential ephemeral nodes.)
import { VeraError } from '../../server/protocol-errors.js';
import type { Item } from '../../server/protocol-types.js';
import type { VeraClient } from '../client.js';
import type { ClientEvent } from '../notifications.js';
import { ListView } from './list-view.js';

/** Resolves once `mine` is the first item of the list at `path`. */
export async function waitForTurn(client: VeraClient, path: string, mine: Item, signal?: AbortSignal): Promise<void> {
  // Subscribe before watching, so no event between the two is missed.
  const events = client.events();
  try {
    const view = new ListView(path, await client.watch(path));
    for (;;) {
      if (!view.has(mine.index)) throw new VeraError('NOT_FOUND', `item ${mine.index} of ${path} was deleted while waiting for its turn`);
      const predecessor = view.predecessorOf(mine.index);
      if (predecessor === null) return;
      // Sleep through everything but the predecessor's delete (or a resync, which may have removed it).
      for (;;) {
        const event = await nextEvent(events, signal);
        const changed = view.apply(event);
        if (event.path !== path) continue;
        if (event.type === 'resync' || (changed && event.type === 'delete' && event.item.index === predecessor.index)) break;
        if (changed && event.type === 'delete' && event.item.index === mine.index) break;
      }
    }
  } finally {
    await events.return?.();
  }
}

/**
 * Resolves with a reason once `item` stops existing: it was deleted (by a
 * release, a resign, or anyone allowed to), its session expired, or the client
 * was closed. Until then it keeps consuming the client's events.
 */
export function watchForLoss(client: VeraClient, path: string, item: Item): Promise<VeraError> {
  const events = client.events();
  return (async (): Promise<VeraError> => {
    try {
      for (;;) {
        const event = await nextEvent(events);
        if (event.path !== path) continue;
        const gone =
          (event.type === 'delete' && event.item.index === item.index) ||
          (event.type === 'resync' && !event.items.some((i) => i.index === item.index));
        if (gone) return new VeraError('NOT_FOUND', `item ${item.index} of ${path} was deleted`);
      }
    } catch (error) {
      return error instanceof VeraError ? error : new VeraError('INTERNAL', String(error));
    } finally {
      await events.return?.();
    }
  })();
}

/** The next event, or a throw when the signal aborts or the client ends. */
async function nextEvent(events: AsyncIterableIterator<ClientEvent>, signal?: AbortSignal): Promise<ClientEvent> {
  if (signal?.aborted) throw abortError(signal);
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(abortError(signal!));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const next = await Promise.race([events.next(), aborted]);
    if (next.done === true) throw new VeraError('UNAVAILABLE', 'the client was closed');
    return next.value;
  } finally {
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
  }
}

function abortError(signal: AbortSignal): VeraError {
  const reason: unknown = signal.reason;
  return new VeraError('UNAVAILABLE', `aborted${reason instanceof Error ? `: ${reason.message}` : ''}`);
}
