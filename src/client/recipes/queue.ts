// The queue primitive under leader election and locks. The idea is ZooKeeper's
// lock recipe (sequential ephemeral nodes, each waiter watching only the node
// before its own), adapted to Vera's lists.
//
// Contenders for one name queue as ephemeral items of the list at its path P;
// the item with the lowest index heads the queue. Vera watches whole lists, so
// if waiters watched P every change would reach all of them (the herd effect).
// Instead each contender first pushes one ephemeral item onto a list of its own,
// P/.presence/<nonce>, and names that list in its queue item. A waiter watches
// only its predecessor's presence list, so when the predecessor goes (release,
// resign, or session expiry, which deletes both its items in one entry) exactly
// one session hears about it, and only that one sends requests.
//
// Order of operations, which the waiting logic relies on:
// - joining: the presence item first, then the queue item, so a queue item
//   always has a presence item that is at least as old;
// - leaving: the queue item first, then the presence item, so whoever wakes up
//   on the presence delete already finds the queue item gone.
import { randomBytes } from 'node:crypto';
import { validatePath, VeraError, type Item } from '../../protocol/index.js';
import type { VeraClient } from '../client.js';
import type { ClientEvent } from '../notifications.js';
import { ListView } from './list-view.js';

/** The segment under a queue's path that holds its contenders' presence lists. */
export const PRESENCE_SEGMENT = '.presence';

/** One contender's place in a queue, from joining until it leaves. */
export interface Turn {
  /** The contender's queue item, with `data` as the contender gave it. Its index is the fencing token. */
  readonly item: Item;
  readonly fencingToken: number;
  /** Resolves (with the reason) when the turn is lost without leave(): item deleted, session expired, client closed. */
  readonly lost: Promise<VeraError>;
  /** Leaves the queue (idempotent), waking the next contender. */
  leave(): Promise<void>;
}

/** What a queue item holds: where its contender's presence list is, and the contender's own data. */
interface QueueEntry {
  readonly presence: string;
  readonly data: unknown;
}

interface Ticket {
  readonly path: string;
  /** The queue item as stored (data is a QueueEntry). */
  readonly item: Item;
  readonly presence: { readonly path: string; readonly index: number };
}

/** Joins the queue at `path` and resolves once this contender heads it. */
export async function takeTurn(client: VeraClient, path: string, data: unknown, signal?: AbortSignal): Promise<Turn> {
  const ticket = await join(client, path, data);
  let watchingQueue = false;
  let lost: Promise<VeraError>;
  try {
    await waitForTurn(client, ticket, signal);
    watchingQueue = true;
    ({ lost } = await watchForLoss(client, ticket));
  } catch (error) {
    // Withdraw, so a contender that gave up never gets the turn later.
    await leave(client, ticket, { holding: watchingQueue }).catch(() => undefined);
    throw error;
  }
  let leaving: Promise<void> | null = null;
  return {
    item: contenderItem(ticket.item),
    fencingToken: ticket.item.index,
    lost,
    leave: () => (leaving ??= leave(client, ticket, { holding: true })),
  };
}

/** A queue item as its contender gave it: `data` unwrapped. Items not made by takeTurn pass unchanged. */
export function contenderItem(item: Item): Item {
  const entry = asQueueEntry(item.data);
  return entry === null ? item : { ...item, data: entry.data as Item['data'] };
}

async function join(client: VeraClient, path: string, data: unknown): Promise<Ticket> {
  const pathProblem = validatePath(path, { allowRoot: false });
  if (pathProblem !== null) throw new VeraError('BAD_REQUEST', `invalid queue path: ${pathProblem}`);
  const presencePath = `${path}/${PRESENCE_SEGMENT}/${randomBytes(12).toString('base64url')}`;
  const problem = validatePath(presencePath, { allowRoot: false });
  if (problem !== null) throw new VeraError('BAD_REQUEST', `queue path ${JSON.stringify(path)} leaves no room for presence lists below it: ${problem}`);
  // Neither push watches its list: the whole point is that only a successor listens.
  const presence = await client.push(presencePath, null, { watch: false });
  let item: Item;
  try {
    const entry: QueueEntry = { presence: presencePath, data: data ?? null };
    item = await client.push(path, entry, { watch: false });
  } catch (error) {
    // A push that failed as UNAVAILABLE may still have been committed; the unique
    // presence path identifies our queue item, so nothing stray is left to block the queue.
    await withdrawUnknown(client, path, presencePath).catch(() => undefined);
    await deleteIfPresent(client, presencePath, presence.index).catch(() => undefined);
    throw error;
  }
  return { path, item, presence: { path: presencePath, index: presence.index } };
}

/** Deletes whatever queue item names `presencePath`, if one was committed after all. */
async function withdrawUnknown(client: VeraClient, path: string, presencePath: string): Promise<void> {
  const { items } = await client.get(path);
  for (const item of items) if (asQueueEntry(item.data)?.presence === presencePath) await deleteIfPresent(client, path, item.index);
}

async function waitForTurn(client: VeraClient, ticket: Ticket, signal?: AbortSignal): Promise<void> {
  const { path, item: mine } = ticket;
  // Predecessors whose presence list was found empty while their queue item remained.
  const withoutPresence = new Set<number>();
  for (;;) {
    if (signal?.aborted) throw abortError(signal);
    const { items } = await client.get(path);
    if (!items.some((i) => i.index === mine.index)) {
      throw new VeraError('NOT_FOUND', `item ${mine.index} of ${path} was deleted while waiting for its turn`);
    }
    const predecessor = items.filter((i) => i.index < mine.index).at(-1);
    if (predecessor === undefined) return;
    const presence = withoutPresence.has(predecessor.index) ? null : presencePathOf(path, predecessor);
    if (presence === null) {
      await waitForDelete(client, path, predecessor.index, signal);
    } else if (!(await waitForEmpty(client, presence, signal))) {
      // Its presence went before its queue item, which leave() never does (someone
      // deleted it by hand): the presence list cannot wake us, so watch the queue itself.
      withoutPresence.add(predecessor.index);
    }
  }
}

/**
 * Watches the presence list until it is empty, then stops watching it. Says
 * whether it held an item when the watch began (false: it was already gone).
 */
async function waitForEmpty(client: VeraClient, presencePath: string, signal?: AbortSignal): Promise<boolean> {
  // Subscribe before watching, so no event between the two is missed.
  const events = client.events();
  try {
    const view = new ListView(presencePath, await client.watch(presencePath));
    const heldItem = view.items.length > 0;
    try {
      while (view.items.length > 0) view.apply(await nextEvent(events, signal));
    } finally {
      // Nobody writes to this list again; a failed unwatch only leaves a silent watch behind.
      await client.unwatch(presencePath).catch(() => undefined);
    }
    return heldItem;
  } finally {
    await events.return?.();
  }
}

/**
 * Watches the whole queue until item `index` is deleted: the fallback for a
 * predecessor without a usable presence list. The watch is kept, since this
 * session may also hold a turn on the same queue and need it.
 */
async function waitForDelete(client: VeraClient, path: string, index: number, signal?: AbortSignal): Promise<void> {
  const events = client.events();
  try {
    const view = new ListView(path, await client.watch(path));
    while (view.has(index)) view.apply(await nextEvent(events, signal));
  } finally {
    await events.return?.();
  }
}

/**
 * Watches the queue now that `ticket` heads it. `lost` settles once the item
 * stops existing: deleted (by leave() or anyone allowed to), its session
 * expired, or the client closed. Only the head watches the queue, so this costs
 * no herd.
 */
async function watchForLoss(client: VeraClient, ticket: Ticket): Promise<{ lost: Promise<VeraError> }> {
  const { path, item } = ticket;
  const events = client.events();
  let view: ListView;
  try {
    view = new ListView(path, await client.watch(path));
    if (!view.has(item.index)) throw new VeraError('NOT_FOUND', `item ${item.index} of ${path} was deleted just as its turn came`);
  } catch (error) {
    await events.return?.();
    throw error;
  }
  const lost = (async (): Promise<VeraError> => {
    try {
      while (view.has(item.index)) view.apply(await nextEvent(events));
      return new VeraError('NOT_FOUND', `item ${item.index} of ${path} was deleted`);
    } catch (error) {
      return error instanceof VeraError ? error : new VeraError('INTERNAL', String(error));
    } finally {
      await events.return?.();
    }
  })();
  return { lost };
}

async function leave(client: VeraClient, ticket: Ticket, { holding }: { holding: boolean }): Promise<void> {
  await deleteIfPresent(client, ticket.path, ticket.item.index);
  // Unwatch before the presence delete wakes the successor, which may be another
  // turn of this same session that is about to watch the queue itself.
  if (holding) await client.unwatch(ticket.path).catch(() => undefined);
  await deleteIfPresent(client, ticket.presence.path, ticket.presence.index);
}

/** Deletes one item; already gone counts as done. */
async function deleteIfPresent(client: VeraClient, path: string, index: number): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.delete(path, index);
      return;
    } catch (error) {
      if (error instanceof VeraError && error.code === 'NOT_FOUND') return;
      // UNAVAILABLE leaves the outcome unknown (e.g. the connection dropped);
      // deleting the same index again is harmless, so try a few times.
      const retry = error instanceof VeraError && error.code === 'UNAVAILABLE' && attempt < 3 && client.state !== 'closed' && client.state !== 'expired';
      if (!retry) throw error;
    }
  }
}

/** The predecessor's presence list, if its item is a well-formed entry of this queue. */
function presencePathOf(path: string, item: Item): string | null {
  const entry = asQueueEntry(item.data);
  if (entry === null || !entry.presence.startsWith(`${path}/${PRESENCE_SEGMENT}/`)) return null;
  return validatePath(entry.presence, { allowRoot: false }) === null ? entry.presence : null;
}

function asQueueEntry(data: unknown): QueueEntry | null {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return null;
  const { presence } = data as Record<string, unknown>;
  if (typeof presence !== 'string' || !('data' in data)) return null;
  return data as QueueEntry;
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
