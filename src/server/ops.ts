// The data operations of protocol v1, once a session is established on the
// leader. Each takes a validated request and returns the result fields of the
// reply, or throws a VeraError. Writes go through Raft; reads are served locally
// after a ReadIndex barrier unless the client asked for a stale read.

import type { Item as StoredItem } from '../statemachine/types.js';
import { expectOk, type FrontEnd } from './context.js';
import { VeraError, type DeleteRequest, type EmptyResult, type GetRequest, type GetResult, type Item, type LsRequest, type LsResult, type PushRequest, type PushResult, type UnwatchRequest, type WatchRequest, type WatchResult } from '../protocol/index.js';

/** Stored items hold whatever value the client sent, which the protocol layer validated as JSON-compatible. */
function wireItem(item: StoredItem): Item {
  return item as Item;
}

function wireItems(items: readonly StoredItem[]): Item[] {
  return items as Item[];
}

async function proposeTimed(fe: FrontEnd, command: Parameters<FrontEnd['node']['propose']>[0]) {
  const started = performance.now();
  fe.metrics.proposals.inc({ op: command.op });
  const outcome = await fe.node.propose(command);
  fe.metrics.proposeLatency.observe((performance.now() - started) / 1000);
  return outcome;
}

/** `frameBytes` is the size of the request's frame, charged against the disk's free space. */
export async function push(fe: FrontEnd, session: string, req: PushRequest, frameBytes: number): Promise<PushResult> {
  fe.disk.admit(frameBytes);
  const watch = req.watch ?? true;
  const { watchesPerSession, itemsPerSession, bytesPerSession, itemsPerList } = fe.limits;
  const outcome = await proposeTimed(fe, {
    op: 'push',
    session,
    path: req.path,
    data: req.data,
    persistent: req.persistent ?? false,
    watch,
    ...(req.ifLastIndex === undefined ? {} : { ifLastIndex: req.ifLastIndex }),
    // Judged in apply, so concurrent pushes cannot together pass a limit.
    quota: { watches: watchesPerSession, items: itemsPerSession, bytes: bytesPerSession, listItems: itemsPerList },
  });
  const r = expectOk(outcome);
  if (r.op !== 'push') throw new VeraError('INTERNAL', `push applied as ${r.op}`);
  return { item: wireItem(r.item) };
}

/** A linearizable get waits for its read index; a stale one reads what this member has applied. */
export async function readBarrier(fe: FrontEnd, req: GetRequest): Promise<void> {
  if ((req.consistency ?? 'linearizable') === 'linearizable') await fe.node.linearizableBarrier(fe.readTimeoutMs);
}

/** The whole list in one result, or TOO_LARGE once its items pass `replyBytes` (read no further). */
export async function readWholeList(fe: FrontEnd, path: string): Promise<GetResult> {
  const view = await fe.node.stateMachine.readListWithin(path, fe.limits.replyBytes);
  if (view === null) {
    throw new VeraError('TOO_LARGE', `the list ${path} holds more than ${fe.limits.replyBytes} bytes of items, more than one reply carries; read it with a streamed get (stream: true)`);
  }
  return { index: view.index, items: wireItems(view.items) };
}

/**
 * The list from one read, in pages of at most `replyBytes`: every page but the last
 * goes to `sendPage` (with `more: true`), which may wait for the client to read;
 * the last is returned.
 */
export async function streamList(fe: FrontEnd, path: string, sendPage: (page: GetResult) => Promise<void>): Promise<GetResult> {
  let last: GetResult | null = null;
  await fe.node.stateMachine.readListPages(path, fe.limits.replyBytes, async (page) => {
    const result = { index: page.index, items: wireItems(page.items) };
    if (page.more) await sendPage({ ...result, more: true });
    else last = result;
  });
  return last!;
}

export async function ls(fe: FrontEnd, req: LsRequest): Promise<LsResult> {
  await fe.node.linearizableBarrier(fe.readTimeoutMs);
  const view = await fe.node.stateMachine.children(req.path);
  return { index: view.index, children: [...view.children] };
}

export async function del(fe: FrontEnd, session: string, req: DeleteRequest): Promise<EmptyResult> {
  expectOk(await proposeTimed(fe, { op: 'delete', session, path: req.path, index: req.index }));
  return {};
}

export async function watch(fe: FrontEnd, session: string, req: WatchRequest, frameBytes: number): Promise<WatchResult> {
  const prefix = req.prefix ?? false;
  fe.disk.admit(frameBytes);
  const r = expectOk(await proposeTimed(fe, { op: 'watch', session, path: req.path, prefix, quota: { watches: fe.limits.watchesPerSession } }));
  if (r.op !== 'watch') throw new VeraError('INTERNAL', `watch applied as ${r.op}`);
  if (r.tooLarge === true) return { index: r.index, tooLarge: true };
  return r.items === undefined ? { index: r.index } : { index: r.index, items: wireItems(r.items) };
}

export async function unwatch(fe: FrontEnd, session: string, req: UnwatchRequest): Promise<EmptyResult> {
  expectOk(await proposeTimed(fe, { op: 'unwatch', session, path: req.path, prefix: req.prefix ?? false }));
  return {};
}
