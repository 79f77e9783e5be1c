// The watches family's client ops: watch and unwatch.
import { VeraError, type ChangeEvent, type EmptyResult, type WatchResult } from '../../protocol/index.js';
import type { FrontEnd } from '../../server/front/context.js';
import { expectOk } from '../../server/front/context.js';
import { proposeTimed, type OpCall, type ServerPart } from '../../server/front/family-part.js';
import { wireItems } from '../lists/item.js';
import { liveSessions } from '../sessions/queries.js';
import { watchesOf } from './queries.js';

async function watch({ fe, session, request: req, frameBytes }: OpCall<'watch'>): Promise<WatchResult> {
  fe.disk.admit(frameBytes);
  const r = expectOk(await proposeTimed(fe, { op: 'watch', session, path: req.path, prefix: req.prefix ?? false, quota: { watches: fe.limits.watchesPerSession } }));
  if (r.op !== 'watch') throw new VeraError('INTERNAL', `watch applied as ${r.op}`);
  const base: WatchResult = r.tooLarge === true ? { index: r.index, tooLarge: true } : r.items === undefined ? { index: r.index } : { index: r.index, items: wireItems(r.items) };
  if (req.since === undefined || req.since >= r.index) return base;
  // Each replayed event is judged by its own path, as a notification is.
  const principal = liveSessions(fe.node.stateMachine).get(session)?.principal ?? null;
  return { ...base, ...replay(fe, req.path, req.prefix ?? false, req.since, r.index, (p) => fe.guard.mayWatch(principal, p)) };
}

/** The events of a watched path in (since, through] from this member's event log, if it holds them all and they fit one reply. */
function replay(fe: FrontEnd, path: string, prefix: boolean, since: number, through: number, visible: (path: string) => boolean): { events: ChangeEvent[] } | { missed: true } {
  const events = fe.node.events.eventsOf(path, prefix, since, through, fe.limits.replyBytes, visible);
  return events === null ? { missed: true } : { events: events as ChangeEvent[] };
}

async function unwatch({ fe, session, request: req }: OpCall<'unwatch'>): Promise<EmptyResult> {
  expectOk(await proposeTimed(fe, { op: 'unwatch', session, path: req.path, prefix: req.prefix ?? false }));
  return {};
}

export const server: ServerPart = { ops: { watch, unwatch }, connection: { watchesOf: (fe, session) => watchesOf(fe.node.stateMachine, session) } };
