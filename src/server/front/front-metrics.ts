// The server's metrics, read at scrape time from whatever exists by then: the member
// (from its start), the attached connections, and the front end's notifier (once built).
import { liveSessions } from '../../families/sessions/queries.js';
import { watchesOf } from '../../families/watches/queries.js';
import { ServerMetrics } from '../node/server-metrics.js';
import type { VeraNode } from '../node/vera-node.js';
import type { AttachedConnection, FrontEnd } from './context.js';

export function serverMetrics(node: () => VeraNode | undefined, front: () => FrontEnd | undefined, connections: ReadonlyMap<string, AttachedConnection>): ServerMetrics {
  return new ServerMetrics({
    raft: () => {
      const n = node();
      if (n === undefined) return { term: 0, commit: 0, applied: 0, lastIndex: 0, isLeader: false };
      const st = n.status();
      return { term: st.term, commit: st.commit, applied: n.appliedIndex, lastIndex: st.lastIndex, isLeader: st.role === 'leader' };
    },
    peerLag: () => {
      const st = node()?.status();
      if (st === undefined || st.role !== 'leader') return [];
      return Object.entries(st.progress)
        .filter(([id]) => id !== st.id)
        .map(([id, p]) => [id, Math.max(0, st.lastIndex - p.match)] as const);
    },
    sessions: () => {
      const n = node();
      return n === undefined ? 0 : liveSessions(n.stateMachine).size;
    },
    attachedSessions: () => connections.size,
    watches: () => {
      const n = node();
      let count = 0;
      if (n !== undefined) for (const s of liveSessions(n.stateMachine).keys()) count += watchesOf(n.stateMachine, s).length;
      return count;
    },
    notifyBacklog: () => front()?.notifier.backlogByState() ?? { live: 0, stalled: 0, resyncing: 0 },
    linearizableReads: () => node()?.linearizableReads ?? { lease: 0, round: 0 },
  });
}
