// The watches family's client ops: watch and unwatch.
import { VeraError, type EmptyResult, type WatchResult } from '../../protocol/index.js';
import { expectOk } from '../../server/context.js';
import { proposeTimed, type OpCall, type ServerPart } from '../../server/family-part.js';
import { wireItems } from '../../server/ops.js';

async function watch({ fe, session, request: req, frameBytes }: OpCall<'watch'>): Promise<WatchResult> {
  fe.disk.admit(frameBytes);
  const r = expectOk(await proposeTimed(fe, { op: 'watch', session, path: req.path, prefix: req.prefix ?? false, quota: { watches: fe.limits.watchesPerSession } }));
  if (r.op !== 'watch') throw new VeraError('INTERNAL', `watch applied as ${r.op}`);
  if (r.tooLarge === true) return { index: r.index, tooLarge: true };
  return r.items === undefined ? { index: r.index } : { index: r.index, items: wireItems(r.items) };
}

async function unwatch({ fe, session, request: req }: OpCall<'unwatch'>): Promise<EmptyResult> {
  expectOk(await proposeTimed(fe, { op: 'unwatch', session, path: req.path, prefix: req.prefix ?? false }));
  return {};
}

export const server: ServerPart = { ops: { watch, unwatch } };
