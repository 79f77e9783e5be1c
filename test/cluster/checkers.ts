// The five checkers of a fault-injection run, and the evidence they read.
//   1. linearizability of the recorded history, per list (linearizability.ts);
//   2. no acknowledged write lost: every acknowledged persistent push that no
//      delete may have removed is on every node, with its index and data;
//   3. watch streams: each watcher's events, replayed over what `watch` returned,
//      give the final list; no duplicate or backwards step within a connection;
//      every acknowledged change it should have seen is there; watchers of one
//      list saw the same changes in the same order;
//   4. sessions of killed clients expire, their ephemeral items gone on every
//      node, within the session timeout plus one election timeout (plus slack)
//      of the kill or of the last election, whichever came later;
//   5. convergence: every node reports the same applied index and the same
//      items for every list touched.
// Each checker is a pure function returning a CheckReport; a report with no
// problems passes. The collecting helpers at the end read the evidence from a
// cluster with bounded waits.

import { checkHistory } from './linearizability.js';
import type { HistoryItem, HistoryOp } from './history.js';
import { pollUntil } from '../support/poll.js';
import { ELECTION_TIMEOUT_MAX_MS, type ChaosCluster, type ListView } from './harness.js';
import type { ObservedEvent, ObservedResync, WatchStart } from './workload.js';

export interface CheckReport {
  readonly name: string;
  /** What went wrong; empty when the check passed. */
  readonly problems: readonly string[];
  /** How many things were checked (operations, items, events...), for the run summary. */
  readonly checked: number;
  /** Limits of what the check could see, worth saying in a report. */
  readonly notes: readonly string[];
}

export const passed = (r: CheckReport): boolean => r.problems.length === 0;

/** At most this many problems are listed per checker; the rest are counted. */
const MAX_PROBLEMS = 20;

function report(name: string, problems: string[], checked: number, notes: string[] = []): CheckReport {
  const shown = problems.length > MAX_PROBLEMS ? [...problems.slice(0, MAX_PROBLEMS), `... and ${problems.length - MAX_PROBLEMS} more`] : problems;
  return { name, problems: shown, checked, notes };
}

/** A stable text form of a datum (object keys sorted), for comparing data. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

const itemText = (i: HistoryItem): string => `#${i.index} ${canonical(i.data)}${i.owner ? ` (owner ${i.owner})` : ''}`;
const listText = (items: readonly HistoryItem[]): string => `[${items.map(itemText).join(', ')}]`;
const sameItems = (a: readonly HistoryItem[], b: readonly HistoryItem[]): boolean =>
  a.length === b.length && a.every((x, k) => x.index === b[k]!.index && canonical(x.data) === canonical(b[k]!.data) && (x.owner ?? null) === (b[k]!.owner ?? null));

// ------------------------------------------------------------------ 1. linearizability

export function checkLinearizable(history: readonly HistoryOp[], maxStepsPerPath?: number): CheckReport {
  const result = checkHistory(history, maxStepsPerPath === undefined ? {} : { maxStepsPerPath });
  const problems = result.paths.filter((p) => p.verdict !== 'linearizable').map((p) => `${p.verdict}: ${p.explanation}`);
  const unknown = history.filter((op) => op.outcome.kind === 'unknown').length;
  return report('linearizable', problems, history.length, [`${result.paths.length} lists, ${unknown} operations with unknown outcome`]);
}

// ------------------------------------------------------------------ 2. no acknowledged write lost

/** What one node holds, read once every node applied the same index. */
export interface NodeSnapshot {
  readonly node: string;
  readonly applied: number;
  readonly sessions: number;
  readonly lists: ReadonlyMap<string, ListView>;
}

/**
 * Every acknowledged push that no delete (acknowledged or of unknown outcome) may
 * have removed must be on every node with its index and data; an acknowledged
 * delete's target must be gone everywhere; and nothing may appear that no push
 * of the history carried.
 */
export function checkNoLostWrites(history: readonly HistoryOp[], nodes: readonly NodeSnapshot[]): CheckReport {
  const problems: string[] = [];
  let checked = 0;
  const byPath = groupByPath(history);
  for (const [path, ops] of byPath) {
    const maybeDeleted = new Set<number>();
    const deleted = new Set<number>();
    const pushedData = new Map<string, HistoryOp>();
    for (const op of ops) {
      if (op.op === 'delete' && op.outcome.kind !== 'fail') maybeDeleted.add(op.args.index);
      if (op.op === 'delete' && op.outcome.kind === 'ok') deleted.add(op.args.index);
      if (op.op === 'push') pushedData.set(canonical(op.args.data), op);
    }
    const acked = ops.flatMap((op) => (op.op === 'push' && op.outcome.kind === 'ok' ? [{ op, item: op.outcome.value }] : []));
    for (const node of nodes) {
      const view = node.lists.get(path);
      if (view === undefined) {
        problems.push(`${node.node}: list ${path} was not read`);
        continue;
      }
      const present = new Map(view.items.map((i) => [i.index, i]));
      for (const { op, item } of acked) {
        if (maybeDeleted.has(item.index)) continue;
        checked++;
        const found = present.get(item.index);
        if (found === undefined) problems.push(`${node.node}: acknowledged push #${op.id} (${itemText(item)}, by ${op.client}) is missing from ${path}`);
        else if (canonical(found.data) !== canonical(item.data)) problems.push(`${node.node}: ${path} item #${item.index} holds ${canonical(found.data)}, acknowledged push #${op.id} wrote ${canonical(item.data)}`);
      }
      for (const index of deleted) {
        if (present.has(index)) problems.push(`${node.node}: ${path} still holds #${index}, whose delete was acknowledged`);
      }
      for (const item of view.items) {
        const source = pushedData.get(canonical(item.data));
        if (source === undefined) problems.push(`${node.node}: ${path} holds ${itemText(item)}, which no push of the history wrote`);
        else if (source.op === 'push' && source.outcome.kind === 'ok' && source.outcome.value.index !== item.index) {
          problems.push(`${node.node}: ${path} holds ${canonical(item.data)} at #${item.index}, but push #${source.id} was acknowledged at #${source.outcome.value.index}`);
        }
      }
    }
  }
  return report('no acknowledged write lost', problems, checked);
}

// ------------------------------------------------------------------ 3. watch streams

/** A watcher's record, as Watcher (workload.ts) keeps it. */
export interface WatcherEvidence {
  readonly name: string;
  readonly starts: ReadonlyMap<string, WatchStart>;
  readonly events: readonly ObservedEvent[];
  readonly resyncs: readonly ObservedResync[];
  /** Why the session ended before the run did, or null. */
  readonly ended: string | null;
  /**
   * Set when the watcher holds one prefix watch (and nothing else): then each of its
   * resyncs is a walk of every non-empty list below the prefix, so a watched list it
   * leaves out was empty.
   */
  readonly prefix?: string;
}

/** The resyncs that speak for `path`: those naming it, or every resync of a prefix watch above it. */
function resyncsOf(w: WatcherEvidence, path: string): ObservedResync[] {
  if (w.prefix !== undefined && (w.prefix === '/' || path.startsWith(`${w.prefix}/`))) return [...w.resyncs];
  return w.resyncs.filter((r) => r.lists.some((l) => l.path === path));
}

const eventKey = (e: { type: string; item: HistoryItem }): string => `${e.type}#${e.item.index}`;

/** What one watcher saw of one list: its changes in order (resends across connections dropped) and its final view. */
interface Replay {
  readonly changes: ReadonlyArray<{ readonly key: string; readonly index: number }>;
  readonly view: readonly HistoryItem[];
  /** Highest index a resync of this list reported, or 0. */
  readonly resyncedTo: number;
  readonly pushed: ReadonlySet<number>;
  readonly deleted: ReadonlySet<number>;
}

/**
 * `finalLists`: each watched list as it ended (read after all writes stopped).
 * The client library drops events it already had when a session resumes on a new
 * connection, so a resend across connections is invisible here; a duplicate
 * within one connection is not dropped by it and is caught.
 */
export function checkWatchStreams(
  watchers: readonly WatcherEvidence[],
  history: readonly HistoryOp[],
  finalLists: ReadonlyMap<string, ListView>,
  ephemeral: ReadonlyMap<string, readonly HistoryItem[]> = new Map(),
): CheckReport {
  const problems: string[] = eventSourceProblems(watchers, history, ephemeral);
  const notes: string[] = [];
  let checked = 0;
  const byPath = groupByPath(history);
  const replays = new Map<string, Array<{ watcher: string; start: number; replay: Replay }>>();

  for (const w of watchers) {
    const connections = new Set(w.events.map((e) => e.connection)).size;
    notes.push(`watcher ${w.name}: ${w.events.length} events over ${connections} connection(s)`);
    if (w.ended !== null) notes.push(`watcher ${w.name} ended early (${w.ended}); its final view was not compared`);
    for (const [path, start] of w.starts) {
      const events = w.events.filter((e) => e.path === path);
      const resyncs = resyncsOf(w, path);
      checked += events.length;
      const where = `watcher ${w.name} on ${path}`;

      // Per connection: each event once, indexes never going back.
      const perConnection = new Map<number, { keys: Set<string>; last: number }>();
      for (const e of events) {
        let c = perConnection.get(e.connection);
        if (c === undefined) perConnection.set(e.connection, (c = { keys: new Set(), last: 0 }));
        const key = eventKey(e);
        if (c.keys.has(key)) problems.push(`${where}: ${e.type} of #${e.item.index} (entry ${e.index}) arrived twice on connection ${e.connection}`);
        if (e.index < c.last) problems.push(`${where}: entry ${e.index} arrived after entry ${c.last} on connection ${e.connection}`);
        if (e.index <= start.index) problems.push(`${where}: event at entry ${e.index}, but the watch started after entry ${start.index}`);
        c.keys.add(key);
        c.last = Math.max(c.last, e.index);
      }

      const replay = replayWatch(where, start, events, resyncs, path, problems);
      const ops = byPath.get(path) ?? [];
      checkEventsAgainstHistory(where, start, replay, ops, w.ended === null, problems);
      if (w.ended === null) {
        const final = finalLists.get(path);
        if (final === undefined) problems.push(`${where}: the final list was not read`);
        else if (!sameItems(replay.view, final.items)) {
          problems.push(`${where}: replaying its events gives ${listText(replay.view)}, but the list ended as ${listText(final.items)}`);
        }
        let list = replays.get(path);
        if (list === undefined) replays.set(path, (list = []));
        list.push({ watcher: w.name, start: start.index, replay });
      }
      if (resyncs.length > 0) notes.push(`${where}: ${resyncs.length} resync(s)`);
    }
  }

  // Every watcher of a list must have seen the same changes in the same order, from where both were watching.
  for (const [path, list] of replays) {
    for (let a = 0; a < list.length; a++) {
      for (let b = a + 1; b < list.length; b++) {
        const x = list[a]!;
        const y = list[b]!;
        if (x.replay.resyncedTo > 0 || y.replay.resyncedTo > 0) continue;
        const from = Math.max(x.start, y.start);
        const xs = x.replay.changes.filter((c) => c.index > from).map((c) => `${c.key}@${c.index}`);
        const ys = y.replay.changes.filter((c) => c.index > from).map((c) => `${c.key}@${c.index}`);
        const differs = xs.findIndex((k, i) => k !== ys[i]);
        if (differs >= 0 || xs.length !== ys.length) {
          const at = differs >= 0 ? differs : Math.min(xs.length, ys.length);
          problems.push(`${path}: watchers ${x.watcher} and ${y.watcher} saw different changes after entry ${from}: change ${at} is ${xs[at] ?? '(none)'} vs ${ys[at] ?? '(none)'}`);
        }
      }
    }
  }
  return report('watch streams', problems, checked, notes);
}

/**
 * The watcher's current view of `path`: what its watch returned, with every event
 * and resync since applied. Lets a run wait until a watcher has caught up.
 */
export function replayedView(w: WatcherEvidence, path: string): readonly HistoryItem[] | null {
  const start = w.starts.get(path);
  if (start === undefined) return null;
  const events = w.events.filter((e) => e.path === path);
  return replayWatch('', start, events, resyncsOf(w, path), path, []).view;
}

/** True when the watcher's view of every list equals `lists`. */
export function watcherCaughtUp(w: WatcherEvidence, lists: ReadonlyMap<string, ListView>): boolean {
  for (const path of w.starts.keys()) {
    const view = replayedView(w, path);
    const final = lists.get(path);
    if (view === null || final === undefined || !sameItems(view, final.items)) return false;
  }
  return true;
}

function replayWatch(where: string, start: WatchStart, events: readonly ObservedEvent[], resyncs: readonly ObservedResync[], path: string, problems: string[]): Replay {
  type Step = { seq: number; event?: ObservedEvent; resync?: { index: number; items: readonly HistoryItem[] } };
  const steps: Step[] = [
    ...events.map((event) => ({ seq: event.seq, event })),
    ...resyncs.map((r) => {
      // Left out of a prefix watch's walk: empty, as of the walk (all its lists are read at one index).
      const list = r.lists.find((l) => l.path === path) ?? { index: Math.max(0, ...r.lists.map((l) => l.index)), items: [] };
      return { seq: r.seq, resync: { index: list.index, items: list.items.map((i) => ({ index: i.index, data: i.data, owner: i.owner })) } };
    }),
  ].sort((p, q) => p.seq - q.seq);
  let view: HistoryItem[] = [...start.items];
  const seen = new Set<string>();
  const changes: Array<{ key: string; index: number }> = [];
  const pushed = new Set<number>();
  const deleted = new Set<number>();
  let resyncedTo = 0;
  let lastIndex = start.index;
  for (const step of steps) {
    if (step.resync !== undefined) {
      view = [...step.resync.items];
      resyncedTo = Math.max(resyncedTo, step.resync.index);
      lastIndex = Math.max(lastIndex, step.resync.index);
      continue;
    }
    const e = step.event!;
    const key = eventKey(e);
    // Resent across connections (the client library drops these, but be sure): count once.
    if (seen.has(key)) continue;
    seen.add(key);
    if (e.index < lastIndex) problems.push(`${where}: entry ${e.index} was delivered after entry ${lastIndex}`);
    lastIndex = Math.max(lastIndex, e.index);
    changes.push({ key, index: e.index });
    if (e.type === 'push') {
      pushed.add(e.item.index);
      if (view.some((i) => i.index === e.item.index)) problems.push(`${where}: push of #${e.item.index} at entry ${e.index}, but the item was already there`);
      else view = [...view, e.item].sort((p, q) => p.index - q.index);
    } else {
      deleted.add(e.item.index);
      if (!view.some((i) => i.index === e.item.index)) problems.push(`${where}: delete of #${e.item.index} at entry ${e.index}, but the item was not there`);
      view = view.filter((i) => i.index !== e.item.index);
    }
  }
  return { changes, view, resyncedTo, pushed, deleted };
}

/** Events must match the pushes that made them, and (for a watcher that lasted) every acknowledged change must be there. */
function checkEventsAgainstHistory(where: string, start: WatchStart, replay: Replay, ops: readonly HistoryOp[], complete: boolean, problems: string[]): void {
  const pushedItems = new Set(start.items.map((i) => i.index));
  for (const index of replay.pushed) pushedItems.add(index);
  if (!complete) return;
  for (const op of ops) {
    if (op.outcome.kind !== 'ok') continue;
    if (op.op === 'push') {
      const item = op.outcome.value;
      if (item.index <= start.index || item.index <= replay.resyncedTo) continue;
      if (!replay.pushed.has(item.index)) problems.push(`${where}: no push event for acknowledged push #${op.id} (${itemText(item)})`);
    } else if (op.op === 'delete') {
      // Only an item this watcher knew of can have its delete checked; a delete a resync covered is not an event.
      if (!pushedItems.has(op.args.index) || replay.resyncedTo > 0) continue;
      if (!replay.deleted.has(op.args.index)) problems.push(`${where}: no delete event for acknowledged delete #${op.id} of #${op.args.index}`);
    }
  }
}

/** Push events must carry an item some push wrote (the history's, or a killed owner's ephemeral one), at the index it was acknowledged at. */
function eventSourceProblems(watchers: readonly WatcherEvidence[], history: readonly HistoryOp[], ephemeral: ReadonlyMap<string, readonly HistoryItem[]>): string[] {
  const problems: string[] = [];
  const byPath = groupByPath(history);
  for (const w of watchers) {
    for (const e of w.events) {
      if (e.type !== 'push') continue;
      const eph = ephemeral.get(e.path);
      if (eph !== undefined) {
        if (!eph.some((i) => i.index === e.item.index && canonical(i.data) === canonical(e.item.data))) problems.push(`watcher ${w.name}: push event ${itemText(e.item)} on ${e.path} matches no ephemeral item pushed there`);
        continue;
      }
      const source = (byPath.get(e.path) ?? []).find((op) => op.op === 'push' && canonical(op.args.data) === canonical(e.item.data));
      if (source === undefined) problems.push(`watcher ${w.name}: push event ${itemText(e.item)} on ${e.path} matches no push of the history`);
      else if (source.op === 'push' && source.outcome.kind === 'ok' && source.outcome.value.index !== e.item.index) {
        problems.push(`watcher ${w.name}: push event ${itemText(e.item)} on ${e.path}, but push #${source.id} was acknowledged at #${source.outcome.value.index}`);
      }
    }
  }
  return problems;
}

// ------------------------------------------------------------------ 4. session expiry

/** When a killed client's ephemeral items were first seen gone. */
export interface ExpiryObservation {
  readonly session: string;
  readonly path: string;
  readonly items: readonly HistoryItem[];
  readonly timeoutMs: number;
  /** Date.now() of the SIGKILL. */
  readonly killedAt: number;
  /** Date.now() of the first read (on any node) that showed the items gone; null if never within the wait. */
  readonly goneAt: number | null;
  /** Date.now() of the last leader election before goneAt (a new leader restarts session clocks), or 0. */
  readonly lastElectionAt: number;
}

export function checkSessionExpiry(observations: readonly ExpiryObservation[], nodes: readonly NodeSnapshot[], slackMs: number): CheckReport {
  const problems: string[] = [];
  const notes: string[] = [];
  let checked = 0;
  for (const o of observations) {
    checked++;
    const from = Math.max(o.killedAt, o.lastElectionAt);
    const bound = o.timeoutMs + ELECTION_TIMEOUT_MAX_MS + slackMs;
    if (o.goneAt === null) problems.push(`session ${o.session} (killed at ${iso(o.killedAt)}): its items on ${o.path} were never seen gone`);
    else {
      const took = o.goneAt - from;
      notes.push(`session ${o.session}: items gone ${o.goneAt - o.killedAt} ms after the kill (${took} ms after ${o.lastElectionAt > o.killedAt ? 'the last election' : 'the kill'}; bound ${bound} ms)`);
      if (took > bound) problems.push(`session ${o.session}: items on ${o.path} gone only ${took} ms after ${o.lastElectionAt > o.killedAt ? 'the last election' : 'the kill'}; bound is timeout ${o.timeoutMs} + election ${ELECTION_TIMEOUT_MAX_MS} + slack ${slackMs} = ${bound} ms`);
    }
    for (const node of nodes) {
      const view = node.lists.get(o.path);
      if (view === undefined) continue;
      const left = view.items.filter((i) => i.owner === o.session || o.items.some((x) => x.index === i.index));
      if (left.length > 0) problems.push(`${node.node}: ${o.path} still holds ${listText(left)} of expired session ${o.session}`);
    }
  }
  return report('sessions of killed clients expire', problems, checked, notes);
}

// ------------------------------------------------------------------ 5. convergence

export function checkConvergence(nodes: readonly NodeSnapshot[], paths: readonly string[]): CheckReport {
  const problems: string[] = [];
  const first = nodes[0];
  if (first === undefined) return report('convergence', ['no node was read'], 0);
  for (const n of nodes.slice(1)) {
    if (n.applied !== first.applied) problems.push(`${n.node} applied ${n.applied}, ${first.node} applied ${first.applied}`);
    if (n.sessions !== first.sessions) problems.push(`${n.node} has ${n.sessions} sessions, ${first.node} has ${first.sessions}`);
  }
  let checked = 0;
  for (const path of paths) {
    const reference = first.lists.get(path);
    for (const n of nodes) {
      const view = n.lists.get(path);
      checked++;
      if (view === undefined || reference === undefined) {
        problems.push(`${n.node}: ${path} was not read`);
        continue;
      }
      if (view.index !== reference.index) problems.push(`${path}: ${n.node} answered as of ${view.index}, ${first.node} as of ${reference.index}`);
      if (!sameItems(view.items, reference.items)) problems.push(`${path}: ${n.node} holds ${listText(view.items)}, ${first.node} holds ${listText(reference.items)}`);
    }
  }
  return report('convergence', problems, checked);
}

// ------------------------------------------------------------------ collecting evidence

/**
 * Waits until the members `among` applied the same index and are quiet, then reads
 * every path on each of them; retries until all reads reflect one applied index.
 * Returns what it read last even when the wait runs out (the convergence check
 * then says how the nodes differ).
 */
export async function snapshotNodes(cluster: ChaosCluster, among: readonly number[], paths: readonly string[], timeoutMs = 30_000): Promise<NodeSnapshot[]> {
  let last: NodeSnapshot[] = [];
  const read = async (): Promise<NodeSnapshot[]> =>
    Promise.all(
      among.map(async (i) => {
        const status = await cluster.status(i);
        const lists = new Map<string, ListView>();
        for (const path of paths) lists.set(path, await cluster.readLocal(i, path));
        return { node: cluster.member(i).id, applied: status.applied, sessions: status.sessions, lists };
      }),
    );
  try {
    await cluster.waitForQuiet({ among, timeoutMs });
    await pollUntil('one applied index in every read', async () => {
      last = await read();
      const applied = last[0]?.applied;
      const consistent = last.every((n) => n.applied === applied && [...n.lists.values()].every((v) => v.index === applied));
      return consistent ? true : undefined;
    }, timeoutMs, 100);
  } catch {
    if (last.length === 0) last = await read().catch(() => []);
  }
  return last;
}

/**
 * Polls stale reads of `path` on every live member until one that has applied past
 * the items shows none of them (only a committed expiry removes them), or until
 * `timeoutMs`. Resolves with Date.now() at that read, or null.
 */
export async function observeGone(cluster: ChaosCluster, path: string, items: readonly HistoryItem[], timeoutMs: number): Promise<number | null> {
  const newest = Math.max(...items.map((i) => i.index));
  try {
    return await pollUntil(`the items on ${path} to be gone`, async () => {
      const reads = await Promise.all(cluster.live.map((i) => cluster.readLocal(i, path).catch(() => null)));
      const gone = reads.some((v) => v !== null && v.index >= newest && !v.items.some((x) => items.some((i) => i.index === x.index)));
      return gone ? Date.now() : undefined;
    }, timeoutMs, 50);
  } catch {
    return null;
  }
}

function groupByPath(history: readonly HistoryOp[]): Map<string, HistoryOp[]> {
  const out = new Map<string, HistoryOp[]>();
  for (const op of history) {
    let list = out.get(op.path);
    if (list === undefined) out.set(op.path, (list = []));
    list.push(op);
  }
  return out;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** A readable summary of reports: one line per checker, then each problem. */
export function formatReports(reports: readonly CheckReport[]): string {
  const lines: string[] = [];
  for (const r of reports) {
    lines.push(`${passed(r) ? 'ok  ' : 'FAIL'} ${r.name} (${r.checked} checked)`);
    for (const p of r.problems) lines.push(`       - ${p}`);
  }
  return lines.join('\n');
}
