// A simulation run's parameters, all derived from its seed so that the seed
// alone replays a run: cluster size, timing, flow-control limits, and how
// hostile the network and the fault schedule are (mild seeds and brutal seeds
// find different bugs, so the regime varies from seed to seed).

import { type NetworkConditions } from './network.js';
import { SimRandom } from './random.js';

export interface FaultRates {
  /** Per-step probabilities. */
  readonly crash: number;
  readonly partition: number;
  readonly storageFailure: number;
  readonly transfer: number;
  readonly campaign: number;
  readonly propose: number;
  readonly read: number;
  /** A leader proposes a membership change (add learner, promote, remove). */
  readonly configChange: number;
  /** Clients are closed-loop: at most this many commands are open (proposed, not yet committed) at once. */
  readonly clientConcurrency: number;
  /** A node's tick is skipped or doubled with this probability (clock drift). */
  readonly clockSkew: number;
  /** Down time after a crash, in steps. */
  readonly minDownSteps: number;
  readonly maxDownSteps: number;
  /** How long a partition lasts, in steps. */
  readonly minPartitionSteps: number;
  readonly maxPartitionSteps: number;
}

/**
 * Log compaction and snapshot transfer. Every node's driver compacts by its policy
 * (once applied - logStart >= everyEntries + keepEntries, compact to applied - keepEntries):
 * the seed's, or with `perNodePolicies` one drawn per process start, aggressive and
 * different on each node, so followers that fall even slightly behind need a snapshot.
 */
export interface SnapshotSettings {
  /** The seed's policy; null: none, unless `perNodePolicies`. */
  readonly policy: { readonly everyEntries: number; readonly keepEntries: number } | null;
  /** Without a seed policy: each process start draws its own. */
  readonly perNodePolicies: boolean;
  /** Snapshot streams are cut into chunks of this many bytes (a big value: one message). */
  readonly chunkBytes: number;
  /** Filler bytes added to the simulated state so that it spans several chunks. */
  readonly paddingBytes: number;
  /** Steps between two chunks of one stream (a real transport's queue paces them). */
  readonly chunkGapSteps: number;
  /** Per install, in the fault phase: power loss before the install write, or after it but before the core adopts it. */
  readonly installCrash: number;
}

/** Deliberate driver bugs, used only to prove the checkers catch what they claim to. */
export type SimMutation =
  | 'none'
  /** The disk acknowledges writes it has not synced; a crash loses the last few of them. */
  | 'lyingDisk'
  /**
   * Writes are acknowledged to the driver before they are durable (a write-back cache), so the
   * driver sends votes and acknowledgements before the Ready's write is durable (the simulated
   * state machine still applies only what is on disk).
   */
  | 'sendBeforePersist'
  /** The network never heals after the fault phase: every link stays cut (liveness must fail). */
  | 'neverHeal'
  /** The core's shouldInstallSnapshot always says yes, so the driver installs stale snapshots too. */
  | 'installStaleSnapshot'
  /** The snapshot sender labels its captured state with the index before the one it reflects. */
  | 'snapshotOffByOne'
  /**
   * The driver's clocks run at a fraction of real speed (far beyond the rate error it allows for),
   * so it holds its lease beyond the window followers keep (RaftNode.leaseTicks).
   */
  | 'leaseTooLong'
  /** The sessions model's leaders acknowledge liveness batches without proving they still lead (sessions.ts). */
  | 'unprovedLiveAck'
  /** The sessions model's leaders take no member's liveness touch (every session's holder looks like another member). */
  | 'ignoreLiveBatch';

export interface SimConfig {
  readonly seed: number;
  readonly nodeCount: number;
  /** Extra node slots, not members at first, that membership changes can add. */
  readonly spareNodes: number;
  /** Steps with faults; a calm phase follows until the cluster converges (the liveness check). */
  readonly faultSteps: number;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  /** Steps per tick: messages and I/O take a few steps, so several happen per tick. */
  readonly stepsPerTick: number;
  readonly maxInflightMessages: number;
  readonly maxInflightBytes: number;
  readonly maxMessageBytes: number;
  /** An I/O job (a Ready's write, a state capture, a snapshot install) takes [0, maxIoDelay] steps. */
  readonly maxIoDelay: number;
  readonly network: NetworkConditions;
  readonly faults: FaultRates;
  readonly snapshots: SnapshotSettings;
  /**
   * Per-step probability that a node is told its leader's process is gone
   * (RaftNode.leaderUnreachable), rightly or wrongly, as the transport does
   * when a peer's port refuses connections.
   */
  readonly leaderSuspicion: number;
  readonly mutation: SimMutation;
  /** Calm-phase bound, in election timeouts (electionTicks * stepsPerTick steps each). */
  readonly livenessElectionTimeouts: number;
  /**
   * The calm phase first keeps one voter down for good: the remaining majority must still
   * converge on its own (a majority suffices in Raft), then the voter comes back.
   */
  readonly calmMinorityDown: boolean;
  /** How to rerun exactly this run; goes into every violation message. */
  readonly replayCommand: string;
}

export interface ConfigOverrides {
  readonly nodeCount?: number;
  readonly faultSteps?: number;
  readonly mutation?: SimMutation;
  readonly replayCommand?: string;
}

export const DEFAULT_FAULT_STEPS = 2000;

export function defaultReplayCommand(seed: number, faultSteps: number): string {
  const steps = faultSteps === DEFAULT_FAULT_STEPS ? '' : ` VERA_SIM_STEPS=${faultSteps}`;
  return `VERA_SIM_SEED=${seed}${steps} npx vitest run test/sim`;
}

export function deriveConfig(seed: number, overrides: ConfigOverrides = {}): SimConfig {
  const r = new SimRandom(seed).fork(0xc0f19);
  const nodeCount = overrides.nodeCount ?? (r.chance(0.5) ? 3 : 5);
  const faultSteps = overrides.faultSteps ?? DEFAULT_FAULT_STEPS;
  // Regimes: 0 = gentle, 1 = lossy and slow, 2 = crash-heavy, 3 = everything at once.
  const regime = r.int(4);
  const lossy = regime === 1 || regime === 3;
  const crashy = regime === 2 || regime === 3;
  const mutation = overrides.mutation ?? 'none';
  const electionTicks = r.pick([6, 10, 10, 15, 20, 30]);
  const maxIoDelay = r.pick([0, 2, 5, 12]);
  const network = {
    lossRate: lossy ? r.pick([0.05, 0.15, 0.3]) : r.pick([0, 0.01]),
    duplicateRate: r.pick([0, 0.02, 0.1]),
    minDelay: 1,
    maxDelay: r.pick([2, 4, 8]),
    slowRate: lossy ? 0.05 : r.pick([0, 0.01]),
    slowMaxDelay: r.pick([20, 60]),
    fifo: r.chance(0.5),
  };
  // Raft needs broadcast time << election timeout (paper §5.6). An election takes two
  // rounds (PreVote, then vote), each a message each way plus a disk write; give an
  // election timeout room for about three such elections, else no election ever finishes.
  const electionRound = 2 * (network.maxDelay + maxIoDelay);
  const stepsPerTick = Math.max(r.pick([2, 3, 4]), Math.ceil((3 * 2 * electionRound) / electionTicks));
  return {
    seed,
    nodeCount,
    spareNodes: 2,
    faultSteps,
    electionTicks,
    heartbeatTicks: r.pick([1, 2, 2, 3]),
    stepsPerTick,
    maxInflightMessages: r.pick([1, 2, 4, 64]),
    maxInflightBytes: r.pick([64, 256, 1 << 20]),
    maxMessageBytes: r.pick([1, 60, 300, 1 << 20]),
    maxIoDelay,
    network,
    faults: {
      crash: mutation === 'lyingDisk' || mutation === 'sendBeforePersist' ? 0.02 : crashy ? r.pick([0.004, 0.01]) : r.pick([0, 0.001]),
      partition: r.pick([0, 0.002, 0.006, 0.015]),
      storageFailure: crashy ? 0.002 : r.pick([0, 0.0005]),
      transfer: r.pick([0, 0.002, 0.01]),
      campaign: mutation === 'leaseTooLong' ? (r.pick([0]), 0.02) : r.pick([0, 0.001, 0.004]),
      propose: r.pick([0.1, 0.3, 0.6]),
      read: r.pick([0.02, 0.1, 0.25]),
      configChange: r.pick([0, 0, 0.002, 0.01]),
      clientConcurrency: r.pick([1, 4, 16]),
      clockSkew: r.pick([0, 0.05, 0.2]),
      minDownSteps: 1,
      maxDownSteps: r.pick([20, 100, 400]),
      minPartitionSteps: 10,
      maxPartitionSteps: r.pick([60, 200, 600]),
    },
    snapshots: deriveSnapshotSettings(r, crashy, mutation),
    // Drawn after the snapshot settings, so the older parameters of a seed stay what they were.
    // A stale lease shows only when a new leader is elected fast (suspicion, forced campaigns), so its mutation gets many.
    leaderSuspicion: mutation === 'leaseTooLong' ? (r.pick([0]), 0.05) : r.pick([0, 0.002, 0.01]),
    mutation,
    livenessElectionTimeouts: 20,
    calmMinorityDown: r.chance(0.5),
    replayCommand: overrides.replayCommand ?? defaultReplayCommand(seed, faultSteps),
  };
}

/**
 * Drawn after everything else, so the older parameters of a seed stay what they were.
 * About one seed in eight runs without any compaction (the log-only path stays covered).
 */
function deriveSnapshotSettings(r: SimRandom, crashy: boolean, mutation: SimMutation): SnapshotSettings {
  const style = r.int(8);
  // Every candidate is drawn, whichever is picked, so the draws after it do not depend on the style.
  const policies: ReadonlyArray<SnapshotSettings['policy']> = [
    null, // no compaction at all: the log-only path stays covered
    { everyEntries: 5, keepEntries: r.int(4) }, // aggressive: a follower that misses a little needs a snapshot
    { everyEntries: 5, keepEntries: r.int(4) },
    { everyEntries: r.range(10, 40), keepEntries: r.range(0, 10) },
    { everyEntries: r.range(10, 40), keepEntries: r.range(0, 10) },
    { everyEntries: r.range(50, 200), keepEntries: r.range(10, 50) },
    null, // per-node policies only
    null,
  ];
  const policy = policies[style] ?? null;
  // The snapshot mutations need snapshots to happen at all.
  const snapshotMutation = mutation === 'installStaleSnapshot' || mutation === 'snapshotOffByOne';
  return {
    policy: snapshotMutation ? { everyEntries: 5, keepEntries: 0 } : policy,
    perNodePolicies: !snapshotMutation && style >= 6,
    chunkBytes: r.pick([8, 24, 64, 1 << 20]),
    paddingBytes: r.pick([0, 16, 100]),
    chunkGapSteps: r.pick([0, 1, 3]),
    installCrash: crashy ? r.pick([0.05, 0.2]) : r.pick([0, 0, 0.02]),
  };
}
