// The lists family: items pushed onto lists at paths and deleted from them,
// ephemeral items owned by a session (deleted when it ends) or persistent.
// A push also watches its list unless told not to: the watches family adds the watch
// to the push's entry (its `joins`), so this family never names it.
import { ListsBucket, clientDataKey, clientDataRange, decodeClientDataKey, itemKey } from './keys.js';
import { CLIENT_DATA_VALUE, decodeChargedItem, encodeItemValue } from './codec.js';
import type { ApplyError } from '../../statemachine/types.js';
import type { ChangeEvent, Item } from './item.js';
import { failure, type BatchOp, type Family, type Plan, type PlanContext, type SessionEndPlan, type States } from '../../statemachine/family.js';
import { CommandError } from '../../statemachine/family.js';
import { boolField, indexField, pathField, quotaField, sessionField } from '../fields.js';
import { sessionProblem, sessions } from '../sessions/public.js';
import { USER_QUOTA_SINCE, type StorageLimits } from '../../kit/index.js';
import { newestRemaining } from './reads.js';
import { withStoredSize } from '../../statemachine/item-sizes.js';
import { ListsState } from './state.js';

export interface PushQuota {
  /** Watches one session may hold (a push also watches its list unless `watch: false`). */
  readonly watches: number;
  /** Ephemeral items one session may own. */
  readonly items: number;
  /** Bytes of ephemeral items (their stored values) one session may own. */
  readonly bytes: number;
  /** Items one list may hold. */
  readonly listItems: number;
}

export interface PushCommand {
  readonly op: 'push';
  readonly session: string;
  readonly path: string;
  readonly data: unknown;
  readonly persistent: boolean;
  /** Also watch the list: added by the watches family's join on a push entry (a plan of a push made by another family adds none). */
  readonly watch: boolean;
  /** Compare-and-set: the list's newest index must equal this (0 = empty list). */
  readonly ifLastIndex?: number;
  readonly quota?: PushQuota;
  /**
   * The watch is the push's implicit one (the client did not ask): at the session's
   * watch limit the push is made without it rather than refused (command version 8).
   */
  readonly watchIfRoom?: true;
  /**
   * The leader's default limits per user (command version 9): the item is charged to
   * the user behind `session` (its principal), judged against that user's limits.
   */
  readonly userQuota?: StorageLimits;
}

export interface DeleteCommand {
  readonly op: 'delete';
  readonly session: string;
  readonly path: string;
  readonly index: number;
}

export type ListsCommand = PushCommand | DeleteCommand;

/** The command version that brought watchIfRoom (a push's implicit watch never refuses the push). */
export const WATCH_IF_ROOM_SINCE = 8;

async function push(c: PushCommand, { states, index }: PlanContext): Promise<Plan | ApplyError> {
  const expired = sessionProblem(states, c.session);
  if (expired !== null) return expired;
  const state = states.of(lists);
  const last = state.lastIndexOf(c.path);
  if (c.ifLastIndex !== undefined && c.ifLastIndex !== last) {
    return failure('CONFLICT', `newest index of ${c.path} is ${last}, not ${c.ifLastIndex}`);
  }
  const item: Item = { index, owner: c.persistent ? null : c.session, data: c.data };
  const user = c.userQuota === undefined ? undefined : states.of(sessions).sessions.get(c.session)?.principal;
  const value = encodeItemValue(item, user);
  withStoredSize(item, value.byteLength);
  if (c.quota !== undefined) {
    const problem = pushQuotaProblem(c, c.quota, states, value.byteLength);
    if (problem !== null) return problem;
  }
  // Last: a refusal before it must not leave a charge behind (one after it, the watch's, drops the entry's charges).
  if (user !== undefined) {
    const refused = states.users.charge(user, 1, value.byteLength, c.userQuota!);
    if (refused !== null) return refused;
  }
  const ops: BatchOp[] = [{ type: 'put', key: itemKey(c.path, index), value }];
  if (!c.persistent) ops.push({ type: 'put', key: clientDataKey(c.session, c.path, index), value: CLIENT_DATA_VALUE });
  const after = [
    () => {
      state.setLastIndex(c.path, index);
      state.usage.added(item.owner, c.path, value.byteLength);
    },
  ];
  return { result: { ok: true, op: 'push', item }, ops, events: [{ index, type: 'push', path: c.path, item }], after };
}

/** Judged from the counts in memory: a push reads nothing from the db. (Its watch's limit the watches family judges.) */
function pushQuotaProblem(c: PushCommand, quota: PushQuota, states: States, bytes: number): ApplyError | null {
  const usage = states.of(lists).usage;
  const length = usage.listLength(c.path);
  if (length >= quota.listItems) {
    return failure('QUOTA_EXCEEDED', `${c.path} holds ${quota.listItems} items, the most one list may hold (--items-per-list); delete some first`);
  }
  if (!c.persistent) {
    const owned = usage.ofSession(c.session);
    if (owned.items >= quota.items) {
      return failure('QUOTA_EXCEEDED', `the session owns ${owned.items} ephemeral items, the most it may own (--items-per-session ${quota.items})`);
    }
    if (owned.bytes + bytes > quota.bytes) {
      return failure('QUOTA_EXCEEDED', `the session's ephemeral items hold ${owned.bytes} bytes; ${bytes} more would pass its limit (--bytes-per-session ${quota.bytes})`);
    }
  }
  return null;
}

async function deleteItem(c: DeleteCommand, { db, states, index }: PlanContext): Promise<Plan | ApplyError> {
  const expired = sessionProblem(states, c.session);
  if (expired !== null) return expired;
  const state = states.of(lists);
  const bytes = await db.get(itemKey(c.path, c.index));
  if (bytes === undefined) return failure('NOT_FOUND', `no item ${c.index} in ${c.path}`);
  const storedBytes = bytes.byteLength;
  const stored = decodeChargedItem(bytes);
  const item: Item = withStoredSize({ index: c.index, ...stored.item }, bytes.byteLength);
  if (item.owner !== null && item.owner !== c.session) {
    return failure('FORBIDDEN', `item ${c.index} in ${c.path} belongs to another session`);
  }
  if (stored.user !== undefined) states.users.change(stored.user, -1, -storedBytes);
  const ops: BatchOp[] = [{ type: 'del', key: itemKey(c.path, c.index) }];
  if (item.owner !== null) ops.push({ type: 'del', key: clientDataKey(item.owner, c.path, c.index) });
  const newest = state.lastIndexOf(c.path) === c.index ? await newestRemaining(db, c.path, new Set([c.index])) : state.lastIndexOf(c.path);
  const after = [
    () => {
      state.setLastIndex(c.path, newest);
      state.usage.removed(item.owner, c.path, storedBytes);
    },
  ];
  return { result: { ok: true, op: 'delete' }, ops, events: [{ index, type: 'delete', path: c.path, item }], after };
}

/** Items an ended session's delete reads from LevelDB at once: one trip to its thread pool for this many, not one per item. */
const END_SESSION_READ_CHUNK = 512;

/** Deletes every item the session owns, with a delete event for each, in item-key order. */
async function endSession(session: string, { db, states, index }: PlanContext): Promise<SessionEndPlan> {
  const state = states.of(lists);
  const ops: BatchOp[] = [];
  const events: ChangeEvent[] = [];
  const removedByPath = new Map<string, Set<number>>();
  // The reverse index yields the session's items in item-key order (path, then index).
  const owned = db.keys(clientDataRange(session));
  try {
    for (;;) {
      const keys = await owned.nextv(END_SESSION_READ_CHUNK);
      if (keys.length === 0) break;
      const refs = keys.map(decodeClientDataKey);
      const values = await db.getMany(refs.map((ref) => itemKey(ref.path, ref.index)));
      refs.forEach((ref, n) => {
        ops.push({ type: 'del', key: keys[n]! });
        const bytes = values[n];
        if (bytes === undefined) return; // a dangling reverse entry: dropping it is all there is to do
        const stored = decodeChargedItem(bytes);
        const item: Item = withStoredSize({ index: ref.index, ...stored.item }, bytes.byteLength);
        if (stored.user !== undefined) states.users.change(stored.user, -1, -bytes.byteLength);
        ops.push({ type: 'del', key: itemKey(ref.path, ref.index) });
        events.push({ index, type: 'delete', path: ref.path, item });
        let removed = removedByPath.get(ref.path);
        if (removed === undefined) removedByPath.set(ref.path, (removed = new Set()));
        removed.add(ref.index);
      });
    }
  } finally {
    await owned.close();
  }
  const newest: Array<[string, number]> = [];
  for (const [path, removed] of removedByPath) {
    // The list's newest stays unless the session owned it; only then walk back (a session may
    // hold one item in each of thousands of lists, and a walk is a trip to LevelDB's threads).
    const last = state.lastIndexOf(path);
    newest.push([path, removed.has(last) ? await newestRemaining(db, path, removed) : last]);
  }
  const after = [
    () => {
      for (const [path, last] of newest) state.setLastIndex(path, last);
      for (const [path, removed] of removedByPath) state.usage.removedFromList(path, removed.size);
      state.usage.forgetSession(session);
    },
  ];
  return { ops, events, after };
}

/** What a push and a delete answer (the kernel's ApplySuccess reads them from here). */
declare module '../../statemachine/types.js' {
  interface LegacyResults {
    /** `unwatched`: the push's implicit watch was left out, the session being at its watch limit. */
    push: { readonly item: Item; readonly unwatched?: true };
    delete: Record<never, never>;
  }
}

export const lists: Family<ListsCommand, ListsState> = {
  name: 'lists',
  since: 1,
  buckets: [
    { id: ListsBucket.item, name: 'item' },
    { id: ListsBucket.clientData, name: 'clientData' },
  ],
  ops: {
    push: {
      fields: ['session', 'path', 'data', 'persistent', 'watch', 'ifLastIndex', 'quota', 'watchIfRoom', 'userQuota'],
      since: 1,
      fieldsSince: { watchIfRoom: WATCH_IF_ROOM_SINCE, userQuota: USER_QUOTA_SINCE },
      decode: (c) => {
        if (c.data === undefined) throw new CommandError('push needs data');
        const base: PushCommand = {
          op: 'push',
          session: sessionField(c.session),
          path: pathField(c.path, false),
          data: c.data,
          persistent: boolField(c.persistent, 'persistent'),
          watch: boolField(c.watch, 'watch'),
        };
        const withIf = c.ifLastIndex === undefined ? base : { ...base, ifLastIndex: indexField(c.ifLastIndex, 'ifLastIndex') };
        const withQuota = c.quota === undefined ? withIf : { ...withIf, quota: quotaField(c.quota, ['watches', 'items', 'bytes', 'listItems']) };
        const withUserQuota = c.userQuota === undefined ? withQuota : { ...withQuota, userQuota: quotaField(c.userQuota, ['items', 'bytes']) };
        if (c.watchIfRoom === undefined) return withUserQuota;
        if (c.watchIfRoom !== true) throw new CommandError('watchIfRoom must be true when present');
        return { ...withUserQuota, watchIfRoom: true as const };
      },
    },
    delete: {
      fields: ['session', 'path', 'index'],
      since: 1,
      decode: (c) => ({ op: 'delete', session: sessionField(c.session), path: pathField(c.path, false), index: indexField(c.index, 'index') }),
    },
  },
  load: (db, snapshot) => ListsState.load(db, snapshot),
  plan: (command, ctx) => (command.op === 'push' ? push(command, ctx) : deleteItem(command, ctx)),
  // A delete reads the db (the item, and the newest remaining when it was the newest); a push reads nothing.
  goesAlone: (command) => command.op === 'delete',
  listsUsedBy: (command) => [command.path],
  endSession,
  plugin: async () => (await import('./server.js')).plugin,
};
