// The watches family: a session's interest in a list (exact) or a subtree
// (prefix). Who is notified of each change event is read from its state. A push
// also watches its list unless told not to: this family adds that watch to the
// lists family's push entry (`joins`), so the older lists family never names it.
import { WATCH_VALUE, WatchesBucket, watchKey, type WatchRef } from './keys.js';
import type { ApplyError, ApplySuccess } from '../../statemachine/types.js';
import { type Item, type PushCommand, readListWithin } from '../lists/public.js';
import { failure, type BatchOp, type Family, type Plan, type PlanContext, type SessionEndPlan, type States } from '../../statemachine/family.js';
import { boolField, pathField, quotaField, sessionField } from '../fields.js';
import { sessionProblem } from '../sessions/public.js';
import { WatchesState } from './state.js';

/** Stored bytes of the items an exact watch returns with its result; a bigger list is answered with `tooLarge` and no items. */
export const WATCH_ITEMS_MAX_BYTES = 8 * 1024 * 1024;

export interface WatchQuota {
  readonly watches: number;
}

export interface WatchCommand {
  readonly op: 'watch' | 'unwatch';
  readonly session: string;
  /** '/' is allowed only when `prefix` is true. */
  readonly path: string;
  readonly prefix: boolean;
  /** Only on 'watch'. */
  readonly quota?: WatchQuota;
}

/** Why the session may not take one more watch, or null; watching what it already watches is free. */
function watchQuotaProblem(states: States, ref: WatchRef, limit: number): ApplyError | null {
  const state = states.of(watches);
  if (state.holds(ref)) return null;
  const held = state.count(ref.session);
  return held >= limit ? failure('QUOTA_EXCEEDED', `the session holds ${held} watches, the most it may hold (--watches-per-session ${limit})`) : null;
}

/** The write and index update that add one watch (also used by a push that watches its list). */
function addWatchOps(states: States, ref: WatchRef): { ops: BatchOp[]; after: Array<() => void> } {
  const state = states.of(watches);
  return { ops: [{ type: 'put', key: watchKey(ref), value: WATCH_VALUE }], after: [() => state.add(ref)] };
}

async function watch(c: WatchCommand, { db, states, index }: PlanContext): Promise<Plan | ApplyError> {
  const ref: WatchRef = { prefix: c.prefix, path: c.path, session: c.session };
  if (c.quota !== undefined) {
    const problem = watchQuotaProblem(states, ref, c.quota.watches);
    if (problem !== null) return problem;
  }
  // Apply runs one entry at a time, so this read is the list as of this entry.
  // A list too big for one reply is not read here (on every member, inside apply): the reply says so and the client reads it in pages.
  const items = c.prefix ? undefined : await readListWithin(db, c.path, WATCH_ITEMS_MAX_BYTES);
  const result: ApplySuccess =
    c.prefix ? { ok: true, op: 'watch', index }
    : items === null ? { ok: true, op: 'watch', index, tooLarge: true }
    : { ok: true, op: 'watch', index, items };
  return { result, events: [], ...addWatchOps(states, ref) };
}

/**
 * A push's watch of its list, added to the push's entry: at the session's watch limit the
 * push is refused, or, when the watch is the push's implicit one (watchIfRoom), made
 * without it and answered `unwatched`: the write never fails for its side effect.
 */
function watchPushedList(c: PushCommand, plan: Plan, { states }: PlanContext): Plan | ApplyError {
  if (!c.watch) return plan;
  const ref: WatchRef = { prefix: false, path: c.path, session: c.session };
  const problem = c.quota === undefined ? null : watchQuotaProblem(states, ref, c.quota.watches);
  if (problem !== null) {
    if (c.watchIfRoom !== true || plan.result.op !== 'push') return problem;
    return { ...plan, result: { ...plan.result, unwatched: true } };
  }
  const added = addWatchOps(states, ref);
  for (const op of added.ops) plan.ops.push(op);
  for (const step of added.after) plan.after.push(step);
  return plan;
}

function unwatch(c: WatchCommand, { states }: PlanContext): Plan {
  const ref: WatchRef = { prefix: c.prefix, path: c.path, session: c.session };
  const state = states.of(watches);
  return {
    result: { ok: true, op: 'unwatch' },
    // Deleting an absent key is harmless, and keeps unwatch idempotent like the protocol's `{}` reply.
    ops: [{ type: 'del', key: watchKey(ref) }],
    events: [],
    after: [() => state.remove(ref)],
  };
}

function endSession(session: string, { states }: PlanContext): SessionEndPlan {
  const state = states.of(watches);
  const refs = state.of(session);
  return {
    ops: refs.map((ref) => ({ type: 'del', key: watchKey(ref) })),
    events: [],
    after: [() => refs.forEach((ref) => state.remove(ref))],
  };
}

function decodeWatch(op: 'watch' | 'unwatch') {
  return (c: Readonly<Record<string, unknown>>): WatchCommand => {
    const prefix = boolField(c.prefix, 'prefix');
    const w: WatchCommand = { op, session: sessionField(c.session), path: pathField(c.path, prefix), prefix };
    return c.quota === undefined ? w : { ...w, quota: quotaField(c.quota, ['watches']) };
  };
}

/** What a watch and an unwatch answer (the kernel's ApplySuccess reads them from here). */
declare module '../../statemachine/types.js' {
  interface LegacyResults {
    /** `items` is present for exact watches only: the list as of this entry. */
    watch: { readonly index: number; readonly items?: readonly Item[]; readonly tooLarge?: true };
    unwatch: Record<never, never>;
  }
}

export const watches: Family<WatchCommand, WatchesState> = {
  name: 'watches',
  since: 1,
  buckets: [{ id: WatchesBucket.watch, name: 'watch' }],
  ops: {
    watch: { fields: ['session', 'path', 'prefix', 'quota'], since: 1, decode: decodeWatch('watch') },
    unwatch: { fields: ['session', 'path', 'prefix'], since: 1, decode: decodeWatch('unwatch') },
  },
  load: (db, snapshot) => WatchesState.load(db, snapshot),
  plan: (command, ctx) => {
    const expired = sessionProblem(ctx.states, command.session);
    if (expired !== null) return expired;
    return command.op === 'watch' ? watch(command, ctx) : unwatch(command, ctx);
  },
  // A watch reads its list from the db, which must hold every entry before it.
  goesAlone: (command) => command.op === 'watch',
  // An exact watch reads its list's items (from the hot store); a prefix watch and an unwatch read none.
  listsUsedBy: (command) => (command.op === 'watch' && !command.prefix ? [command.path] : []),
  endSession,
  joins: { 'lists.push': watchPushedList },
  plugin: async () => (await import('./server.js')).plugin,
};
