// The observe family's ops, on the kit: answered by the member from what it holds
// in memory (and, for one session's items, a read of its reverse index).
import { clientDataRange, decodeClientDataKey } from '../lists/public.js';
import type { FamilyHost, Plugin, PluginNeed, PluginServer } from '../../kit/index.js';
import { liveSessions, sessions } from '../sessions/public.js';
import { OBSERVE_PAGE, OBSERVE_SCHEMAS, type ClusterView, type MemberView, type SessionView } from './wire.js';
import { watchesOf } from '../watches/public.js';
import { lagOf } from '../lag/public.js';

type Ops = typeof OBSERVE_SCHEMAS;

function createServer(host: FamilyHost<null>): PluginServer<Ops> {
  const clusterView = (): ClusterView => {
    const st = host.member.status();
    const leading = st.role === 'leader';
    const view = (id: string, voter: boolean): MemberView => {
      const base = { id, voter, clientUrl: host.member.clientUrl(id) };
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
      applied: st.applied,
      lastIndex: st.lastIndex,
      members: [...st.voters.map((id) => view(id, true)), ...st.learners.map((id) => view(id, false))],
      sessions: liveSessions(host.reader).size,
      commandVersion: host.commandVersion(),
    };
  };

  /** `applied`: this member's applied index, which the session's acknowledgements are behind. */
  const sessionView = (session: string, applied: number): SessionView | null => {
    const info = liveSessions(host.reader).get(session);
    if (info === undefined) return null;
    const acked = Math.max(host.member.ackedIndex(session), lagOf(host.reader, session));
    const watches = watchesOf(host.reader, session).length;
    return {
      session,
      principal: info.principal ?? null,
      remote: info.remote,
      timeoutMs: info.timeoutMs,
      member: info.member ?? null,
      connected: host.member.connected(session),
      watches,
      // A session that watches nothing is owed no notifications.
      lag: watches === 0 ? 0 : Math.max(0, applied - acked),
    };
  };

  return {
    handlers: {
      cluster: async () => clusterView(),
      sessions: async ({ after, limit = OBSERVE_PAGE }) => {
        // Session ids in order, from the first after `after`: one pass over the live sessions (at most --sessions-max).
        const ids: string[] = [];
        for (const id of host.reader.stateOf(sessions).sessions.keys()) if (after === undefined || id > after) ids.push(id);
        ids.sort();
        const page = ids.slice(0, limit);
        const applied = host.member.status().applied;
        return { sessions: page.map((id) => sessionView(id, applied)!), total: liveSessions(host.reader).size, ...(ids.length > limit ? { next: page.at(-1)! } : {}) };
      },
      session: async ({ session, limit = OBSERVE_PAGE }, { user }) => {
        const view = sessionView(session, host.member.status().applied);
        if (view === null) return { session, live: false };
        // Read on 'cluster' shows that a session exists, not what it holds: each path is shown only to a
        // caller who may read it (a watched prefix: who may read something below it, as ls shows).
        const items = await host.reader.read('session items', async (db, snapshot) => {
          const out: Array<{ path: string; index: number }> = [];
          for await (const key of db.keys({ ...clientDataRange(session), limit, snapshot })) {
            const ref = decodeClientDataKey(key);
            if (host.access.mayRead(user, ref.path)) out.push({ path: ref.path, index: ref.index });
          }
          return out;
        });
        const watchList = watchesOf(host.reader, session)
          .filter((w) => (w.prefix ? host.access.maySeeBelow(user, w.path) : host.access.mayRead(user, w.path)))
          .slice(0, limit)
          .map((w) => ({ path: w.path, prefix: w.prefix }));
        return { ...view, live: true, watchList, items };
      },
    },
  };
}

/** Views of the whole cluster: read on 'cluster'. */
const onCluster = (): readonly PluginNeed[] => [{ perm: 'read', resource: 'cluster' }];

export const plugin: Plugin<Ops, null> = {
  ops: OBSERVE_SCHEMAS,
  needs: { cluster: onCluster, sessions: onCluster, session: onCluster },
  touchesNoLists: 'views of members and sessions; a session\'s items are named from its reverse index, no list is read',
  createServer,
};
