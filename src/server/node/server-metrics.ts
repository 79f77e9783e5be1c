// The metrics a Vera server exports on /metrics, through prom-client: its
// default process and runtime metrics (CPU, memory, event loop lag, GC, open
// handles), and Vera's own, each of the right type, with what operators of etcd
// look at first: leader changes, failed proposals, fsync and apply durations,
// replication lag and round trip per peer, snapshots, sessions opened and expired, and the
// notification backlog by the state of the connections it waits for.
import { Counter, defaultMetricsCollector, Gauge, Histogram, Registry } from './prom-parts.js';
import type { SnapshotEvent } from '../../raft/driver.js';

export interface MetricSources {
  raft(): { term: number; commit: number; applied: number; lastIndex: number; isLeader: boolean };
  /** On the leader, each other member's lag in entries behind its last index (none elsewhere). */
  peerLag(): ReadonlyArray<readonly [string, number]>;
  sessions(): number;
  attachedSessions(): number;
  watches(): number;
  notifyBacklog(): Readonly<Record<string, number>>;
  linearizableReads(): { readonly lease: number; readonly round: number };
}

const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1, 5];

export class ServerMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({ name: 'vera_requests_total', help: 'Client requests by op and outcome code', labelNames: ['op', 'code'], registers: [this.registry] });
  readonly proposals = new Counter({ name: 'vera_proposals_total', help: 'Commands proposed to Raft by this node', labelNames: ['op'], registers: [this.registry] });
  readonly proposalsFailed = new Counter({
    name: 'vera_proposals_failed_total',
    help: 'Proposals that got no applied result (leadership lost, no quorum in time, shutting down), by op',
    labelNames: ['op'],
    registers: [this.registry],
  });
  readonly proposeLatency = new Histogram({ name: 'vera_propose_seconds', help: 'Time from proposal to applied result', buckets: LATENCY_BUCKETS, registers: [this.registry] });
  readonly logSync = new Histogram({ name: 'vera_disk_log_sync_seconds', help: 'Synced writes of the Raft log to disk (fsync included)', buckets: LATENCY_BUCKETS, registers: [this.registry] });
  readonly apply = new Histogram({ name: 'vera_apply_seconds', help: 'Runs of committed entries applied to the state machine (one LevelDB batch or more)', buckets: LATENCY_BUCKETS, registers: [this.registry] });
  readonly appliedEntries = new Counter({ name: 'vera_applied_entries_total', help: 'Committed entries applied by this member', registers: [this.registry] });
  readonly peerRoundTrip = new Histogram({
    name: 'vera_peer_round_trip_seconds',
    help: "On the leader, from sending a heartbeat round to each peer's answer",
    labelNames: ['peer'],
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly leaderChanges = new Counter({ name: 'vera_raft_leader_changes_total', help: 'Leader changes this member has seen (a new leader known)', registers: [this.registry] });
  readonly snapshots = new Counter({ name: 'vera_snapshots_total', help: 'Snapshots sent to peers, installed from the leader, compacted into, or failed', labelNames: ['kind'], registers: [this.registry] });
  readonly snapshotSeconds = new Histogram({
    name: 'vera_snapshot_seconds',
    help: 'Time to stream a snapshot to a peer (sent) or to install one (installed)',
    labelNames: ['kind'],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });
  readonly snapshotBytes = new Gauge({ name: 'vera_snapshot_last_bytes', help: 'Size of the last snapshot sent or installed', labelNames: ['kind'], registers: [this.registry] });
  readonly bytesIn = new Counter({ name: 'vera_client_bytes_in_total', help: 'Bytes received in client frames', registers: [this.registry] });
  readonly bytesOut = new Counter({ name: 'vera_client_bytes_out_total', help: 'Bytes sent in client frames', registers: [this.registry] });
  readonly notifications = new Counter({ name: 'vera_notify_events_total', help: 'Change events sent to sessions', registers: [this.registry] });
  readonly sessionsOpened = new Counter({ name: 'vera_sessions_opened_total', help: 'Sessions (and leases) opened, as this member applied them', registers: [this.registry] });
  readonly expirations = new Counter({ name: 'vera_session_expirations_total', help: 'Sessions (and leases) expired by this member while it led', registers: [this.registry] });

  constructor(src: MetricSources) {
    const registers = [this.registry];
    const gauge = (name: string, help: string, read: () => number): void => {
      new Gauge({ name, help, registers, collect() {
        this.set(read());
      } });
    };
    gauge('vera_raft_term', 'Current Raft term', () => src.raft().term);
    gauge('vera_raft_commit_index', 'Raft commit index', () => src.raft().commit);
    gauge('vera_raft_applied_index', 'Index applied to the state machine', () => src.raft().applied);
    gauge('vera_raft_last_index', 'Last index in the Raft log', () => src.raft().lastIndex);
    gauge('vera_raft_is_leader', '1 when this node is the leader', () => (src.raft().isLeader ? 1 : 0));
    gauge('vera_sessions', 'Live sessions (and leases) in the replicated state', () => src.sessions());
    gauge('vera_sessions_attached', 'Sessions with a connection on this node', () => src.attachedSessions());
    gauge('vera_watches', 'Watches in the replicated state', () => src.watches());
    new Gauge({ name: 'vera_peer_lag_entries', help: "On the leader, how many entries each other member's log is behind its last index", labelNames: ['peer'], registers, collect() {
      this.reset();
      for (const [peer, lag] of src.peerLag()) this.set({ peer }, lag);
    } });
    new Gauge({ name: 'vera_notify_backlog', help: 'Events queued for sessions and not yet sent, by the state of the connection they wait for (live, stalled, resyncing)', labelNames: ['state'], registers, collect() {
      for (const [state, n] of Object.entries(src.notifyBacklog())) this.set({ state }, n);
    } });
    // Counted by the node since it started: read at scrape time.
    new Counter({ name: 'vera_linearizable_reads_total', help: 'Linearizable reads served since start, by how leadership was confirmed (lease or heartbeat round)', labelNames: ['path'], registers, collect() {
      const { lease, round } = src.linearizableReads();
      this.reset();
      this.inc({ path: 'lease' }, lease);
      this.inc({ path: 'round' }, round);
    } });
  }

  /** A snapshot event of the Raft driver: counted, timed and sized. */
  snapshot(e: SnapshotEvent): void {
    this.snapshots.inc({ kind: e.kind });
    if (e.seconds !== undefined) this.snapshotSeconds.observe({ kind: e.kind }, e.seconds);
    if (e.bytes !== undefined) this.snapshotBytes.set({ kind: e.kind }, e.bytes);
  }

  private processMetrics = false;

  /**
   * Adds prom-client's process and runtime metrics (CPU, memory, event loop lag, GC,
   * handles). Called once the member serves, not at start: loading them is a tenth of
   * the module load, and nothing needs them before the first scrape.
   */
  collectProcessMetrics(): void {
    if (this.processMetrics) return;
    this.processMetrics = true;
    defaultMetricsCollector()({ register: this.registry });
  }

  /** The Prometheus text of every metric above. */
  async render(): Promise<string> {
    this.collectProcessMetrics(); // a scrape never lacks them
    // prom-client spells a sample with no value yet (the event loop lag in the first
    // scrape after the monitor starts) `Nan`; the exposition format's spelling is `NaN`.
    return (await this.registry.metrics()).replace(/ Nan$/gm, ' NaN');
  }
}
