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
  WatchCommand,
} from './commands.js';
import type { MemoryIndexes } from './indexes.js';
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
  const info = { timeoutMs: c.timeoutMs, remote: c.remote };
  return {
    result: { ok: true, op: 'openSession', session: c.session },
    ops: [{ type: 'put', key: clientKey(c.session), value: encodeClientValue(info) }],
    events: [],
    after: [() => mem.sessions.set(c.session, info)],
  };
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
        mem.removeSession(c.session);
      },
    ],
  };
}

function push(c: PushCommand, { mem, index }: PlanContext): Plan | ApplyError {
  const last = mem.lastIndexOf(c.path);
  if (c.ifLastIndex !== undefined && c.ifLastIndex !== last) {
    return failure('CONFLICT', `newest index of ${c.path} is ${last}, not ${c.ifLastIndex}`);
  }
  const item: Item = { index, owner: c.persistent ? null : c.session, data: c.data };
  const ops: BatchOp[] = [{ type: 'put', key: itemKey(c.path, index), value: encodeItemValue(item) }];
  if (!c.persistent) ops.push({ type: 'put', key: clientDataKey(c.session, c.path, index), value: EMPTY_VALUE });
  const ref: WatchRef = { prefix: false, path: c.path, session: c.session };
  if (c.watch) ops.push({ type: 'put', key: watchKey(ref), value: EMPTY_VALUE });
  return {
    result: { ok: true, op: 'push', item },
    ops,
    events: [{ index, type: 'push', path: c.path, item }],
    after: [
      () => {
        mem.setLastIndex(c.path, index);
        if (c.watch) mem.addWatch(ref);
      },
    ],
  };
}

async function deleteItem(c: DeleteCommand, { db, mem, index }: PlanContext): Promise<Plan | ApplyError> {
  const bytes = await db.get(itemKey(c.path, c.index));
  if (bytes === undefined) return failure('NOT_FOUND', `no item ${c.index} in ${c.path}`);
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
    after: [() => mem.setLastIndex(c.path, newest)],
  };
}

async function watch(c: WatchCommand, { db, mem, index }: PlanContext): Promise<Plan> {
  const ref: WatchRef = { prefix: c.prefix, path: c.path, session: c.session };
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
