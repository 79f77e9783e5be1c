// The metrics a Vera server exports on /metrics.

import { Counter, Gauge, Histogram, Registry } from './metrics.js';

export interface MetricSources {
  raft(): { term: number; commit: number; applied: number; lastIndex: number; isLeader: boolean };
  sessions(): number;
  attachedSessions(): number;
  watches(): number;
  notifyBacklog(): number;
  linearizableReads(): { readonly lease: number; readonly round: number };
}

export class ServerMetrics {
  readonly registry = new Registry();
  readonly requests = this.registry.add(new Counter('vera_requests_total', 'Client requests by op and outcome code'));
  readonly proposals = this.registry.add(new Counter('vera_proposals_total', 'Commands proposed to Raft by this node'));
  readonly proposeLatency = this.registry.add(
    new Histogram('vera_propose_seconds', 'Time from proposal to applied result', [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1, 5]),
  );
  readonly bytesIn = this.registry.add(new Counter('vera_client_bytes_in_total', 'Bytes received in client frames'));
  readonly bytesOut = this.registry.add(new Counter('vera_client_bytes_out_total', 'Bytes sent in client frames'));
  readonly notifications = this.registry.add(new Counter('vera_notify_events_total', 'Change events sent to sessions'));
  readonly expirations = this.registry.add(new Counter('vera_session_expirations_total', 'Sessions expired by this leader'));

  constructor(src: MetricSources) {
    const r = this.registry;
    r.add(new Gauge('vera_raft_term', 'Current Raft term', () => src.raft().term));
    r.add(new Gauge('vera_raft_commit_index', 'Raft commit index', () => src.raft().commit));
    r.add(new Gauge('vera_raft_applied_index', 'Index applied to the state machine', () => src.raft().applied));
    r.add(new Gauge('vera_raft_last_index', 'Last index in the Raft log', () => src.raft().lastIndex));
    r.add(new Gauge('vera_raft_is_leader', '1 when this node is the leader', () => (src.raft().isLeader ? 1 : 0)));
    r.add(new Gauge('vera_sessions', 'Live sessions in the replicated state', () => src.sessions()));
    r.add(new Gauge('vera_sessions_attached', 'Sessions with a connection on this node', () => src.attachedSessions()));
    r.add(new Gauge('vera_watches', 'Watches in the replicated state', () => src.watches()));
    r.add(
      new Gauge('vera_linearizable_reads', 'Linearizable reads served since start, by how leadership was confirmed (lease or heartbeat round)', () => {
        const { lease, round } = src.linearizableReads();
        return [
          [{ path: 'lease' }, lease],
          [{ path: 'round' }, round],
        ];
      }),
    );
    r.add(new Gauge('vera_notify_backlog', 'Events queued for sessions and not yet sent', () => src.notifyBacklog()));
  }

  render(): string {
    return this.registry.render();
  }
}
