// Linearizability checker for histories of Vera list operations (history.ts).
//
// A history is linearizable if every operation can be given one instant between
// its invocation and its completion such that, taken in that order, the results
// are those of a single sequential list. Lists at different paths are independent
// objects, so the history is split by path and each list is checked on its own
// (linearizability is "local": Herlihy & Wing, "Linearizability: A Correctness
// Condition for Concurrent Objects", TOPLAS 1990; Porcupine calls this
// P-compositionality), which keeps each search small.
//
// The search per list is the Wing & Gong algorithm ("Testing and Verifying
// Concurrent Objects", JPDC 1993) with Lowe's memoisation ("Testing for
// Linearizability", Concurrency and Computation 2017), the same scheme Porcupine
// (github.com/anishathalye/porcupine) uses: walk the invocation/return events in
// time order; repeatedly pick an operation whose invocation comes before the first
// pending return, apply it to the model and remove it from the event list;
// backtrack when a return is reached whose operation could not be placed. A cache
// of visited configurations (set of placed operations as a bitset + canonical
// model state) stops the search from exploring the same configuration twice.
// Written for this project from the papers' descriptions. On top of it, reductions
// that hold for this model keep long, highly concurrent histories fast (each one is
// argued where it is applied): acknowledged pushes are placed in index order; a read
// that holds now is placed at once without branching; a delete waits for every get
// that shows its item; unknown outcomes stay out of the event list and are offered
// only where they could matter.
//
// The sequential model of one list: the items present, in index order, and the
// highest item index the list has ever had.
//   push(data[, ifLastIndex]) -> ok(item): appends; the item's index must exceed
//     every index the list ever had (Raft indexes only grow, and Vera applies in
//     index order); with ifLastIndex, the newest present item must have that index
//     (0 = empty list).
//   push(data, ifLastIndex) -> CONFLICT: the newest index differs from ifLastIndex.
//   delete(index) -> ok: the item is present and is removed; -> NOT_FOUND: absent.
//   get -> items: exactly the present items, in index order, with their data.
// Other definite failures (NOT_LEADER, BAD_REQUEST, ...) changed nothing and carry
// no information, so they are left out. Unknown outcomes (timeouts, lost
// connections) may take effect at any instant after their invocation, or never.
//
// WORKLOAD ASSUMPTIONS (the harness must respect them, or verdicts mean nothing):
//  - Every push on a list carries data no other push on that list carries
//    (enforced: a HistoryError otherwise). A push with an unknown outcome has no
//    known index; if an ok get later shows an item with its data, that item is it,
//    and its index is taken from the get.
//  - ifLastIndex and delete targets are indexes the client has observed (0 counts).
//    A push with unknown outcome that no get ever shows is modelled as an item
//    whose index nobody knows: it never matches an ifLastIndex or a delete.
//  - Items are persistent (or their sessions never expire during the run): a
//    session expiry deletes items without any operation in the history.

import { HistoryError, type HistoryItem, type HistoryOp } from './history.js';

export { HistoryError } from './history.js';

export type Verdict = 'linearizable' | 'not-linearizable' | 'gave-up';

export interface CheckOptions {
  /** Search steps allowed per list before the verdict is 'gave-up' (default 2,000,000). */
  readonly maxStepsPerPath?: number;
  /** Look for the smallest failing prefix to explain a failure (default true; costs a few extra searches). */
  readonly explain?: boolean;
}

export interface PathResult {
  readonly path: string;
  readonly verdict: Verdict;
  /** Operations the model had to place (after leaving out those that carry no information). */
  readonly ops: number;
  /** Search steps taken (all searches for this path). */
  readonly steps: number;
  /** Why the list is not linearizable (or why the check gave up); '' when it is linearizable. */
  readonly explanation: string;
  /** History ids of the operations the explanation names: the one completing the failing prefix and those that could not be placed. */
  readonly involved: readonly number[];
}

export interface CheckResult {
  /** The worst verdict over all lists: not-linearizable, then gave-up, then linearizable. */
  readonly verdict: Verdict;
  readonly linearizable: boolean;
  readonly paths: readonly PathResult[];
  /** The explanations of every list that is not linearizable or was not decided; '' when all are linearizable. */
  readonly explanation: string;
}

const DEFAULT_MAX_STEPS = 2_000_000;

/** Checks a whole history, list by list. Throws HistoryError for malformed input. */
export function checkHistory(history: readonly HistoryOp[], options: CheckOptions = {}): CheckResult {
  const byPath = new Map<string, HistoryOp[]>();
  const seenIds = new Set<number>();
  for (const op of history) {
    if (seenIds.has(op.id)) throw new HistoryError(`op id ${op.id} occurs twice in the history`);
    seenIds.add(op.id);
    let ops = byPath.get(op.path);
    if (ops === undefined) byPath.set(op.path, (ops = []));
    ops.push(op);
  }
  const paths = [...byPath.keys()].sort().map((path) => checkList(path, byPath.get(path)!, options));
  const verdict: Verdict = paths.some((p) => p.verdict === 'not-linearizable')
    ? 'not-linearizable'
    : paths.some((p) => p.verdict === 'gave-up')
      ? 'gave-up'
      : 'linearizable';
  const explanation = paths
    .filter((p) => p.verdict !== 'linearizable')
    .map((p) => p.explanation)
    .join('\n\n');
  return { verdict, linearizable: verdict === 'linearizable', paths, explanation };
}

/** Checks the operations of one list (all must have this path). */
export function checkList(path: string, history: readonly HistoryOp[], options: CheckOptions = {}): PathResult {
  const maxSteps = options.maxStepsPerPath ?? DEFAULT_MAX_STEPS;
  if (!Number.isSafeInteger(maxSteps) || maxSteps < 1) throw new HistoryError('maxStepsPerPath must be a positive integer');
  const prepared = prepareList(path, history);
  if (prepared.anomaly !== null) {
    return { path, verdict: 'not-linearizable', ops: prepared.ops.length, steps: 0, explanation: `List ${path} is not linearizable: ${prepared.anomaly.text}`, involved: prepared.anomaly.involved };
  }
  const full = search(prepared.ops, maxSteps);
  if (full.verdict === 'linearizable') return { path, verdict: 'linearizable', ops: prepared.ops.length, steps: full.steps, explanation: '', involved: [] };
  if (full.verdict === 'gave-up') {
    return {
      path,
      verdict: 'gave-up',
      ops: prepared.ops.length,
      steps: full.steps,
      explanation: `List ${path}: gave up after ${full.steps} search steps over ${prepared.ops.length} operations (raise maxStepsPerPath, or shorten the run).`,
      involved: [],
    };
  }
  let steps = full.steps;
  let failing: { ops: ModelOp[]; result: SearchResult; cut: ModelOp | null } = { ops: prepared.ops, result: full, cut: null };
  if (options.explain ?? true) {
    // Prefixes are smaller than the whole, so a budget in proportion to the full search keeps explaining cheap.
    const smallest = smallestFailingPrefix(prepared.ops, Math.min(maxSteps, Math.max(100_000, 4 * full.steps)));
    steps += smallest.steps;
    if (smallest.found !== null) failing = smallest.found;
  }
  const { text, involved } = explainFailure(path, prepared.ops.length, failing, prepared.pushByData);
  return { path, verdict: 'not-linearizable', ops: prepared.ops.length, steps, explanation: text, involved };
}

// ---------------------------------------------------------------------------- preparing a list

/** What a successful or refused operation told us; `maybe` = outcome unknown (may take effect later, or never). */
type Expect = 'ok' | 'conflict' | 'notFound' | 'maybe';

interface ModelOp {
  /** Position in the list being searched: its bit in the bitset. */
  readonly n: number;
  readonly source: HistoryOp;
  readonly call: number;
  /** Infinity when the outcome is unknown: it never forces a placement. */
  readonly ret: number;
  readonly kind: HistoryOp['op'];
  readonly expect: Expect;
  readonly ifLastIndex: number | undefined;
  /** push: the item's index, null when nobody ever saw it; delete: the target. */
  readonly index: number | null;
  /** push: the canonical text of its data. */
  readonly dataKey: string;
  /** push: how the item shows in a list view. */
  readonly itemView: string;
  /** get: the list view it returned. */
  readonly getView: string;
  /** get: the indexes, item views and data it showed. */
  readonly shows: ReadonlySet<number>;
  readonly getViews: ReadonlySet<string>;
  readonly showsData: ReadonlySet<string>;
}

const NOTHING: ReadonlySet<never> = new Set();

interface Anomaly {
  readonly text: string;
  readonly involved: readonly number[];
}

interface PreparedList {
  readonly ops: ModelOp[];
  /** A server answer that no order could explain, found before searching. */
  readonly anomaly: Anomaly | null;
  /** Every push of the list by its canonical data, to name where an item in a get came from. */
  readonly pushByData: ReadonlyMap<string, HistoryOp>;
}

function prepareList(path: string, history: readonly HistoryOp[]): PreparedList {
  for (const op of history) validateOp(path, op);

  // Unique data per push is what lets an unknown push be recognised in a get.
  const pushByData = new Map<string, HistoryOp>();
  for (const op of history) {
    if (op.op !== 'push') continue;
    const key = canonical(op.args.data);
    const other = pushByData.get(key);
    if (other !== undefined) {
      throw new HistoryError(`ops #${other.id} and #${op.id} push the same data ${short(key)} to ${path}; the checker needs unique data per push`);
    }
    pushByData.set(key, op);
  }

  // Indexes of pushes whose outcome is unknown, learned from gets that show their data.
  const seenIndex = new Map<string, number>();
  for (const op of history) {
    if (op.op !== 'get' || op.outcome.kind !== 'ok') continue;
    for (const item of op.outcome.value) {
      const key = canonical(item.data);
      if (!seenIndex.has(key)) seenIndex.set(key, item.index);
    }
  }

  let anomaly: Anomaly | null = null;
  const drafts: Omit<ModelOp, 'n'>[] = [];
  for (const op of history) {
    const call = op.invokedAt;
    const ret = op.outcome.kind === 'unknown' || op.completedAt === null ? Infinity : op.completedAt;
    const base = { source: op, call, ret, kind: op.op, ifLastIndex: undefined, index: null, dataKey: '', itemView: '', getView: '', shows: NOTHING, getViews: NOTHING, showsData: NOTHING };
    if (op.op === 'push') {
      const dataKey = canonical(op.args.data);
      const ifLastIndex = op.args.ifLastIndex;
      if (op.outcome.kind === 'ok') {
        const item = op.outcome.value;
        if (canonical(item.data) !== dataKey && anomaly === null) {
          anomaly = { text: `${describeOp(op)} returned an item whose data differs from the data pushed (${short(dataKey)})`, involved: [op.id] };
        }
        drafts.push({ ...base, expect: 'ok', ifLastIndex, index: item.index, dataKey, itemView: itemView(item.index, dataKey) });
      } else if (op.outcome.kind === 'fail') {
        // Only a compare-and-set's CONFLICT says something about the list.
        if (op.outcome.code === 'CONFLICT' && ifLastIndex !== undefined) drafts.push({ ...base, expect: 'conflict', ifLastIndex, dataKey });
      } else {
        const index = seenIndex.get(dataKey) ?? null;
        drafts.push({ ...base, expect: 'maybe', ifLastIndex, index, dataKey, itemView: itemView(index, dataKey) });
      }
    } else if (op.op === 'delete') {
      const index = op.args.index;
      if (op.outcome.kind === 'ok') drafts.push({ ...base, expect: 'ok', index });
      else if (op.outcome.kind === 'fail') {
        if (op.outcome.code === 'NOT_FOUND') drafts.push({ ...base, expect: 'notFound', index });
      } else drafts.push({ ...base, expect: 'maybe', index });
    } else if (op.outcome.kind === 'ok') {
      // A get that failed or timed out changed nothing and told us nothing.
      const items = op.outcome.value.map((i) => ({ index: i.index, dataKey: canonical(i.data) }));
      const views = items.map((i) => itemView(i.index, i.dataKey));
      drafts.push({
        ...base,
        expect: 'ok',
        getView: views.join('\n'),
        getViews: new Set(views),
        shows: new Set(items.map((i) => i.index)),
        showsData: new Set(items.map((i) => i.dataKey)),
      });
    }
  }
  return { ops: finalize(drafts), anomaly, pushByData };
}

/** Tightens what the ops say before searching, then numbers them. */
function finalize(drafts: Omit<ModelOp, 'n'>[]): ModelOp[] {
  return numbered(delayUnknownDeletes(dropUselessPhantoms(promoteSeenPushes(drafts))));
}

/**
 * An unknown delete, if it happened, came after every get that shows its item
 * (items never come back), so it counts as invoked no earlier than the latest of
 * those gets. This keeps the search from trying deletes that plainly did not happen.
 */
function delayUnknownDeletes(drafts: Omit<ModelOp, 'n'>[]): Omit<ModelOp, 'n'>[] {
  const lastShownAt = new Map<number, number>();
  for (const o of drafts) {
    if (o.kind !== 'get') continue;
    for (const index of o.shows) lastShownAt.set(index, Math.max(lastShownAt.get(index) ?? -Infinity, o.call));
  }
  return drafts.map((o) => {
    const shownAt = o.kind === 'delete' && o.expect === 'maybe' && o.index !== null ? lastShownAt.get(o.index) : undefined;
    return shownAt !== undefined && shownAt > o.call ? { ...o, call: shownAt } : o;
  });
}

/**
 * A push with unknown outcome whose item some get shows certainly happened, before
 * that get: it is searched like an acknowledged push that completed when the
 * earliest such get did (or at its own invocation, if that get ended earlier, which
 * no order can satisfy). Required ops keep the search from trying to leave them out.
 */
function promoteSeenPushes(drafts: Omit<ModelOp, 'n'>[]): Omit<ModelOp, 'n'>[] {
  const shownBy = new Map<string, number>();
  for (const o of drafts) {
    if (o.kind !== 'get') continue;
    for (const d of o.showsData) shownBy.set(d, Math.min(shownBy.get(d) ?? Infinity, o.ret));
  }
  return drafts.map((o) => {
    const seenAt = shownBy.get(o.dataKey);
    if (o.kind !== 'push' || o.expect !== 'maybe' || o.index === null || seenAt === undefined) return o;
    return { ...o, expect: 'ok', ret: Math.max(o.call, seenAt) };
  });
}

/**
 * An unknown push nobody ever saw can only matter by making a later compare-and-set
 * fail (it becomes the newest item, with an index no one knows); when no CONFLICT
 * could be ordered after it, placing it can never help, so it is left out.
 */
function dropUselessPhantoms(ops: Omit<ModelOp, 'n'>[]): Omit<ModelOp, 'n'>[] {
  // A CONFLICT still running when the push was invoked may come after it too.
  const lastConflictEnd = ops.reduce((latest, o) => (o.expect === 'conflict' ? Math.max(latest, o.ret) : latest), -Infinity);
  return ops.filter((o) => !(isUnseenPush(o) && o.call > lastConflictEnd));
}

/** A push with unknown outcome whose item no get ever showed: if it happened, its index is unknown. */
function isUnseenPush(op: Pick<ModelOp, 'kind' | 'expect' | 'index'>): boolean {
  return op.kind === 'push' && op.expect === 'maybe' && op.index === null;
}

function numbered(ops: Omit<ModelOp, 'n'>[]): ModelOp[] {
  return ops.map((o, n) => ({ ...o, n }));
}

function validateOp(path: string, op: HistoryOp): void {
  const where = `op #${String(op.id)} on ${path}`;
  if (op.path !== path) throw new HistoryError(`${where} has path ${op.path}`);
  if (!Number.isFinite(op.invokedAt)) throw new HistoryError(`${where}: invokedAt must be a finite number`);
  if (op.completedAt !== null && (!Number.isFinite(op.completedAt) || op.completedAt < op.invokedAt)) {
    throw new HistoryError(`${where}: completedAt must be a finite number not before invokedAt`);
  }
  const outcome = op.outcome as { kind?: unknown; code?: unknown };
  if (outcome.kind !== 'ok' && outcome.kind !== 'fail' && outcome.kind !== 'unknown') throw new HistoryError(`${where}: unknown outcome kind ${String(outcome.kind)}`);
  if (outcome.kind !== 'unknown' && op.completedAt === null) throw new HistoryError(`${where}: an ${outcome.kind} outcome needs completedAt`);
  if (outcome.kind === 'fail' && (typeof outcome.code !== 'string' || outcome.code === '')) throw new HistoryError(`${where}: a failure needs an error code`);
  switch (op.op) {
    case 'push':
      if (op.args.ifLastIndex !== undefined && !isIndex(op.args.ifLastIndex, 0)) throw new HistoryError(`${where}: ifLastIndex must be a non-negative integer`);
      if (op.outcome.kind === 'ok') checkItem(where, op.outcome.value);
      break;
    case 'delete':
      if (!isIndex(op.args.index, 1)) throw new HistoryError(`${where}: the index to delete must be a positive integer`);
      break;
    case 'get':
      if (op.outcome.kind === 'ok') {
        if (!Array.isArray(op.outcome.value)) throw new HistoryError(`${where}: an ok get needs the list's items`);
        for (const item of op.outcome.value) checkItem(where, item);
      }
      break;
    default:
      throw new HistoryError(`${where}: unknown op ${String((op as { op: unknown }).op)}`);
  }
}

function checkItem(where: string, item: HistoryItem): void {
  if (typeof item !== 'object' || item === null || !isIndex(item.index, 1)) throw new HistoryError(`${where}: an item needs a positive integer index`);
}

function isIndex(v: unknown, min: number): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= min;
}

function itemView(index: number | null, dataKey: string): string {
  return `${index === null ? '?' : String(index)}=${dataKey}`;
}

/**
 * A canonical text for a data value: objects with sorted keys, so two equal values
 * always give the same text. JSON escapes newlines, so '\n' can separate items.
 */
function canonical(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? String(value) : `#${String(value)}`;
    case 'boolean':
      return String(value);
    case 'bigint':
      return `${String(value)}n`;
    case 'undefined':
      return 'undefined';
    default:
      break;
  }
  if (value instanceof Uint8Array) return `bytes:${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}`;
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object') {
    const record = value as Record<string, unknown>;
    return `{${Object.keys(record)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(record[k])}`)
      .join(',')}}`;
  }
  throw new HistoryError(`cannot compare data of type ${typeof value}`);
}

// ---------------------------------------------------------------------------- the model

/** One state of the list model; immutable, views computed on demand. */
class ListState {
  private viewText: string | null = null;
  private viewSet: Set<string> | null = null;
  readonly key: string;

  constructor(
    /** The pushes whose items are present, in index order. */
    readonly items: readonly ModelOp[],
    readonly maxIndex: number,
  ) {
    this.key = `${maxIndex}:${items.map((o) => o.n).join(',')}`;
  }

  /** The newest index, 0 when empty, NaN when the newest item's index is unknown (it matches nothing). */
  newest(): number {
    const last = this.items[this.items.length - 1];
    return last === undefined ? 0 : (last.index ?? NaN);
  }

  view(): string {
    this.viewText ??= this.items.map((o) => o.itemView).join('\n');
    return this.viewText;
  }

  hasView(view: string): boolean {
    this.viewSet ??= new Set(this.items.map((o) => o.itemView));
    return this.viewSet.has(view);
  }

  positionOf(index: number | null): number {
    return this.items.findIndex((o) => o.index === index);
  }
}

const EMPTY = new ListState([], 0);

/** The states `op` may lead to from `state` when it takes effect there (empty: it cannot go here). */
function successors(state: ListState, op: ModelOp): ListState[] {
  switch (op.kind) {
    case 'push': {
      const casHolds = op.ifLastIndex === undefined || state.newest() === op.ifLastIndex;
      if (op.expect === 'conflict') return casHolds ? [] : [state];
      // An unknown push that would fail its compare-and-set has no effect: the same as never happening.
      const fresh = op.index === null || op.index > state.maxIndex;
      if (!casHolds || !fresh) return [];
      return [new ListState([...state.items, op], op.index === null ? state.maxIndex : op.index)];
    }
    case 'delete': {
      const at = state.positionOf(op.index);
      if (op.expect === 'notFound') return at < 0 ? [state] : [];
      if (at < 0) return [];
      return [new ListState([...state.items.slice(0, at), ...state.items.slice(at + 1)], state.maxIndex)];
    }
    case 'get':
      return state.view() === op.getView ? [state] : [];
  }
}

/** Why `op` cannot go next in `state` while the ops in `waiting` are not placed, in words. */
function whyNot(state: ListState, op: ModelOp, waiting: readonly ModelOp[], pushByData: ReadonlyMap<string, HistoryOp>): string {
  if (isAppend(op)) {
    const lower = waiting.find((o) => isAppend(o) && o.index! < op.index!);
    if (lower !== undefined) {
      const late = lower.call > op.ret ? ', yet it was invoked after this push completed' : '';
      return `#${lower.source.id} pushed the lower index ${String(lower.index)}, so it must take effect first${late}`;
    }
  }
  if (isRemoval(op)) {
    const shows = waiting.find((o) => o.kind === 'get' && o.shows.has(op.index!));
    if (shows !== undefined) return `#${shows.source.id} shows item ${String(op.index)}, so it must come first`;
  }
  if (successors(state, op).length > 0) return 'fits here, but every order continuing from it failed';
  switch (op.kind) {
    case 'push': {
      const newest = state.newest();
      const newestText = Number.isNaN(newest) ? 'an item nobody saw' : String(newest);
      if (op.expect === 'conflict') return `CONFLICT, but the newest index is ${newestText}, equal to ifLastIndex`;
      if (op.ifLastIndex !== undefined && newest !== op.ifLastIndex) return `ifLastIndex ${op.ifLastIndex} does not match the newest index, ${newestText}`;
      return `index ${String(op.index)} is not above ${state.maxIndex}, the highest index the list already had`;
    }
    case 'delete':
      return op.expect === 'notFound' ? `NOT_FOUND, but item ${String(op.index)} is present` : `item ${String(op.index)} is not present`;
    case 'get': {
      const have = state.view().split('\n').filter((v) => v !== '');
      const saw = op.getView.split('\n').filter((v) => v !== '');
      const haveSet = new Set(have);
      const sawSet = new Set(saw);
      const missing = have.filter((v) => !sawSet.has(v));
      const extra = saw.filter((v) => !haveSet.has(v));
      const parts = [`the model holds ${listText(have)}`];
      if (missing.length > 0) parts.push(`missing ${listText(missing)}`);
      if (extra.length > 0) parts.push(`unexpected ${listText(extra)}`);
      for (const view of extra) {
        const pusher = pushByData.get(view.slice(view.indexOf('=') + 1));
        if (pusher === undefined) parts.push(`no push on this list carries the data of ${short(view)}`);
        else if (pusher.outcome.kind === 'fail') parts.push(`${short(view)} was pushed by #${pusher.id}, which failed with ${pusher.outcome.code}`);
        else if (op.source.completedAt !== null && pusher.invokedAt > op.source.completedAt) parts.push(`${short(view)} was pushed by #${pusher.id}, invoked after this get completed`);
      }
      if (missing.length === 0 && extra.length === 0) parts.push('same items in a different order');
      return parts.join('; ');
    }
  }
}

// ---------------------------------------------------------------------------- the search

/** An op that changes nothing when it holds. */
function isRead(op: ModelOp): boolean {
  return op.kind === 'get' || op.expect === 'conflict' || op.expect === 'notFound';
}

/** A delete that removes its item if it takes effect. */
function isRemoval(op: ModelOp): boolean {
  return op.kind === 'delete' && op.expect !== 'notFound';
}

/** A push known to have appended its item (its index is known). */
function isAppend(op: ModelOp): boolean {
  return op.kind === 'push' && op.expect === 'ok';
}

/**
 * Whether removing item `index` (present in `state`) can be part of what makes `op`
 * valid right away, when unknown deletes could still remove the items in
 * `removable`. An unknown delete is only ever placed right before such an op: any
 * valid order can be rewritten that way by moving each unknown delete forward to
 * just before the first op that needs its item gone (or dropping it when none
 * does), since the ops it moves past do not care whether the item is there; the
 * deletes stacked before that op must then make it valid. Without this, the search
 * would try every unknown delete at every level it backtracks through.
 */
function removalCouldEnable(op: ModelOp, index: number, state: ListState, removable: ReadonlySet<number>): boolean {
  switch (op.kind) {
    case 'get':
      // After the removals the list must be exactly what the get saw.
      return (
        !op.shows.has(index) &&
        [...op.getViews].every((v) => state.hasView(v)) &&
        state.items.every((o) => (o.index !== null && op.shows.has(o.index)) || (o.index !== null && removable.has(o.index)))
      );
    case 'delete':
      return op.expect === 'notFound' && op.index === index;
    case 'push': {
      const last = op.ifLastIndex;
      if (last === undefined) return false;
      // A CONFLICT needs the newest index to differ from ifLastIndex.
      if (op.expect === 'conflict') return index === last;
      // A win needs ifLastIndex newest: present (or 0), everything newer removable.
      const at = last === 0 ? -1 : state.positionOf(last);
      if (index <= last || (last !== 0 && at < 0)) return false;
      return state.items.slice(at + 1).every((o) => o.index !== null && removable.has(o.index));
    }
  }
}

interface Deepest {
  /** The longest sequence of placements the search achieved, in order. */
  readonly order: readonly ModelOp[];
  readonly state: ListState;
}

interface SearchResult {
  readonly verdict: Verdict;
  readonly steps: number;
  readonly deepest: Deepest | null;
}

interface Frame {
  readonly op: ModelOp;
  readonly before: ListState;
  readonly candidates: readonly ModelOp[];
  readonly position: number;
}

/** Fixed-size bitset over op numbers whose contents make a compact string key. */
class OpSet {
  private readonly words: Uint16Array;

  constructor(size: number) {
    this.words = new Uint16Array(Math.ceil(size / 16) || 1);
  }

  set(n: number): void {
    this.words[n >> 4]! |= 1 << (n & 15);
  }

  has(n: number): boolean {
    return (this.words[n >> 4]! & (1 << (n & 15))) !== 0;
  }

  clear(n: number): void {
    this.words[n >> 4]! &= ~(1 << (n & 15));
  }

  key(): string {
    // Chunked so a long set never exceeds the engine's argument limit.
    let out = '';
    for (let i = 0; i < this.words.length; i += 4096) out += String.fromCharCode(...this.words.subarray(i, i + 4096));
    return out;
  }
}

const NIL = -1;

/**
 * The Wing & Gong / Lowe search over one list's operations. Event e = 2n is op n's
 * invocation, 2n + 1 its return; a doubly linked list holds the events not yet
 * placed, in time order, so placing an op unlinks two events in O(1) and
 * backtracking relinks them (Knuth's dancing links).
 */
function search(ops: readonly ModelOp[], maxSteps: number): SearchResult {
  // Only ops with a known outcome are in the event list: they must be placed by
  // their return. Unknown outcomes may be placed any time after their invocation,
  // or never, so they are offered separately.
  const required = ops.filter((o) => o.expect !== 'maybe');
  const optional = ops.filter((o) => o.expect === 'maybe').sort((a, b) => a.call - b.call || a.n - b.n);
  const head = 2 * ops.length;
  const next = new Int32Array(head + 1).fill(NIL);
  const prev = new Int32Array(head + 1).fill(NIL);
  const time = (e: number): number => (e & 1 ? ops[e >> 1]!.ret : ops[e >> 1]!.call);
  // Invocations before returns at equal times: touching operations count as concurrent.
  const events = required.flatMap((o) => [2 * o.n, 2 * o.n + 1]).sort((a, b) => time(a) - time(b) || (a & 1) - (b & 1) || a - b);
  let last = head;
  for (const e of events) {
    next[last] = e;
    prev[e] = last;
    last = e;
  }
  const unlink = (e: number): void => {
    next[prev[e]!] = next[e]!;
    if (next[e] !== NIL) prev[next[e]!] = prev[e]!;
  };
  const relink = (e: number): void => {
    next[prev[e]!] = e;
    if (next[e] !== NIL) prev[next[e]!] = e;
  };

  /**
   * Ops that may go next in `state`: required ops invoked before the first return
   * still waiting, then the unknown-outcome ops invoked by then that could matter
   * here. Null when every required op is placed.
   */
  const frontier = (state: ListState): ModelOp[] | null => {
    const known: ModelOp[] = [];
    let due = Infinity;
    for (let e = next[head]!; e !== NIL; e = next[e]!) {
      if (e & 1) {
        due = ops[e >> 1]!.ret;
        break;
      }
      known.push(ops[e >> 1]!);
    }
    if (known.length === 0) return null;
    // A read (get, CONFLICT, NOT_FOUND) that holds now can go first in some valid
    // order if any exists: it changes nothing, and nothing waiting must precede it.
    // So the search commits to it instead of branching over what else could go first.
    for (const op of known) if (isRead(op) && successors(state, op).length > 0) return [op];
    const available: ModelOp[] = [];
    for (const op of optional) {
      if (op.call > due) break;
      if (!placed.has(op.n)) available.push(op);
    }
    const deciders = [...known, ...available.filter((o) => o.kind === 'push' && o.ifLastIndex !== undefined)];
    const deletable = available.filter((o) => o.kind === 'delete' && state.positionOf(o.index) >= 0);
    const removable = new Set(deletable.map((o) => o.index!));
    return [
      // Acknowledged pushes take effect in index order, so only the lowest one waiting may go.
      // An item never comes back, so its delete must wait for every get that shows it.
      ...known.filter((op) => (isAppend(op) ? op.index === pushOrder[placedPushes] : !isRemoval(op) || !shownByUnplacedGet(op.index!))),
      ...available.filter((op) => {
        if (isUnseenPush(op)) return unplacedGets === 0 && unplacedConflicts > 0;
        // An unknown push with a known index (only in prefixes) must come before the next acknowledged one.
        if (op.kind === 'push') return op.index! < (pushOrder[placedPushes] ?? Infinity);
        if (op.kind === 'delete') return removable.has(op.index!) && !shownByUnplacedGet(op.index!) && deciders.some((f) => removalCouldEnable(f, op.index!, state, removable));
        return true;
      }),
    ];
  };

  const placed = new OpSet(ops.length);
  const visited = new Set<string>();
  const stack: Frame[] = [];
  let state = EMPTY;
  let steps = 0;
  // A placed item nobody saw makes every later get fail (gets never show it), so it may
  // only go once no get is left to place, and only helps while a CONFLICT is left.
  let unplacedGets = ops.filter((o) => o.kind === 'get').length;
  let unplacedConflicts = ops.filter((o) => o.expect === 'conflict').length;
  // The indexes of acknowledged pushes in order, and how many of them are placed.
  const pushOrder = required.filter(isAppend).map((o) => o.index!).sort((a, b) => a - b);
  let placedPushes = 0;
  // How many unplaced gets show each index.
  const showing = new Map<number, number>();
  for (const op of required) if (op.kind === 'get') for (const index of op.shows) showing.set(index, (showing.get(index) ?? 0) + 1);
  const shownByUnplacedGet = (index: number): boolean => (showing.get(index) ?? 0) > 0;
  const count = (op: ModelOp, delta: number): void => {
    if (op.kind === 'get') {
      unplacedGets += delta;
      for (const index of op.shows) showing.set(index, showing.get(index)! + delta);
    } else if (op.expect === 'conflict') unplacedConflicts += delta;
    else if (isAppend(op)) placedPushes -= delta;
  };
  let candidates: readonly ModelOp[] | null = frontier(state);
  let position = 0;
  let deepest: Deepest | null = candidates === null ? null : { order: [], state };

  while (candidates !== null) {
    if (++steps > maxSteps) return { verdict: 'gave-up', steps, deepest };
    const op = candidates[position];
    if (op === undefined) {
      // Nothing can go next here: undo the latest placement and try its alternatives.
      const frame = stack.pop();
      if (frame === undefined) return { verdict: 'not-linearizable', steps, deepest };
      state = frame.before;
      count(frame.op, +1);
      placed.clear(frame.op.n);
      if (frame.op.expect !== 'maybe') {
        relink(2 * frame.op.n + 1);
        relink(2 * frame.op.n);
      }
      candidates = frame.candidates;
      position = frame.position; // the same op again: the cache skips the successor already tried
      continue;
    }
    let chosen: ListState | null = null;
    placed.set(op.n);
    const placedKey = placed.key();
    for (const after of successors(state, op)) {
      const key = `${placedKey}|${after.key}`;
      if (!visited.has(key)) {
        visited.add(key);
        chosen = after;
        break;
      }
    }
    if (chosen === null) {
      placed.clear(op.n);
      position++;
      continue;
    }
    stack.push({ op, before: state, candidates, position });
    count(op, -1);
    state = chosen;
    if (op.expect !== 'maybe') {
      unlink(2 * op.n);
      unlink(2 * op.n + 1);
    }
    candidates = frontier(state);
    position = 0;
    if (candidates !== null && (deepest === null || stack.length > deepest.order.length)) {
      deepest = { order: stack.map((f) => f.op), state };
    }
  }
  return { verdict: 'linearizable', steps, deepest: null };
}

// ---------------------------------------------------------------------------- explaining a failure

/**
 * The history as it stood at time `cut`: operations invoked by then, with those
 * still running at `cut` turned into unknown outcomes (a running op may or may
 * not have taken effect yet). Indexes learned from the whole history are kept;
 * they are facts about the run.
 */
function prefixAt(ops: readonly ModelOp[], cut: number): ModelOp[] {
  const kept: Omit<ModelOp, 'n'>[] = [];
  for (const op of ops) {
    if (op.call > cut) continue;
    if (op.ret <= cut) kept.push(op);
    else if (op.kind === 'get' || op.expect === 'conflict' || op.expect === 'notFound') continue; // no effect
    else kept.push({ ...op, expect: 'maybe', ret: Infinity });
  }
  return finalize(kept);
}

/**
 * Linearizability is prefix-closed: if the history up to some completion cannot be
 * ordered, neither can the whole. A binary search over completion times finds the
 * earliest one after which no order exists; the operation completing there is the
 * one whose result cannot be explained.
 */
function smallestFailingPrefix(
  ops: readonly ModelOp[],
  maxSteps: number,
): { found: { ops: ModelOp[]; result: SearchResult; cut: ModelOp } | null; steps: number } {
  const completing = ops.filter((o) => o.ret !== Infinity).sort((a, b) => a.ret - b.ret || a.n - b.n);
  let steps = 0;
  let found: { ops: ModelOp[]; result: SearchResult; cut: ModelOp } | null = null;
  let lo = 0;
  let hi = completing.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const cut = completing[mid]!;
    const prefix = prefixAt(ops, cut.ret);
    const result = search(prefix, maxSteps);
    steps += result.steps;
    if (result.verdict === 'not-linearizable') {
      found = { ops: prefix, result, cut };
      hi = mid - 1;
    } else lo = mid + 1;
  }
  return { found, steps };
}

function explainFailure(
  path: string,
  totalOps: number,
  failing: { ops: readonly ModelOp[]; result: SearchResult; cut: ModelOp | null },
  pushByData: ReadonlyMap<string, HistoryOp>,
): { text: string; involved: number[] } {
  const lines = [`List ${path} is not linearizable.`];
  const involved = new Set<number>();
  if (failing.cut !== null) {
    involved.add(failing.cut.source.id);
    lines.push(
      `Smallest failing prefix: the ${failing.ops.length} of ${totalOps} operations invoked by the completion of ${describeOp(failing.cut.source)} (ops still running then count as unknown).`,
    );
  }
  const deepest = failing.result.deepest;
  if (deepest !== null) {
    lines.push(`Longest valid order found (${deepest.order.length} of ${failing.ops.length} operations${deepest.order.length > 30 ? ', last 30 shown' : ''}):`);
    for (const op of deepest.order.slice(-30)) {
      const happened = op.source.outcome.kind === 'unknown' ? ` (taken to have happened${op.kind === 'push' && op.index !== null ? ` as index ${op.index}` : ''})` : '';
      lines.push(`  ${describeOp(op.source)}${happened}`);
    }
    lines.push(`Model list after it: ${listText(deepest.state.view().split('\n').filter((v) => v !== ''))} (highest index ever ${deepest.state.maxIndex}).`);
    // Every op with a known outcome invoked before the first completion still waiting could have gone next.
    const placed = new Set(deepest.order);
    const waiting = failing.ops.filter((o) => o.expect !== 'maybe' && !placed.has(o));
    const due = waiting.reduce<ModelOp | null>((first, o) => (first === null || o.ret < first.ret ? o : first), null);
    if (due !== null) {
      lines.push(`None of these can go next, and #${due.source.id} has completed by then, so one of them must:`);
      for (const op of waiting.filter((o) => o.call <= due.ret).sort((a, b) => a.call - b.call)) {
        involved.add(op.source.id);
        lines.push(`  ${describeOp(op.source)}: ${whyNot(deepest.state, op, waiting, pushByData)}`);
      }
    }
  }
  return { text: lines.join('\n'), involved: [...involved] };
}

/** One operation in a line: `#7 c2 push "x" ifLastIndex=3 -> ok index 9 [t 1.20..3.40]`. */
export function describeOp(op: HistoryOp): string {
  let what: string;
  let result: string;
  switch (op.op) {
    case 'push':
      what = `push ${short(canonical(op.args.data))}${op.args.ifLastIndex === undefined ? '' : ` ifLastIndex=${op.args.ifLastIndex}`}`;
      result = op.outcome.kind === 'ok' ? `ok index ${op.outcome.value.index}` : '';
      break;
    case 'delete':
      what = `delete ${op.args.index}`;
      result = op.outcome.kind === 'ok' ? 'ok' : '';
      break;
    case 'get':
      what = 'get';
      result = op.outcome.kind === 'ok' ? listText(op.outcome.value.map((i) => itemView(i.index, canonical(i.data)))) : '';
      break;
  }
  if (op.outcome.kind === 'fail') result = op.outcome.code;
  if (op.outcome.kind === 'unknown') result = 'unknown';
  const end = op.completedAt === null ? '?' : op.completedAt.toFixed(2);
  return `#${op.id} ${op.client} ${what} -> ${result} [t ${op.invokedAt.toFixed(2)}..${end}]`;
}

function listText(views: readonly string[]): string {
  const shown = views.length > 12 ? [...views.slice(0, 5), `... ${views.length - 10} more ...`, ...views.slice(-5)] : views;
  return `[${shown.map(short).join(', ')}]`;
}

function short(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
