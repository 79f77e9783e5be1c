// The lists family's client ops: push, delete and ls. (A get is answered by the
// connection itself, which streams large lists at the pace the client reads.)
import { packedData, VeraError, type EmptyResult, type LsResult, type PushResult } from '../../protocol/index.js';
import { expectOk } from '../../server/front/context.js';
import { proposeTimed, type OpCall, type ServerPart } from '../../server/front/family-part.js';
import { wireItem } from './item.js';
import { childrenOf } from '../../server/guard/path-guard.js';
import { cluster } from '../cluster/index.js';
import { WATCH_IF_ROOM_SINCE } from './index.js';
import { userQuotaField } from '../quota/propose.js';

async function push({ fe, session, request: req, frameBytes }: OpCall<'push'>): Promise<PushResult> {
  fe.disk.admit(frameBytes);
  const { watchesPerSession, itemsPerSession, bytesPerSession, itemsPerList } = fe.limits;
  const outcome = await proposeTimed(fe, {
    op: 'push',
    session,
    path: req.path,
    // The bytes the data was measured in ride on into the entry, the stored item and the reply.
    data: packedData(req),
    persistent: req.persistent ?? false,
    watch: req.watch ?? true,
    ...(req.ifLastIndex === undefined ? {} : { ifLastIndex: req.ifLastIndex }),
    // Judged in apply, so concurrent pushes cannot together pass a limit.
    quota: { watches: watchesPerSession, items: itemsPerSession, bytes: bytesPerSession, listItems: itemsPerList },
    // The user's storage quota, judged in apply too.
    ...userQuotaField(fe),
    // A watch the client did not ask for never refuses its push (once every member applies that rule).
    ...(req.watch === undefined && fe.node.stateMachine.stateOf(cluster).active >= WATCH_IF_ROOM_SINCE ? { watchIfRoom: true as const } : {}),
  });
  const r = expectOk(outcome);
  if (r.op !== 'push') throw new VeraError('INTERNAL', `push applied as ${r.op}`);
  return r.unwatched === true ? { item: wireItem(r.item), watched: false } : { item: wireItem(r.item) };
}

async function del({ fe, session, request: req }: OpCall<'delete'>): Promise<EmptyResult> {
  expectOk(await proposeTimed(fe, { op: 'delete', session, path: req.path, index: req.index }));
  return {};
}

async function ls({ fe, request: req }: OpCall<'ls'>): Promise<LsResult> {
  await fe.node.linearizableBarrier(fe.readTimeoutMs);
  // Lists held outside the item bucket (hibernated ones) are children too; listing them thaws nothing.
  return childrenOf(fe, req.path);
}

export const server: ServerPart = { ops: { push, delete: del, ls } };
