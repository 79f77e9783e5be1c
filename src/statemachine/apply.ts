// Turns one decoded command into a plan: the LevelDB writes of the entry, the
// change events, the reply, and the in-memory index updates to run once the
// writes are in the db. Planning only reads (the state as of the previous
// entry), so a failed check leaves nothing behind. Everything here must be a
// pure function of the command, the entry index and the db state: no clock,
// no randomness, and loops only over key-ordered data.
import {
  clientDataKey,
  clientDataRange,
  clientKey,
  decodeClientDataKey,
  itemKey,
  lagKey,
  watchKey,
  type WatchRef,
} from '../keys/index.js';
import { EMPTY_VALUE, decodeItemValue, encodeClientValue, encodeItemValue, encodeLagValue } from './codec.js';
import type {
  AckCommand,
  CloseSessionCommand,
  Command,
  DeleteCommand,
  OpenSessionCommand,
  PushCommand,
  PushQuota,
  WatchCommand,
} from './commands.js';
import { clientAddress, type MemoryIndexes } from './indexes.js';
import { newestRemaining, readItem, readListWithin } from './reads.js';
import type { ApplyError, ApplyErrorCode, ApplySuccess, ChangeEvent, Item, VeraDb } from './types.js';
import { WATCH_ITEMS_MAX_BYTES } from './types.js';

export type BatchOp = { type: 'put'; key: Buffer; value: Buffer } | { type: 'del'; key: Buffer };

export interface Plan {
  readonly result: ApplySuccess;
  readonly ops: BatchOp[];
  readonly events: ChangeEvent[];
  /** Index updates, run in order after the batch is written. */
  readonly after: Array<() => void>;
}

export interface PlanContext {
  readonly db: VeraDb;
  readonly mem: MemoryIndexes;
  /** The index of the entry being applied. */
  readonly index: number;
}

export function failure(code: ApplyErrorCode, message: string): ApplyError {
  return { ok: false, code, message };
}

export async function planCommand(command: Command, ctx: PlanContext): Promise<Plan | ApplyError> {
  if (command.op !== 'ack' && command.op !== 'openSession' && !ctx.mem.sessions.has(command.session)) {
    return failure('SESSION_EXPIRED', `session ${command.session} is unknown or has expired`);
  }
  switch (command.op) {
    case 'openSession':
      return openSession(command, ctx);
    case 'closeSession':
      return closeSession(command, ctx);
    case 'push':
      return push(command, ctx);
    case 'delete':
      return deleteItem(command, ctx);
    case 'watch':
      return watch(command, ctx);
    case 'unwatch':
      return unwatch(command, ctx);
    case 'ack':
      return ack(command, ctx);
  }
}

function openSession(c: OpenSessionCommand, { mem }: PlanContext): Plan | ApplyError {
  if (mem.sessions.has(c.session)) return failure('CONFLICT', `session ${c.session} already exists`);
  if (c.quota !== undefined) {
    const address = clientAddress(c.remote);
    const from = mem.sessionsFrom(address);
    if (from >= c.quota.sessionsPerAddress) {
      return failure('QUOTA_EXCEEDED', `${address} already has ${from} sessions open, the most one address may hold (--sessions-per-address ${c.quota.sessionsPerAddress})`);
    }
  }
  const info = { timeoutMs: c.timeoutMs, remote: c.remote };
  return {
    result: { ok: true, op: 'openSession', session: c.session },
    ops: [{ type: 'put', key: clientKey(c.session), value: encodeClientValue(info) }],
    events: [],
    after: [() => mem.addSession(c.session, info)],
  };
}

/** Why the session may not take one more watch, or null; watching what it already watches is free. */
function watchQuotaProblem(mem: MemoryIndexes, ref: WatchRef, limit: number): ApplyError | null {
  if (mem.holdsWatch(ref)) return null;
  const held = mem.watchCount(ref.session);
  return held >= limit ? failure('QUOTA_EXCEEDED', `the session holds ${held} watches, the most it may hold (--watches-per-session ${limit})`) : null;
}

async function closeSession(c: CloseSessionCommand, { db, mem, index }: PlanContext): Promise<Plan> {
  const ops: BatchOp[] = [];
  const events: ChangeEvent[] = [];
  const removedByPath = new Map<string, Set<number>>();
  // The reverse index yields the session's items in item-key order (path, then index).
  for await (const key of db.keys(clientDataRange(c.session))) {
    const ref = decodeClientDataKey(key);
    ops.push({ type: 'del', key });
    const item = await readItem(db, ref.path, ref.index);
    if (item === undefined) continue; // a dangling reverse entry: dropping it is all there is to do
    ops.push({ type: 'del', key: itemKey(ref.path, ref.index) });
    events.push({ index, type: 'delete', path: ref.path, item });
    let removed = removedByPath.get(ref.path);
    if (removed === undefined) removedByPath.set(ref.path, (removed = new Set()));
    removed.add(ref.index);
  }
  const newest: Array<[string, number]> = [];
  for (const [path, removed] of removedByPath) newest.push([path, await newestRemaining(db, path, removed)]);
  for (const ref of mem.watchesOf(c.session)) ops.push({ type: 'del', key: watchKey(ref) });
  ops.push({ type: 'del', key: lagKey(c.session) });
  ops.push({ type: 'del', key: clientKey(c.session) });
  return {
    result: { ok: true, op: 'closeSession' },
    ops,
    events,
    after: [
      () => {
        for (const [path, last] of newest) mem.setLastIndex(path, last);
        for (const [path, removed] of removedByPath) mem.usage.removedFromList(path, removed.size);
        mem.removeSession(c.session);
      },
    ],
  };
}

async function push(c: PushCommand, { db, mem, index }: PlanContext): Promise<Plan | ApplyError> {
  const last = mem.lastIndexOf(c.path);
  if (c.ifLastIndex !== undefined && c.ifLastIndex !== last) {
    return failure('CONFLICT', `newest index of ${c.path} is ${last}, not ${c.ifLastIndex}`);
  }
  const item: Item = { index, owner: c.persistent ? null : c.session, data: c.data };
  const value = encodeItemValue(item);
  const ref: WatchRef = { prefix: false, path: c.path, session: c.session };
  if (c.quota !== undefined) {
    const problem = await pushQuotaProblem(c, c.quota, db, mem, ref, value.byteLength);
    if (problem !== null) return problem;
  }
  const ops: BatchOp[] = [{ type: 'put', key: itemKey(c.path, index), value }];
  if (!c.persistent) ops.push({ type: 'put', key: clientDataKey(c.session, c.path, index), value: EMPTY_VALUE });
  if (c.watch) ops.push({ type: 'put', key: watchKey(ref), value: EMPTY_VALUE });
  return {
    result: { ok: true, op: 'push', item },
    ops,
    events: [{ index, type: 'push', path: c.path, item }],
    after: [
      () => {
        mem.setLastIndex(c.path, index);
        mem.usage.added(item.owner, c.path, value.byteLength);
        if (c.watch) mem.addWatch(ref);
      },
    ],
  };
}

async function pushQuotaProblem(c: PushCommand, quota: PushQuota, db: VeraDb, mem: MemoryIndexes, ref: WatchRef, bytes: number): Promise<ApplyError | null> {
  const length = await mem.usage.listLength(db, c.path, quota.listItems);
  if (length >= quota.listItems) {
    return failure('QUOTA_EXCEEDED', `${c.path} holds ${quota.listItems} items, the most one list may hold (--items-per-list); delete some first`);
  }
  if (!c.persistent) {
    const owned = await mem.usage.ofSession(db, c.session);
    if (owned.items >= quota.items) {
      return failure('QUOTA_EXCEEDED', `the session owns ${owned.items} ephemeral items, the most it may own (--items-per-session ${quota.items})`);
    }
    if (owned.bytes + bytes > quota.bytes) {
      return failure('QUOTA_EXCEEDED', `the session's ephemeral items hold ${owned.bytes} bytes; ${bytes} more would pass its limit (--bytes-per-session ${quota.bytes})`);
    }
  }
  return c.watch ? watchQuotaProblem(mem, ref, quota.watches) : null;
}

async function deleteItem(c: DeleteCommand, { db, mem, index }: PlanContext): Promise<Plan | ApplyError> {
  const bytes = await db.get(itemKey(c.path, c.index));
  if (bytes === undefined) return failure('NOT_FOUND', `no item ${c.index} in ${c.path}`);
  const storedBytes = bytes.byteLength;
  const item: Item = { index: c.index, ...decodeItemValue(bytes) };
  if (item.owner !== null && item.owner !== c.session) {
    return failure('FORBIDDEN', `item ${c.index} in ${c.path} belongs to another session`);
  }
  const ops: BatchOp[] = [{ type: 'del', key: itemKey(c.path, c.index) }];
  if (item.owner !== null) ops.push({ type: 'del', key: clientDataKey(item.owner, c.path, c.index) });
  const newest =
    mem.lastIndexOf(c.path) === c.index ? await newestRemaining(db, c.path, new Set([c.index])) : mem.lastIndexOf(c.path);
  return {
    result: { ok: true, op: 'delete' },
    ops,
    events: [{ index, type: 'delete', path: c.path, item }],
    after: [
      () => {
        mem.setLastIndex(c.path, newest);
        mem.usage.removed(item.owner, c.path, storedBytes);
      },
    ],
  };
}

async function watch(c: WatchCommand, { db, mem, index }: PlanContext): Promise<Plan | ApplyError> {
  const ref: WatchRef = { prefix: c.prefix, path: c.path, session: c.session };
  if (c.quota !== undefined) {
    const problem = watchQuotaProblem(mem, ref, c.quota.watches);
    if (problem !== null) return problem;
  }
  // Apply runs one entry at a time, so this read is the list as of this entry.
  // A list too big for one reply is not read here (on every member, inside apply): the reply says so and the client reads it in pages.
  const items = c.prefix ? undefined : await readListWithin(db, c.path, WATCH_ITEMS_MAX_BYTES);
  const result: ApplySuccess =
    c.prefix ? { ok: true, op: 'watch', index }
    : items === null ? { ok: true, op: 'watch', index, tooLarge: true }
    : { ok: true, op: 'watch', index, items };
  return {
    result,
    ops: [{ type: 'put', key: watchKey(ref), value: EMPTY_VALUE }],
    events: [],
    after: [() => mem.addWatch(ref)],
  };
}

function unwatch(c: WatchCommand, { mem }: PlanContext): Plan {
  const ref: WatchRef = { prefix: c.prefix, path: c.path, session: c.session };
  return {
    result: { ok: true, op: 'unwatch' },
    // Deleting an absent key is harmless, and keeps unwatch idempotent like the protocol's `{}` reply.
    ops: [{ type: 'del', key: watchKey(ref) }],
    events: [],
    after: [() => mem.removeWatch(ref)],
  };
}

function ack(c: AckCommand, { mem }: PlanContext): Plan {
  // Acks of sessions that are gone are skipped rather than failing the whole
  // batch; a session's acknowledged index only ever rises.
  const raised = new Map<string, number>();
  for (const [session, acked] of c.acks) {
    if (!mem.sessions.has(session)) continue;
    const current = raised.get(session) ?? mem.lagOf(session);
    if (acked > current) raised.set(session, acked);
  }
  const ops: BatchOp[] = [...raised].map(([session, acked]) => ({
    type: 'put',
    key: lagKey(session),
    value: encodeLagValue(acked),
  }));
  return {
    result: { ok: true, op: 'ack' },
    ops,
    events: [],
    after: [() => raised.forEach((acked, session) => mem.setLag(session, acked))],
  };
}
