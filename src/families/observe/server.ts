// The observe family's ops, answered by the leader from what it holds in memory
// (and, for one session's items, a read of its reverse index).
import { clientDataRange, decodeClientDataKey } from '../lists/keys.js';
import type { FamilyRequest, FamilyResult } from '../../protocol/index.js';
import type { Need } from '../../server/guard/access.js';
import type { FrontEnd } from '../../server/front/context.js';
import { familyOps, type FamilyOpCall, type ServerPart } from '../../server/front/family-part.js';
import { cluster } from '../cluster/index.js';
import { sessions } from '../sessions/index.js';
import { OBSERVE_OPS, OBSERVE_PAGE, type ClusterView, type MemberView, type SessionView } from './wire.js';
import { watchesOf } from '../watches/queries.js';
import { lagOf } from '../lag/queries.js';
import { liveSessions } from '../sessions/queries.js';

function clusterView(fe: FrontEnd): ClusterView {
  const st = fe.node.status();
  const leading = st.role === 'leader';
  const view = (id: string, voter: boolean): MemberView => {
    const base = { id, voter, clientUrl: fe.clientUrl(id) };
    if (!leading) return base;
    if (id === st.id) return { ...base, match: st.lastIndex, lag: 0, reachable: true };
    const p = st.progress[id];
    const match = p?.match ?? 0;
    return { ...base, match, lag: Math.max(0, st.lastIndex - match), reachable: p?.recentActive ?? false };
  };
  return {
    member: st.id,
    role: st.role,
    term: st.term,
    leader: st.leader,
    commit: st.commit,
    applied: fe.node.appliedIndex,
    lastIndex: st.lastIndex,
    members: [...st.config.voters.map((id) => view(id, true)), ...st.config.learners.map((id) => view(id, false))],
    sessions: liveSessions(fe.node.stateMachine).size,
    commandVersion: fe.node.stateMachine.stateOf(cluster).active,
  };
}

function sessionView(fe: FrontEnd, session: string): SessionView | null {
  const sm = fe.node.stateMachine;
  const info = liveSessions(sm).get(session);
  if (info === undefined) return null;
  const acked = Math.max(fe.notifier.ackedIndex(session), lagOf(sm, session));
  const watches = watchesOf(sm, session).length;
  return {
    session,
    principal: info.principal ?? null,
    remote: info.remote,
    timeoutMs: info.timeoutMs,
    connected: fe.connections.has(session),
    watches,
    // A session that watches nothing is owed no notifications.
    lag: watches === 0 ? 0 : Math.max(0, fe.node.appliedIndex - acked),
  };
}

const handlers: Record<string, (call: FamilyOpCall) => Promise<FamilyResult>> = {
  'observe.cluster': async ({ fe }) => ({ ...clusterView(fe) }),
  'observe.sessions': async ({ fe, request: r }) => {
    const after = r.after as string | undefined;
    const limit = (r.limit as number | undefined) ?? OBSERVE_PAGE;
    // Session ids in order, from the first after `after`: one pass over the live sessions (at most --sessions-max).
    const ids: string[] = [];
    for (const id of fe.node.stateMachine.stateOf(sessions).sessions.keys()) if (after === undefined || id > after) ids.push(id);
    ids.sort();
    const page = ids.slice(0, limit);
    return { sessions: page.map((id) => sessionView(fe, id)!), total: liveSessions(fe.node.stateMachine).size, ...(ids.length > limit ? { next: page.at(-1) } : {}) };
  },
  'observe.session': async ({ fe, request: r, principal }) => {
    const session = r.session as string;
    const view = sessionView(fe, session);
    if (view === null) return { session, live: false };
    const limit = (r.limit as number | undefined) ?? OBSERVE_PAGE;
    // Read on 'cluster' shows that a session exists, not what it holds: each path is shown only to a
    // caller who may read it (a watched prefix: who may read something below it, as ls shows).
    const items = await fe.node.stateMachine.read('session items', async (db, snapshot) => {
      const out: Array<{ path: string; index: number }> = [];
      for await (const key of db.keys({ ...clientDataRange(session), limit, snapshot })) {
        const ref = decodeClientDataKey(key);
        if (fe.guard.mayRead(principal, ref.path)) out.push({ path: ref.path, index: ref.index });
      }
      return out;
    });
    const watchList = watchesOf(fe.node.stateMachine, session)
      .filter((w) => (w.prefix ? fe.guard.maySeeBelow(principal, w.path) : fe.guard.mayRead(principal, w.path)))
      .slice(0, limit)
      .map((w) => ({ path: w.path, prefix: w.prefix }));
    return { ...view, live: true, watchList, items };
  },
};

/** Views of the whole cluster: read on 'cluster'. */
const onCluster = (): readonly Need[] => [{ perm: 'read', resource: 'cluster' }];
const NEEDS: Record<string, (r: FamilyRequest) => readonly Need[]> = {
  'observe.cluster': onCluster,
  'observe.sessions': onCluster,
  'observe.session': onCluster,
};

export const server: ServerPart = { protocolOps: familyOps('observe', OBSERVE_OPS, handlers, NEEDS) };
