// The member's store and Raft node, opened from the config with the metrics fed from
// its hooks, and the reasons it stops (a diverged membership, an entry this build
// cannot apply, failed storage) logged before it exits. What the front end hears of
// it (applied entries, role and address-book changes) is the caller's.
import type { Logger } from 'pino';
import { deriveClusterId } from '../../raft/transport/auth.js';
import type { SoftState } from '../../raft/types.js';
import { initialMembers, UnknownCommandError, type Member } from '../../statemachine/index.js';
import type { ServerConfig } from '../config.js';
import type { ServerMetrics } from './server-metrics.js';
import { MembershipDivergedError, VeraNode, type RaftTiming, type VeraNodeHooks } from './vera-node.js';

export type MemberListeners = Pick<VeraNodeHooks, 'onApplied' | 'onMembersChanged' | 'onSnapshotInstalled'> & {
  /** The role or the known leader changed (logged and counted here first). */
  onRoleChanged(state: SoftState): void;
};

/** Events (plus their recipients) kept for replay to resuming sessions. */
const EVENT_LOG_CAPACITY = 200_000;

export async function openMember(config: ServerConfig, timing: RaftTiming, levelMaxOpenFiles: number, logger: Logger, metrics: ServerMetrics, listeners: MemberListeners): Promise<VeraNode> {
  // config.peers always lists this member; for a joining member the others are only contacts.
  const contacts = config.peers;
  let node: VeraNode | undefined;
  let leaderSeen: string | null = null;
  node = await VeraNode.open(
    {
      id: config.id,
      dataDir: config.dataDir,
      // A joining member starts with no configuration at all: it never campaigns or counts itself.
      initialMembers: config.join ? [] : initialMembers(contacts),
      clusterId: config.join ? null : deriveClusterId(contacts.map((m) => `${m.id}=${m.host}:${m.peerPort}/${m.clientPort}`)),
      timing,
      logger,
      eventLogCapacity: EVENT_LOG_CAPACITY,
      compaction: config.compaction,
      levelMaxOpenFiles,
    },
    {
      onApplied: listeners.onApplied,
      onSoftState: (s) => {
        logger.info({ event: 'role-changed', role: s.role, leader: s.leader, term: node?.status().term }, `role is now ${s.role}`);
        if (s.leader !== null && s.leader !== leaderSeen) metrics.leaderChanges.inc();
        if (s.leader !== null) leaderSeen = s.leader;
        listeners.onRoleChanged(s);
      },
      onMembersChanged: (members: readonly Member[]) => listeners.onMembersChanged(members),
      ...(listeners.onSnapshotInstalled === undefined ? {} : { onSnapshotInstalled: listeners.onSnapshotInstalled }),
      onLogSynced: (seconds) => metrics.logSync.observe(seconds),
      onAppliedRun: (seconds, entries) => {
        metrics.apply.observe(seconds);
        metrics.appliedEntries.inc(entries);
      },
      onSnapshot: (e) => metrics.snapshot(e),
      onPeerRoundTrip: (peer, seconds) => metrics.peerRoundTrip.observe({ peer }, seconds),
      onFatal: (err) => {
        if (err instanceof MembershipDivergedError) logger.fatal({ event: 'membership-diverged', err: err.message }, `stopping: ${err.message}`);
        else if (err instanceof UnknownCommandError) logger.fatal({ event: 'command-unknown', err: err.message }, `stopping: ${err.message}`);
        else logger.fatal({ event: 'storage-failed', err: String(err) }, 'storage failed; stopping to keep acknowledged writes safe');
        process.exit(70);
      },
    },
  );
  return node;
}
