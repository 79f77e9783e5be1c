// The watches family's client ops: watch and unwatch, core ops the connection
// judges (permissions, path guards) before it calls them. A kit plugin.
import { VeraError, type ChangeEvent, type EmptyResult, type WatchRequest, type WatchResult } from '../../protocol/index.js';
import type { CoreCaller, FamilyHost, Plugin } from '../../kit/index.js';
import type { ApplySuccess } from '../../statemachine/types.js';
import { wireItems } from '../lists/public.js';
import { liveSessions } from '../sessions/public.js';
import type { WatchCommand } from './index.js';
import { watchesOf } from './queries.js';
import type { WatchesState } from './state.js';

type WatchesHost = FamilyHost<WatchesState, ApplySuccess, WatchCommand>;

async function watch(host: WatchesHost, req: WatchRequest, { session, frameBytes }: CoreCaller): Promise<WatchResult> {
  host.admitWrite(frameBytes);
  const r = await host.propose({ op: 'watch', session, path: req.path, prefix: req.prefix ?? false, quota: { watches: host.limits.watchesPerSession } });
  if (r.op !== 'watch') throw new VeraError('INTERNAL', `watch applied as ${r.op}`);
  const base: WatchResult = r.tooLarge === true ? { index: r.index, tooLarge: true } : r.items === undefined ? { index: r.index } : { index: r.index, items: wireItems(r.items) };
  if (req.since === undefined || req.since >= r.index) return base;
  // Each replayed event is judged by its own path, as a notification is.
  const principal = liveSessions(host.reader).get(session)?.principal ?? null;
  return { ...base, ...replay(host, req.path, req.prefix ?? false, req.since, r.index, (p) => host.access.mayWatch(principal, p)) };
}

/** The events of a watched path in (since, through] from this member's event log, if it holds them all and they fit one reply. */
function replay(host: WatchesHost, path: string, prefix: boolean, since: number, through: number, visible: (path: string) => boolean): { events: ChangeEvent[] } | { missed: true } {
  const events = host.member.eventsOf(path, prefix, since, through, host.limits.replyBytes, visible);
  return events === null ? { missed: true } : { events };
}

export const plugin: Plugin<Record<string, never>, WatchesState, ApplySuccess, WatchCommand> = {
  ops: {},
  needs: {},
  touchesNoLists: 'the watches family answers only core ops, whose paths the connection judges',
  createServer: (host) => ({
    handlers: {},
    coreOps: {
      watch: (req, caller) => watch(host, req, caller),
      unwatch: async (req, { session }): Promise<EmptyResult> => {
        await host.propose({ op: 'unwatch', session, path: req.path, prefix: req.prefix ?? false });
        return {};
      },
    },
    // After an auth change, the connection re-judges the watches its session holds.
    connection: { watchesOf: (session) => watchesOf(host.reader, session) },
  }),
};
