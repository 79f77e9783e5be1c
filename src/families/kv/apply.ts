// Planning a transaction: the compares read the lists as the entries before it
// left them; then the writes of the chosen branch are planned, each against that
// same state (a branch writes each list at most once, so no write can see
// another's), and joined into one plan: every write lands, or the first refusal
// is the entry's answer and nothing does. Pushes and deletes are the lists
// family's own plans; removing many items of a list (put, clear) is planned here
// as the lists family plans a delete.
import { clientDataKey, itemKey, itemRange, decodeItemKey, decodeChargedItem, type ChangeEvent, type Item, lists, type PushCommand } from '../lists/public.js';
import { withStoredSize } from '../../statemachine/item-sizes.js';
import type { ApplyError } from '../../statemachine/types.js';
import { failure, type BatchOp, type Plan, type PlanContext } from '../../statemachine/family.js';
import { sessionProblem } from '../sessions/public.js';
import type { Compare, TxnCommand, Write } from './commands.js';

/** One write's outcome, as the reply carries it. */
export type WriteResult =
  | { readonly op: 'push'; readonly item: Item }
  | { readonly op: 'put'; readonly item: Item; readonly deleted: number }
  | { readonly op: 'delete' }
  | { readonly op: 'clear'; readonly deleted: number };

export interface TxnValue {
  readonly op: 'txn';
  readonly succeeded: boolean;
  readonly results: readonly WriteResult[];
}

export async function planTxn(c: TxnCommand, ctx: PlanContext): Promise<Plan | ApplyError> {
  const { states } = ctx;
  const asker = sessionProblem(states, c.session);
  if (asker !== null) return asker;
  let succeeded = true;
  for (const compare of c.compare) {
    if (!holds(compare, read(compare, ctx))) {
      succeeded = false;
      break;
    }
  }
  const plan: Plan = { result: { ok: true, op: 'family', family: 'kv', value: null }, ops: [], events: [], after: [] };
  const results: WriteResult[] = [];
  const writes = succeeded ? c.success : c.failure;
  for (let i = 0; i < writes.length; i++) {
    const w = writes[i]!;
    const part = await planWrite(w, c, ctx);
    if ('ok' in part) return { ...part, message: `${succeeded ? 'success' : 'failure'}[${i}] (${w.op} ${w.path}): ${part.message}` };
    join(plan, part.plan);
    results.push(part.result);
  }
  const value: TxnValue = { op: 'txn', succeeded, results };
  return { ...plan, result: { ok: true, op: 'family', family: 'kv', value } };
}

function read(compare: Compare, { states }: PlanContext): number {
  const state = states.of(lists);
  const newest = state.lastIndexOf(compare.path);
  if (compare.target === 'newest') return newest;
  if (compare.target === 'exists') return newest === 0 ? 0 : 1;
  return state.usage.listLength(compare.path);
}

function holds({ cmp, value }: Compare, actual: number): boolean {
  switch (cmp) {
    case '=':
      return actual === value;
    case '!=':
      return actual !== value;
    case '<':
      return actual < value;
    case '>':
      return actual > value;
  }
}

/** Items one put or clear removes, at most: the work of one entry on every member is bounded. */
export const MAX_REMOVED = 10_000;

function join(into: Plan, part: Plan): void {
  // Loops, not spreads: a put may remove thousands of items.
  for (const op of part.ops) into.ops.push(op);
  for (const event of part.events) into.events.push(event);
  for (const step of part.after) into.after.push(step);
}

type Planned = { readonly plan: Plan; readonly result: WriteResult };

async function planWrite(w: Write, c: TxnCommand, ctx: PlanContext): Promise<Planned | ApplyError> {
  switch (w.op) {
    case 'push': {
      const planned = await pushPlan(w.path, w.data, w.owner, c, ctx, c.quota.listItems);
      if ('ok' in planned) return planned;
      return { plan: planned.plan, result: { op: 'push', item: planned.item } };
    }
    case 'put': {
      const removal = await removeItems(w.path, w.keep - 1, ctx);
      if ('ok' in removal) return removal;
      // The push is judged against the list before the removal: it may hold as many more as that removes.
      const planned = await pushPlan(w.path, w.data, w.owner, c, ctx, c.quota.listItems + removal.deleted);
      if ('ok' in planned) return planned;
      join(removal.plan, planned.plan);
      return { plan: removal.plan, result: { op: 'put', item: planned.item, deleted: removal.deleted } };
    }
    case 'delete': {
      const planned = await lists.plan({ op: 'delete', session: c.session, path: w.path, index: w.index }, ctx);
      if ('ok' in planned) return planned;
      return { plan: planned, result: { op: 'delete' } };
    }
    case 'clear': {
      const removal = await removeItems(w.path, 0, ctx);
      if ('ok' in removal) return removal;
      return { plan: removal.plan, result: { op: 'clear', deleted: removal.deleted } };
    }
  }
}

/**
 * The lists family's plan of a push that watches nothing, owned by `owner` (a session, a lease,
 * or none). A push's watch is the watches family's join on lists.push entries, which a plan made
 * here never passes through: `watch: true` would add no watch.
 */
async function pushPlan(path: string, data: unknown, owner: string | null, c: TxnCommand, ctx: PlanContext, listItems: number): Promise<{ readonly plan: Plan; readonly item: Item } | ApplyError> {
  // The owner's session (or lease) must be live; a persistent item is judged against the asker's.
  const push: PushCommand = {
    op: 'push',
    session: owner ?? c.session,
    path,
    data,
    persistent: owner === null,
    watch: false,
    quota: { ...c.quota, listItems },
    ...(c.userQuota === undefined ? {} : { userQuota: c.userQuota }),
  };
  const planned = await lists.plan(push, ctx);
  // The asker's session is live (checked first): a gone owner is a lease that ended, not the asker's expiry.
  if ('ok' in planned && planned.code === 'SESSION_EXPIRED') return failure('NOT_FOUND', `lease ${owner} has expired or was revoked`);
  if ('ok' in planned) return planned;
  if (planned.result.op !== 'push') return failure('BAD_REQUEST', `a push planned as ${planned.result.op}`);
  return { plan: planned, item: planned.result.item };
}

/**
 * Deletes every item of `path` but the newest `keep`, whoever owns them, as the lists
 * family deletes one: the item and its owner's reverse entry, a delete event each,
 * and the list's newest index and usage counts once the batch is written.
 */
async function removeItems(path: string, keep: number, ctx: PlanContext): Promise<{ readonly plan: Plan; readonly deleted: number } | ApplyError> {
  const { db, states, index } = ctx;
  const found: Array<{ item: Item; bytes: number; user: string | undefined }> = [];
  for await (const [key, value] of db.iterator({ ...itemRange(path), limit: MAX_REMOVED + keep + 1 })) {
    const stored = decodeChargedItem(value);
    found.push({ item: withStoredSize({ index: decodeItemKey(key).index, ...stored.item }, value.byteLength), bytes: value.byteLength, user: stored.user });
  }
  if (found.length > MAX_REMOVED + keep) {
    return failure('QUOTA_EXCEEDED', `${path} holds more than ${MAX_REMOVED + keep} items: one write removes at most ${MAX_REMOVED}; delete the oldest first`);
  }
  const removed = found.slice(0, Math.max(0, found.length - keep));
  const ops: BatchOp[] = [];
  const events: ChangeEvent[] = [];
  for (const { item, bytes, user } of removed) {
    if (user !== undefined) states.users.change(user, -1, -bytes);
    ops.push({ type: 'del', key: itemKey(path, item.index) });
    if (item.owner !== null) ops.push({ type: 'del', key: clientDataKey(item.owner, path, item.index) });
    events.push({ index, type: 'delete', path, item });
  }
  const state = states.of(lists);
  const newest = found.length > removed.length ? found[found.length - 1]!.item.index : 0;
  const after = [
    () => {
      state.setLastIndex(path, newest);
      for (const { item, bytes } of removed) state.usage.removed(item.owner, path, bytes);
    },
  ];
  return { plan: { result: { ok: true, op: 'noop' }, ops, events, after }, deleted: removed.length };
}
