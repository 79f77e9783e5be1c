// The deterministic cluster simulator: 3 or 5 nodes, each running the real
// RaftNode under the real RaftDriver (src/raft/driver.ts), over a simulated
// network, simulated disks and clients, all in virtual time and all driven by
// one seed.
//
// One step is one unit of virtual time (the drivers' milliseconds). In each step:
// faults and client actions happen, due messages are delivered, nodes tick, then
// the drivers run until they wait on something the simulator has not finished:
// their deferred Ready loops and timers run, due I/O completes (a Ready's write,
// a state capture, a snapshot install, each after a random delay) and the promise
// chains they resume are drained. The safety checker sees every call into every
// core (observed-node.ts) and every message, write and apply.
//
// The driver's clock, storage, transport, state machine and snapshot I/O are
// simulated; its Ready rules (persist, send, apply, advance, snapshots,
// compaction, leases) are the real ones. A crash kills the process's clock, its
// pending I/O and its transport: the unsynced write and everything in memory are
// lost, and the restarted node is rebuilt from its storage. The simulated state
// machine is durable with its applied index (as the real one: entry and applied
// index in one LevelDB batch), so a restarted node resumes applying at applied + 1.
//
// Snapshots: each driver compacts by its policy; a leader's driver captures the
// state machine and streams it in chunks over the lossy network; the receiver's
// driver assembles them (the real SnapshotAssembler), asks its core, and installs
// through the simulator, whose install write may be hit by power loss before or
// after it lands.
//
// Membership: beyond the initial 3 or 5 voters there are spare node slots. A
// leader sometimes proposes a single-server change (add a learner, promote a
// caught-up learner, remove a voter or learner); a spare is provisioned with
// empty storage when it is added, and a node whose removal is committed is
// stopped for good (as an operator would), never re-added under the same id.

import { decodeConfigChange } from '../../src/raft/config.js';
import { RaftDriver, type SnapshotEvent, type SnapshotIO } from '../../src/raft/driver.js';
import { memoryStaging, type CapturedState, type Staging } from '../../src/raft/state-transfer.js';
import { StorageError, type LogStorage } from '../../src/raft/storage.js';
import type { ClusterConfig, ConfigChange, Entry, HardState, Message, NodeId, RaftOptions, Ready, SnapshotMeta, SnapshotRequest, Status } from '../../src/raft/types.js';
import { decodeCommand, encodeCommand, SimClients, type SimApplied } from './clients.js';
import type { SimConfig } from './config.js';
import { describeMessage, describeRange, MESSAGE_CODE } from './describe.js';
import { randomMembershipChange, randomPartition } from './faults.js';
import { TraceHash } from './hash.js';
import { convergenceProblem, InvariantViolation, SafetyChecker, type ConvergenceNode, type ConvergenceView, type LogView } from './invariants.js';
import { CALM_NETWORK, SimNetwork } from './network.js';
import { ObservedRaftNode, type CoreWatch } from './observed-node.js';
import { SimRandom } from './random.js';
import { SimClock } from './sim-clock.js';
import { SimLogStore } from './sim-storage.js';
import { SimSessions } from './sessions.js';
import { decodeState, encodeState, sameConfig, SimStateMachine, SnapshotFormatError, type SimState } from './state-machine.js';

/** Writes issued while a voter is kept down in the calm phase. */
const CALM_MINORITY_COMMANDS = 5;
/** Rounds of (timers, I/O, deferred callbacks, drain) per step; what is left runs next step. */
const MAX_SETTLE_ROUNDS = 16;
/** The leaseTooLong mutation: the driver's clocks run at this fraction of real speed. */
const SLOW_CLOCK_RATE = 0.4;

/** An incoming snapshot, staged in memory. */
export interface SimStaged {
  readonly bytes: number;
  readonly data: Buffer;
}

export const simStaging: Staging<SimStaged> = () => {
  const inner = memoryStaging();
  return {
    write: (part) => inner.write(part),
    finish: (sha256, bytes) => ({ bytes, data: inner.finish(sha256, bytes) }),
    discard: () => inner.discard(),
  };
};

/** Lets the promise chains started so far run to their next wait (nothing real is pending: all I/O is simulated). */
function drain(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

interface IoJob {
  readonly dueAt: number;
  readonly seq: number;
  readonly complete: () => void;
}

/** One run of a node's process: its core, driver, clock and pending I/O. A crash ends it. */
class Incarnation {
  alive = true;
  raft!: ObservedRaftNode;
  driver!: RaftDriver<SimApplied, SimStaged>;
  io: IoJob[] = [];
  /** Writes land in the order they were issued. */
  lastWriteDue = 0;
  /** Writes issued and not landed yet, and what waits for them (the sendBeforePersist mutation only). */
  unlandedWrites = 0;
  whenLanded: Array<() => void> = [];
  /** A snapshot installed and not yet stepped into the core (checked when it is). */
  installed: SnapshotMeta | null = null;

  constructor(readonly clock: SimClock) {}
}

class SimNode {
  run: Incarnation | null = null;
  /** Spare slots start unprovisioned: no process, no data, until a membership change adds them. */
  provisioned = false;
  /** Removed from the cluster (its removal was committed): stopped for good. */
  retired = false;
  /** Kept down in the calm phase to show that the majority goes on without it. */
  keptDown = false;
  incarnation = 0;
  restartAt = 0;
  /** This node's end-of-run reads (retries included), when the last was asked, and whether one was answered. */
  readonly calmReads = new Set<string>();
  calmReadAskedAt = -1;
  calmReadAnswered = false;
  readonly sm: SimStateMachine;
  /** The clock fault skipped a tick that has not been made up yet (it is made up at most once: see tickNodes). */
  owesTick = false;

  constructor(
    readonly id: NodeId,
    readonly slot: number,
    readonly store: SimLogStore,
    readonly tickPhase: number,
    initialConfig: ClusterConfig,
  ) {
    this.sm = new SimStateMachine(initialConfig);
  }

  get raft(): ObservedRaftNode | null {
    return this.run?.raft ?? null;
  }

  /** What a process loses when it stops: everything in memory, and whatever it had scheduled. */
  forgetMemory(): void {
    const run = this.run;
    if (run === null) return;
    run.alive = false;
    run.clock.kill();
    run.io = [];
    this.run = null;
  }
}

interface Partition {
  readonly label: string;
  readonly links: ReadonlyArray<readonly [NodeId, NodeId]>;
  readonly healAt: number;
}

export interface SimStats {
  steps: number;
  calmSteps: number;
  leaderTerms: number;
  crashes: number;
  writeFailures: number;
  partitions: number;
  proposals: number;
  acknowledged: number;
  lostProposals: number;
  readsRequested: number;
  readsAnswered: number;
  /** Linearizable reads a leader answered under its lease, without a round. */
  leaseReads: number;
  /** Steps in which some leader's lease covered the moment (each checked against the cluster). */
  leaseSteps: number;
  /** Members' ReadIndex requests a leader answered under its lease, without a round (each checked against the cluster). */
  memberLeaseReads: number;
  /** The sessions model (sessions.ts): sessions opened, expired by a leader, sent away (4009); liveness batches acknowledged. */
  sessionsOpened: number;
  sessionsExpired: number;
  sessionsMoved: number;
  livenessAcks: number;
  /** Session-steps the sessions model judged kept alive by their holder's clean link to the leader. */
  sessionsKeptAlive: number;
  committed: number;
  messagesSent: number;
  messagesLost: number;
  messagesDuplicated: number;
  messagesCutOff: number;
  transfers: number;
  configChanges: number;
  retired: number;
  compactions: number;
  snapshotsRequested: number;
  snapshotsSent: number;
  snapshotChunks: number;
  snapshotsAborted: number;
  snapshotsReceived: number;
  snapshotsIgnored: number;
  snapshotsInstalled: number;
  installCrashes: number;
}

export interface SimResult {
  readonly config: SimConfig;
  readonly traceHash: number;
  readonly stats: SimStats;
}


export class SimCluster {
  readonly checker: SafetyChecker;
  readonly trace = new TraceHash();
  private now = 0;
  private phase: 'faults' | 'calm' = 'faults';
  private readonly nodes: SimNode[] = [];
  private readonly ids: NodeId[];
  private readonly initialConfig: ClusterConfig;
  private readonly network: SimNetwork;
  private readonly faultRandom: SimRandom;
  private readonly ioRandom: SimRandom;
  private readonly clientRandom: SimRandom;
  private readonly nodeRandom: SimRandom;
  private readonly clients: SimClients;
  private partitions: Partition[] = [];
  private readCounter = 0;
  private ioSeq = 0;
  /** New client commands still to be issued in the calm phase (the minority-down stage writes some). */
  private calmNewCommands = 0;
  /**
   * The first failure raised where the driver, not the simulator, would catch it (its Ready loop,
   * a promise callback); thrown from step() once the drivers have settled.
   */
  private failure: { readonly error: unknown } | null = null;
  private readonly stats: SimStats = {
    steps: 0,
    calmSteps: 0,
    leaderTerms: 0,
    crashes: 0,
    writeFailures: 0,
    partitions: 0,
    proposals: 0,
    acknowledged: 0,
    lostProposals: 0,
    readsRequested: 0,
    readsAnswered: 0,
    leaseReads: 0,
    leaseSteps: 0,
    memberLeaseReads: 0,
    sessionsOpened: 0,
    sessionsExpired: 0,
    sessionsMoved: 0,
    livenessAcks: 0,
    sessionsKeptAlive: 0,
    committed: 0,
    messagesSent: 0,
    messagesLost: 0,
    messagesDuplicated: 0,
    messagesCutOff: 0,
    transfers: 0,
    configChanges: 0,
    retired: 0,
    compactions: 0,
    snapshotsRequested: 0,
    snapshotsSent: 0,
    snapshotChunks: 0,
    snapshotsAborted: 0,
    snapshotsReceived: 0,
    snapshotsIgnored: 0,
    snapshotsInstalled: 0,
    installCrashes: 0,
  };
  /** Nodes whose removal was applied during this step; stopped at the end of it. */
  private toRetire: NodeId[] = [];
  private leaderTermsSeen = new Set<number>();
  /** The sessions model; off under the mutations, which break Raft, not liveness. */
  private readonly sessions: SimSessions | null;

  constructor(
    readonly config: SimConfig,
    /** Receives a line per event when set (verbose replay); costs nothing when not. */
    private readonly log: ((line: string) => void) | null = null,
  ) {
    const root = new SimRandom(config.seed);
    this.faultRandom = root.fork(1);
    this.ioRandom = root.fork(2);
    this.clientRandom = root.fork(3);
    this.nodeRandom = root.fork(4);
    const netRandom = root.fork(5);
    this.ids = Array.from({ length: config.nodeCount + config.spareNodes }, (_, i) => `n${i + 1}`);
    this.initialConfig = { voters: this.ids.slice(0, config.nodeCount), learners: [] };
    this.network = new SimNetwork(this.ids, netRandom, config.network);
    this.checker = new SafetyChecker(() => this.where());
    this.clients = new SimClients(config.faults.clientConcurrency);
    this.ids.forEach((id, slot) => {
      const store = new SimLogStore(this.initialConfig, config.mutation === 'lyingDisk');
      this.nodes.push(new SimNode(id, slot, store, this.faultRandom.int(config.stepsPerTick), this.initialConfig));
    });
    for (const d of this.nodes.slice(0, config.nodeCount)) this.provision(d);
    const sessionsRandom = root.fork(6);
    this.sessions = config.mutation === 'none' || config.mutation === 'unprovedLiveAck' || config.mutation === 'ignoreLiveBatch' ? this.makeSessions(sessionsRandom) : null;
  }

  private makeSessions(random: SimRandom): SimSessions {
    const status = (d: SimNode) => d.run?.raft.status() ?? null;
    const nodes = this.nodes.map((d) => ({
      id: d.id,
      get incarnation(): object | null {
        return d.run;
      },
      now: () => d.run?.clock.monotonic() ?? 0,
      leadingTerm: () => {
        const st = status(d);
        return st?.role === 'leader' ? st.term : null;
      },
      term: () => status(d)?.term ?? 0,
      leader: () => status(d)?.leader ?? null,
      confirm: () =>
        this.config.mutation === 'unprovedLiveAck'
          ? Promise.resolve()
          : d.run === null
            ? Promise.reject(new Error('down'))
            : d.run.driver.readIndex(this.readTimeout()),
    }));
    // A few election timeouts: leaders change and members lose them well within one session's life.
    const timeoutMs = 4 * this.config.electionTicks * this.config.stepsPerTick;
    return new SimSessions(
      {
        now: () => this.now,
        nodes,
        isCut: (from, to) => this.network.isCut(from, to),
        highestLeaderTerm: () => this.checker.highestLeaderTerm,
        fail: (detail) => this.checker.fail('sessionLiveness', detail),
        say: (line) => this.say(line),
        ignoreLiveBatch: this.config.mutation === 'ignoreLiveBatch',
      },
      random,
      timeoutMs,
    );
  }

  /**
   * The fault phase, then the calm phase until convergence (throws InvariantViolation on any
   * failure). Liveness is bounded in two stages. First, one leader followed by every member
   * commits everything in its log and answers every client command and read: within
   * `livenessElectionTimeouts` election timeouts, plus a round trip per entry of the
   * uncommitted backlog the faults left behind (the core does not cap a leader's uncommitted
   * tail, so a long fault phase can leave thousands). Then lagging replicas (a learner added
   * late, a node that was down long) must catch up within the same kind of budget, and the
   * leader must know they did. In half the seeds one voter is also kept down for a while
   * (see below): the others must converge without it, and it must catch up when it returns.
   */
  async run(): Promise<SimResult> {
    while (this.now < this.config.faultSteps) await this.step();
    this.calmDown();
    const calmStart = this.now;
    // A majority suffices: with one voter (maybe the leader) down for good, new writes and reads
    // still complete; then it comes back and catches up (by snapshot, if the others compacted).
    // While the membership never changed, any one voter is a minority of every configuration in
    // play, so it goes down at once: the rest must repair what the faults left on their own.
    // Otherwise (retired nodes, pending changes) only a converged cluster loses a voter.
    const early = this.config.calmMinorityDown && this.stats.configChanges === 0;
    if (early) await this.runWithOneVoterDown(this.initialConfig.voters);
    await this.converge('');
    if (this.config.calmMinorityDown && !early) {
      const leader = this.finalMembers()!.find((d) => d.raft!.status().role === 'leader')!;
      if (await this.runWithOneVoterDown(leader.raft!.status().config.voters)) await this.converge('');
    }
    this.stats.calmSteps = this.now - calmStart;
    const logs = new Map<NodeId, LogView>();
    for (const n of this.convergenceView().nodes) logs.set(n.id, this.nodes[this.slotOf(n.id)]!.raft!);
    this.checker.checkFinalLogs(logs);
    return { config: this.config, traceHash: this.trace.value, stats: this.collectStats() };
  }

  /** Both liveness stages (see run()), each within its bound from now. */
  private async converge(label: string): Promise<void> {
    for (const d of this.nodes) {
      d.calmReadAnswered = false; // every stage needs its own answered reads
      d.calmReadAskedAt = -1;
    }
    const bound = this.livenessBound();
    // At least one entry per round trip (message out, disk write, answer back).
    const perEntry = 2 * CALM_NETWORK.maxDelay + this.config.maxIoDelay + 1;
    // Down nodes count too: one restarting with the longest log may lead and must commit all of it.
    const lastIndexes = this.nodes.filter((d) => d.provisioned && !d.retired).map((d) => Math.max(d.raft?.lastIndex() ?? 0, d.store.lastIndex()));
    const backlog = Math.max(0, ...lastIndexes.map((last) => last - this.checker.highestCommitIndex));
    await this.stepUntilConverged(
      false,
      this.now + bound + backlog * perEntry,
      `${bound} steps (${this.config.livenessElectionTimeouts} election timeouts) + ${backlog} uncommitted entries x ${perEntry} steps${label}`,
    );
    const view = this.convergenceView();
    const leaderCommit = view.nodes.find((n) => n.role === 'leader')!.commit;
    const lag = Math.max(0, ...view.nodes.map((n) => leaderCommit - n.applied));
    await this.stepUntilConverged(true, this.now + bound + lag * perEntry, `${bound} steps + catching up ${lag} entries x ${perEntry} steps${label}`);
  }

  private livenessBound(): number {
    return this.config.livenessElectionTimeouts * this.config.electionTicks * this.config.stepsPerTick;
  }

  /**
   * One of `voters` (the voters of every configuration in play) is stopped, if the rest is
   * still a majority of at least two; the others converge with a few new writes; then it
   * comes back (the caller checks that everyone converges again). Returns whether it ran.
   */
  private async runWithOneVoterDown(voters: readonly NodeId[]): Promise<boolean> {
    if (voters.length < 3) return false;
    const victim = this.nodes[this.slotOf(this.faultRandom.pick(voters))]!;
    if (victim.run !== null) this.crash(victim, 'kept down: the majority must go on without it');
    victim.keptDown = true;
    victim.restartAt = Number.POSITIVE_INFINITY;
    this.calmNewCommands = CALM_MINORITY_COMMANDS;
    await this.converge(` while ${victim.id} stays down`);
    this.say(`${victim.id} comes back`);
    victim.keptDown = false;
    victim.restartAt = this.now + 1;
    return true;
  }

  private async stepUntilConverged(caughtUp: boolean, deadline: number, what: string): Promise<void> {
    for (;;) {
      const problem = convergenceProblem(this.convergenceView(), caughtUp);
      if (problem === null) return;
      if (this.now >= deadline) this.checker.fail('liveness', `not converged after faults stopped, within ${what}: ${problem}`);
      await this.step();
    }
  }

  async step(): Promise<void> {
    this.now++;
    this.stats.steps++;
    if (this.phase === 'faults') this.injectFaults();
    this.restartDueNodes();
    this.healDuePartitions();
    this.clientActions();
    this.deliverDueMessages();
    this.stepSessions();
    this.checkLeases();
    this.tickNodes();
    await this.settle();
    this.retireRemovedNodes();
  }

  /**
   * Lets every driver run until it waits on the simulator: due timers fire, due I/O completes,
   * deferred callbacks (the Ready loops) run, and the promise chains they start are drained.
   */
  private async settle(): Promise<void> {
    for (let round = 0; round < MAX_SETTLE_ROUNDS; round++) {
      let progressed = false;
      for (const d of this.nodes) {
        const run = d.run;
        if (run === null) continue;
        if (run.clock.fireDueTimers()) progressed = true;
        if (run.alive && this.completeDueIo(run)) progressed = true;
        if (run.alive && run.clock.runDeferred()) progressed = true;
      }
      await drain();
      if (this.failure !== null) throw this.failure.error;
      if (!progressed) return;
    }
  }

  /** Runs `fn`; a failure is remembered (to be thrown once the drivers settle) and passed on to the caller. */
  private guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      this.failure ??= { error: err };
      throw err;
    }
  }

  /** Runs `fn` where nobody would see its exception (a promise callback): a failure is remembered only. */
  private noting(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.failure ??= { error: err };
    }
  }

  // ------------------------------------------------------------------ node lifecycle

  private start(d: SimNode): void {
    const loaded = d.store.load();
    const options: RaftOptions = {
      id: d.id,
      electionTicks: this.config.electionTicks,
      heartbeatTicks: this.config.heartbeatTicks,
      random: this.nodeRandom.fork(d.slot * 7919 + d.incarnation),
      maxInflightMessages: this.config.maxInflightMessages,
      maxInflightBytes: this.config.maxInflightBytes,
      maxMessageBytes: this.config.maxMessageBytes,
    };
    const rate = this.config.mutation === 'leaseTooLong' ? SLOW_CLOCK_RATE : 1;
    const run = new Incarnation(new SimClock(() => this.now, rate, this.config.stepsPerTick));
    d.run = run;
    const restored = { hardState: loaded.hardState, snapshot: loaded.snapshot, entries: loaded.entries, applied: d.sm.applied };
    run.raft = this.callCore(d, 'constructor', () => new ObservedRaftNode(options, restored, this.watch(d, run)));
    const compaction = this.compactionPolicy();
    run.driver = new RaftDriver<SimApplied, SimStaged>(
      {
        node: run.raft,
        storage: this.storage(d, run),
        transport: { send: (m) => this.guard(() => run.alive && this.send(d, m)) },
        apply: (entries, applied) => this.apply(d, run, entries, applied),
        tickMs: this.config.stepsPerTick,
        clock: run.clock,
        random: this.nodeRandom.fork(0x7ead + d.slot * 7919 + d.incarnation),
        onFatal: (err) => this.onFatal(d, run, err),
        snapshots: this.snapshotIO(d, run),
        ...(compaction === null ? {} : { compaction }),
        onSnapshotEvent: (e) => this.guard(() => run.alive && this.onSnapshotEvent(d, e)),
      },
      d.sm.applied,
    );
    this.checker.observeRestart(d.id);
    this.checkConfigMatchesStateMachine(d, 'after a restart');
    this.observe(d);
    run.driver.start();
  }

  /** The seed's compaction policy, or one drawn for this process (aggressive, so followers need snapshots). */
  private compactionPolicy(): { everyEntries: number; keepEntries: number } | null {
    const { policy, perNodePolicies } = this.config.snapshots;
    if (policy !== null || !perNodePolicies) return policy;
    return { everyEntries: this.faultRandom.range(1, 12), keepEntries: this.faultRandom.int(4) };
  }

  /** A node joins (initial members, or a spare a membership change adds): fresh storage, first start. */
  private provision(d: SimNode): void {
    d.provisioned = true;
    this.say(`${d.id} PROVISIONED`);
    this.start(d);
  }

  /** Nodes whose removal has been committed (someone applied it) are stopped for good, as an operator would. */
  private retireRemovedNodes(): void {
    for (const id of this.toRetire) {
      const d = this.nodes[this.slotOf(id)]!;
      if (d.retired) continue;
      this.say(`${d.id} RETIRED (its removal is committed)`);
      this.trace.mix(0x4e71);
      this.trace.mix(d.slot);
      this.stats.retired++;
      d.retired = true;
      d.forgetMemory();
      this.clients.onCrash(d.id);
    }
    this.toRetire = [];
  }

  private crash(d: SimNode, why: string): void {
    this.say(`${d.id} CRASH (${why})`);
    this.trace.mix(0xc4a5);
    this.trace.mix(d.slot);
    this.stats.crashes++;
    d.forgetMemory();
    d.incarnation++;
    d.store.crash(this.faultRandom.range(1, 3));
    this.clients.onCrash(d.id);
    d.calmReadAskedAt = -1;
    const { minDownSteps, maxDownSteps } = this.config.faults;
    d.restartAt = d.keptDown ? Number.POSITIVE_INFINITY : this.phase === 'calm' ? this.now + 1 : this.now + this.faultRandom.range(minDownSteps, maxDownSteps);
  }

  /** The driver stopped (as the real one does when its storage fails): the process exits. */
  private onFatal(d: SimNode, run: Incarnation, err: unknown): void {
    if (err instanceof InvariantViolation) {
      this.failure ??= { error: err };
      return;
    }
    if (!run.alive) return;
    if (err instanceof StorageError && err.code === 'io') {
      this.crash(d, `the driver stopped: ${err.message}`);
      return;
    }
    this.noting(() => this.checker.fail('driverContract', `${d.id}'s driver stopped: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`));
  }

  private restartDueNodes(): void {
    for (const d of this.nodes) {
      if (d.run === null && d.provisioned && !d.retired && d.restartAt <= this.now) {
        this.say(`${d.id} RESTART (durable log to ${d.store.lastIndex()}, applied ${d.sm.applied})`);
        this.trace.mix(0x5e57);
        this.trace.mix(d.slot);
        this.start(d);
      }
    }
  }

  // ------------------------------------------------------------------ faults

  private injectFaults(): void {
    const f = this.config.faults;
    const r = this.faultRandom;
    if (f.crash > 0 && r.chance(f.crash)) {
      // Half the crashes hit a leader: that is what forces elections and log repair.
      const up = this.nodes.filter((d) => d.run !== null);
      const leaders = up.filter((d) => d.raft!.status().role === 'leader');
      const victims = leaders.length > 0 && r.chance(0.5) ? leaders : up;
      if (victims.length > 0) this.crash(r.pick(victims), 'fault schedule');
    }
    if (f.partition > 0 && r.chance(f.partition)) this.formPartition();
    if (f.storageFailure > 0 && r.chance(f.storageFailure)) {
      const d = r.pick(this.nodes.filter((n) => n.provisioned));
      this.say(`${d.id} disk: next write fails`);
      d.store.armWriteFailure();
    }
    if (f.transfer > 0 && r.chance(f.transfer)) {
      const leader = this.nodes.find((d) => d.raft?.status().role === 'leader');
      if (leader !== undefined) {
        const to = r.pick(this.ids.filter((id) => id !== leader.id && !this.nodes[this.slotOf(id)]!.retired));
        const accepted = leader.run!.driver.transferLeadership(to);
        this.say(`${leader.id} transferLeadership(${to}) -> ${accepted}`);
        if (accepted) this.stats.transfers++;
      }
    }
    if (f.campaign > 0 && r.chance(f.campaign)) {
      const d = r.pick(this.nodes);
      if (d.run !== null) {
        this.say(`${d.id} campaign()`);
        d.run.driver.campaign();
      }
    }
    if (f.configChange > 0 && r.chance(f.configChange)) this.changeMembership();
    const suspicion = this.config.leaderSuspicion;
    if (suspicion > 0 && r.chance(suspicion)) {
      const d = r.pick(this.nodes);
      if (d.run !== null) {
        // Mostly the node's real leader (dead or alive), sometimes any other member; and sometimes
        // every node at once (a leader whose port rejects all peers while it runs: a firewall).
        const leader = d.raft!.status().leader;
        const peer = leader !== null && r.chance(0.8) ? leader : r.pick(this.ids.filter((id) => id !== d.id));
        const firewall = peer === leader && r.chance(0.3);
        if (firewall) this.cutOff(peer, `firewall rejects ${peer}`);
        const told = firewall ? this.nodes.filter((x) => x.run !== null && x.id !== peer) : [d];
        for (const x of told) {
          this.say(`${x.id} leaderUnreachable(${peer})`);
          x.run!.driver.leaderUnreachable(peer);
        }
      }
    }
  }

  /** A leader proposes one single-server membership change; a spare it adds is provisioned at once. */
  private changeMembership(): void {
    const r = this.faultRandom;
    const leaders = this.nodes.filter((d) => d.raft?.status().role === 'leader');
    if (leaders.length === 0) return;
    const leader = r.pick(leaders);
    const run = leader.run!;
    const st = run.raft.status();
    const members = new Set([...st.config.voters, ...st.config.learners]);
    const outsiders = this.nodes.filter((d) => !members.has(d.id) && !d.retired).map((d) => d.id);
    const change = randomMembershipChange(r, st, outsiders, { minVoters: 3, maxVoters: this.config.nodeCount + 1 });
    if (change === null) return;
    const before = run.raft.lastIndex();
    run.driver.proposeConfigChange(change).catch(() => undefined); // its outcome shows in the configuration
    const accepted = run.raft.lastIndex() > before;
    this.say(`${leader.id} proposeConfigChange(${change.type} ${change.node}) -> ${accepted ? `accepted at ${run.raft.lastIndex()}` : 'refused'}`);
    this.trace.mix(accepted ? run.raft.lastIndex() : 0);
    if (accepted) {
      this.stats.configChanges++;
      const target = this.nodes[this.slotOf(change.node)]!;
      if (change.type === 'addLearner' && !target.provisioned) this.provision(target);
    }
  }

  private formPartition(): void {
    const { label, links } = randomPartition(this.faultRandom, this.ids);
    this.cutLinks(label, links);
  }

  /** Cuts `peer` off from every other node, both ways, for a random while. */
  private cutOff(peer: NodeId, label: string): void {
    const links: Array<[NodeId, NodeId]> = [];
    for (const id of this.ids) if (id !== peer) links.push([peer, id], [id, peer]);
    this.cutLinks(label, links);
  }

  private cutLinks(label: string, links: ReadonlyArray<readonly [NodeId, NodeId]>): void {
    const { minPartitionSteps, maxPartitionSteps } = this.config.faults;
    if (links.length === 0) return;
    for (const [a, b] of links) this.network.cut(a, b);
    const healAt = this.now + this.faultRandom.range(minPartitionSteps, maxPartitionSteps);
    this.partitions.push({ label, links, healAt });
    this.stats.partitions++;
    this.trace.mix(0x9a27);
    this.trace.mix(links.length);
    this.say(`PARTITION ${label} until step ${healAt}`);
  }

  private healDuePartitions(): void {
    if (this.partitions.length === 0) return;
    const keep: Partition[] = [];
    for (const p of this.partitions) {
      if (p.healAt <= this.now) {
        for (const [a, b] of p.links) this.network.restore(a, b);
        this.say(`HEAL ${p.label}`);
      } else {
        keep.push(p);
      }
    }
    this.partitions = keep;
  }

  /** End of the fault schedule: heal everything, restart everyone, network without loss. */
  private calmDown(): void {
    this.phase = 'calm';
    this.say('--- faults stop: network healed, all nodes restarting ---');
    for (const p of this.partitions) for (const [a, b] of p.links) this.network.restore(a, b);
    this.partitions = [];
    this.network.conditions = CALM_NETWORK;
    if (this.config.mutation === 'neverHeal') {
      for (const a of this.ids) for (const b of this.ids) if (a !== b) this.network.cut(a, b);
    }
    for (const d of this.nodes) if (d.run === null && d.provisioned && !d.retired) d.restartAt = this.now + 1;
  }

  // ------------------------------------------------------------------ clients

  private readTimeout(): number {
    return 2 * this.config.electionTicks * this.config.stepsPerTick;
  }

  private clientActions(): void {
    const f = this.config.faults;
    const r = this.clientRandom;
    const retryAfter = this.readTimeout();
    if (this.now % 16 === 0) this.clients.retryStuck(this.now, retryAfter);
    if (r.chance(f.propose)) this.propose();
    if (this.phase === 'faults') {
      if (r.chance(f.read)) {
        const d = r.pick(this.nodes);
        if (d.run !== null) this.requestRead(d);
      }
    } else {
      this.calmReads(retryAfter);
    }
  }

  /** A client command through a node's driver, as the server proposes: answered once applied, or refused. */
  private propose(): void {
    const r = this.clientRandom;
    const created = this.clients.created;
    const command = this.clients.nextCommand(this.phase === 'faults' || this.calmNewCommands > 0);
    if (command === null) return;
    if (this.phase === 'calm' && this.clients.created > created) this.calmNewCommands--;
    const leaders = this.nodes.filter((d) => d.raft?.status().role === 'leader');
    // Mostly to a leader; sometimes to anyone, which exercises the notLeader answer.
    const target = leaders.length > 0 && !r.chance(0.1) ? r.pick(leaders) : r.pick(this.nodes);
    const run = target.run;
    if (run === null) return;
    this.stats.proposals++;
    const before = run.raft.lastIndex();
    const answer = run.driver.propose(encodeCommand(command));
    const accepted = run.raft.lastIndex() > before;
    this.trace.mix(accepted ? run.raft.lastIndex() : 0);
    this.say(`${target.id} propose c${command} -> ${accepted ? `accepted at ${run.raft.lastIndex()}` : 'refused'}`);
    this.clients.onProposed(target.id, command, this.now);
    answer.then(
      (applied) => this.noting(() => this.answered(target, command, applied)),
      () => this.noting(() => this.clients.onRejected(target.id, command, accepted)),
    );
  }

  /** A driver answered a proposal: the client now counts on it. */
  private answered(d: SimNode, command: number, applied: SimApplied): void {
    const outcome = this.clients.onAnswered(d.id, command, applied);
    const { index, term } = applied.entry;
    if (outcome.kind === 'mismatch') {
      this.checker.fail(
        'acknowledgedWriteLost',
        `${d.id} answered the proposal of c${outcome.expected} with (index ${index}, term ${term}), which holds ${outcome.got === null ? 'a non-command' : `c${outcome.got}`}`,
      );
    }
    this.say(`${d.id} answered c${command}: applied at (${index}, ${term})`);
    this.checker.observeAcknowledged(d.id, applied.entry);
  }

  /** A linearizable read through the node's driver: under its lease if that covers now, else a ReadIndex round. */
  private requestRead(d: SimNode): string {
    const run = d.run!;
    const context = `r${++this.readCounter}`;
    this.checker.observeReadRequest(d.id, context);
    this.stats.readsRequested++;
    const leaseReadsBefore = run.driver.linearizableReads.lease;
    const answer = run.driver.readIndex(this.readTimeout());
    const leased = run.driver.linearizableReads.lease > leaseReadsBefore;
    if (leased) this.stats.leaseReads++;
    this.say(`${d.id} read ${context}${leased ? ' under its lease' : ''} (committed anywhere: ${this.checker.highestCommitIndex})`);
    answer.then(
      (index) =>
        this.noting(() => {
          this.say(`${d.id} read ${context} answered at index ${index}`);
          this.checker.observeReadState(d.id, { context, index });
          this.stats.readsAnswered++;
          if (run.alive && d.calmReads.has(context)) d.calmReadAnswered = true;
        }),
      () => undefined, // timed out or refused: the client asks again
    );
    return context;
  }

  /**
   * Every step, for every node, the index a lease read would get now (the driver's own
   * leaseIndex), checked against the whole cluster: any moment a stale lease would be
   * trusted is caught, whether or not a client happened to read then.
   */
  private checkLeases(): void {
    for (const d of this.nodes) {
      const run = d.run;
      if (run === null) continue;
      const index = run.driver.leaseIndex();
      if (index === null) continue;
      this.checker.observeLeaseRead(d.id, run.raft.status().term, index);
      this.stats.leaseSteps++;
    }
  }

  /** In the calm phase every member must answer one read; unanswered ones are asked again after a while. */
  private calmReads(retryAfter: number): void {
    const members = this.finalMembers();
    if (members === null) return;
    for (const d of members) {
      if (d.run === null || d.calmReadAnswered) continue;
      if (d.calmReadAskedAt < 0 || this.now - d.calmReadAskedAt >= retryAfter) {
        d.calmReads.add(this.requestRead(d));
        d.calmReadAskedAt = this.now;
      }
    }
  }

  // ------------------------------------------------------------------ network and time

  private deliverDueMessages(): void {
    const batch = this.network.takeDue(this.now);
    if (batch === undefined) return;
    for (const m of batch) {
      const d = this.nodes[this.slotOf(m.to)]!;
      if (this.network.isCut(m.from, m.to)) {
        this.network.stats.cutOff++;
        continue;
      }
      if (d.run === null) continue;
      this.network.stats.delivered++;
      this.trace.mix(MESSAGE_CODE[m.type]);
      this.trace.mix(this.slotOf(m.from) * 8 + d.slot);
      this.trace.mix(m.term);
      if (this.log !== null) this.say(`deliver ${describeMessage(m)}`);
      if (m.type === 'readIndex') this.deliverReadRequest(d, d.run, m);
      else d.run.driver.step(m);
    }
  }

  private stepSessions(): void {
    if (this.sessions === null) return;
    this.sessions.step();
    const s = this.sessions.stats;
    Object.assign(this.stats, { sessionsOpened: s.opened, sessionsExpired: s.expired, sessionsMoved: s.moved, livenessAcks: s.acknowledged, sessionsKeptAlive: s.keptAlive });
  }

  /**
   * A member's ReadIndex request reaches `d`. If its driver answers at once under its lease, the
   * answer (the commit index now) is checked against the whole cluster at this moment: no leader
   * of a later term, nothing committed anywhere above it. The member's reads began before this,
   * so none of them can get an index below a write committed before it began.
   */
  private deliverReadRequest(d: SimNode, run: Incarnation, m: Extract<Message, { type: 'readIndex' }>): void {
    const before = run.driver.memberReadsAnsweredUnderLease;
    const index = run.driver.leaseIndex();
    run.driver.step(m);
    if (run.driver.memberReadsAnsweredUnderLease === before) return;
    this.stats.memberLeaseReads++;
    this.say(`${d.id} answered ${m.from}'s read ${m.context} under its lease at index ${index}`);
    this.checker.observeMemberLeaseAnswer(d.id, m.from, run.raft.status().term, index!);
  }

  private tickNodes(): void {
    const { stepsPerTick, faults } = this.config;
    for (const d of this.nodes) {
      const ticker = d.run?.clock.ticker;
      if (ticker == null || (this.now + d.tickPhase) % stepsPerTick !== 0) continue;
      // A clock may run late without bound (ticks skipped), but makes up at most one skipped tick:
      // no clock counts more than one tick beyond real time. Leases assume exactly that (docs/raft.md).
      let ticks = 1;
      if (this.phase === 'faults' && faults.clockSkew > 0 && this.faultRandom.chance(faults.clockSkew)) {
        ticks = d.owesTick && this.faultRandom.chance(0.5) ? 2 : 0;
        d.owesTick = ticks === 0;
      }
      for (let i = 0; i < ticks; i++) ticker();
    }
  }

  // ------------------------------------------------------------------ the driver's world: storage, state machine, snapshots

  /** Completes the I/O of `run` that is due, in the order it was issued; whether any was. */
  private completeDueIo(run: Incarnation): boolean {
    if (run.io.length === 0) return false;
    const due = run.io.filter((j) => j.dueAt <= this.now);
    if (due.length === 0) return false;
    run.io = run.io.filter((j) => j.dueAt > this.now);
    due.sort((a, b) => a.dueAt - b.dueAt || a.seq - b.seq);
    for (const job of due) if (run.alive) job.complete();
    return true;
  }

  private scheduleIo(run: Incarnation, dueAt: number, complete: () => void): void {
    run.io.push({ dueAt, seq: this.ioSeq++, complete });
  }

  /** The driver's LogStorage: each write lands after a random delay; a crash before it loses it. */
  private storage(d: SimNode, run: Incarnation): LogStorage {
    return {
      load: async () => d.store.load(),
      persist: (hardState, entries) =>
        new Promise<void>((resolve, reject) => {
          if (!run.alive) return; // a dead process's write never completes
          const delay = this.ioRandom.int(this.config.maxIoDelay + 1);
          const dueAt = Math.max(this.now + delay, run.lastWriteDue);
          run.lastWriteDue = dueAt;
          // The mutation: a write-back cache tells the driver at once; the write lands later, or never.
          const early = this.config.mutation === 'sendBeforePersist';
          if (early) resolve();
          run.unlandedWrites++;
          if (this.log !== null) {
            this.say(`${d.id} write: hs=${hardState === null ? '-' : `${hardState.term}/${String(hardState.vote)}/${hardState.commit}`} entries=${describeRange(entries)} io=${dueAt - this.now}`);
          }
          this.scheduleIo(run, dueAt, () => {
            run.unlandedWrites--;
            this.completeWrite(d, hardState, entries, early ? null : { resolve, reject });
            if (run.unlandedWrites === 0 && run.alive) for (const go of run.whenLanded.splice(0)) go();
          });
        }),
      compact: async (meta) => this.guard(() => this.compactStore(d, meta)),
      close: async () => undefined,
    };
  }

  private completeWrite(d: SimNode, hardState: HardState | null, entries: readonly Entry[], waiting: { resolve(): void; reject(err: unknown): void } | null): void {
    try {
      d.store.persist(hardState, entries);
    } catch (err) {
      if (err instanceof StorageError && err.code === 'io') {
        this.stats.writeFailures++;
        this.say(`${d.id} write FAILED`);
        if (waiting !== null) waiting.reject(err);
        else this.crash(d, 'write failed after it was acknowledged');
        return;
      }
      this.checker.fail('driverContract', `${d.id}'s Ready could not be persisted: ${String(err)}`);
    }
    const first = entries[0];
    if (first !== undefined) this.checker.observeEntries(`${d.id}'s durable log`, first.index - 1, d.store.termAt(first.index - 1), entries);
    if (hardState !== null) this.checker.observeDurableHardState(d.id, hardState);
    waiting?.resolve();
  }

  private compactStore(d: SimNode, meta: SnapshotMeta): void {
    try {
      d.store.compact(meta);
    } catch (err) {
      this.checker.fail('driverContract', `${d.id}'s storage refused compaction to ${meta.index}: ${String(err)}`);
    }
    this.stats.compactions++;
    this.trace.mix(0xc0c0);
    this.trace.mix(meta.index);
    if (this.log !== null) this.say(`${d.id} compacted its log to ${meta.index}@${meta.term}`);
  }

  /** The driver's apply: committed entries go into the durable simulated state machine, in order. */
  private apply(d: SimNode, run: Incarnation, entries: readonly Entry[], applied: (entry: Entry, result: SimApplied) => void): Promise<void> {
    if (!run.alive) return new Promise(() => undefined); // a dead process applies nothing
    if (this.config.mutation === 'sendBeforePersist' && run.unlandedWrites > 0) {
      // The mutation is about what the driver says too early, not what it applies: that waits for the disk.
      return new Promise((resolve) => run.whenLanded.push(() => resolve(this.apply(d, run, entries, applied))));
    }
    this.guard(() => {
      for (const e of entries) {
        if (d.store.termAt(e.index) !== e.term) {
          this.checker.fail(
            'driverContract',
            `${d.id} was asked to apply (index ${e.index}, term ${e.term}) but its durable log holds ${String(d.store.termAt(e.index))} there`,
          );
        }
        this.checker.observeApply(d.id, e);
        d.sm.apply(e);
        this.checker.observeStateDigest(d.id, e.index, d.sm.digest);
        this.trace.mix(d.slot);
        this.trace.mix(e.index);
        this.trace.mix(e.term);
        if (e.kind === 'config') this.noteConfigApplied(e);
        this.clients.onApplied(e);
        applied(e, { entry: e, command: e.kind === 'command' ? decodeCommand(e.data) : null });
      }
      if (entries.length > 0) this.say(`${d.id} applied ${describeRange(entries)}`);
    });
    return Promise.resolve();
  }

  private snapshotIO(d: SimNode, run: Incarnation): SnapshotIO<SimStaged> {
    return {
      capture: () =>
        new Promise<CapturedState>((resolve) => {
          if (!run.alive) return;
          const state = d.sm.capture();
          // The off-by-one mutation labels the state with the index before the one it reflects.
          const index = this.config.mutation === 'snapshotOffByOne' ? state.applied - 1 : state.applied;
          const data = Buffer.from(encodeState({ ...state, applied: index }, this.config.snapshots.paddingBytes));
          const delay = this.ioRandom.int(this.config.maxIoDelay + 1); // capturing takes a moment
          this.say(`${d.id} captures its state at ${index}: ${data.length} bytes`);
          this.trace.mix(0x5a9);
          this.trace.mix(index);
          this.scheduleIo(run, this.now + delay, () => resolve({ index, chunks: () => this.chunks(run, data), release: async () => undefined }));
        }),
      staging: simStaging,
      install: (meta, staged) => new Promise<void>((resolve, reject) => this.guard(() => this.beginInstall(d, run, meta, staged, resolve, reject))),
      discard: () => undefined,
    };
  }

  /** A captured state in chunks, paced as a transport's queue would pace them. */
  private async *chunks(run: Incarnation, data: Buffer): AsyncGenerator<Buffer> {
    const { chunkBytes, chunkGapSteps } = this.config.snapshots;
    for (let at = 0; at < data.length; at += chunkBytes) {
      if (at > 0 && chunkGapSteps > 0) await new Promise<void>((resolve) => run.clock.after(chunkGapSteps, resolve));
      yield data.subarray(at, at + chunkBytes);
    }
  }

  /** Receiver: the driver installs a complete snapshot the core asked for; the write lands after a delay. */
  private beginInstall(d: SimNode, run: Incarnation, meta: SnapshotMeta, staged: SimStaged, resolve: () => void, reject: (err: unknown) => void): void {
    if (!run.alive) return;
    let state: SimState;
    try {
      state = decodeState(staged.data);
    } catch (err) {
      if (err instanceof SnapshotFormatError) this.checker.fail('driverContract', `${d.id} was asked to install an undecodable snapshot: ${err.message}`);
      throw err;
    }
    if (state.applied !== meta.index) {
      this.checker.fail('driverContract', `${d.id} was asked to install a state of index ${state.applied} under meta index ${meta.index}`);
    }
    if (!sameConfig(meta.config, state.config)) {
      this.checker.fail(
        'stateMachineSafety',
        `the snapshot of index ${meta.index} for ${d.id} carries config ${JSON.stringify(meta.config)} in its meta, but its state has ${JSON.stringify(state.config)}`,
      );
    }
    const delay = this.ioRandom.int(this.config.maxIoDelay + 1);
    this.say(`${d.id} INSTALLING snapshot ${meta.index} (io=${delay})`);
    this.scheduleIo(run, this.now + delay, () => this.completeInstall(d, run, meta, state, resolve, reject));
  }

  private completeInstall(d: SimNode, run: Incarnation, meta: SnapshotMeta, state: SimState, resolve: () => void, reject: (err: unknown) => void): void {
    const crashChance = this.phase === 'faults' ? this.config.snapshots.installCrash : 0;
    const powerLoss = crashChance > 0 && this.faultRandom.chance(crashChance) ? (this.faultRandom.chance(0.5) ? 'before' : 'after') : null;
    if (powerLoss === 'before') {
      this.stats.installCrashes++;
      this.crash(d, 'power loss before the snapshot install write');
      return;
    }
    // State machine and log reset in one durable write: either both or neither.
    try {
      d.store.installSnapshot(meta);
    } catch (err) {
      if (err instanceof StorageError && err.code === 'io') {
        this.stats.writeFailures++;
        reject(err);
        return;
      }
      this.checker.fail('driverContract', `${d.id} could not install snapshot ${meta.index}: ${String(err)}`);
    }
    d.sm.restore(state);
    this.checker.observeInstall(d.id, meta.index, state.digest);
    this.stats.snapshotsInstalled++;
    this.trace.mix(0x1457);
    this.trace.mix(d.slot);
    this.trace.mix(meta.index);
    if (powerLoss === 'after') {
      this.stats.installCrashes++;
      this.crash(d, 'power loss after the snapshot install write');
      return;
    }
    run.installed = meta;
    this.say(`${d.id} INSTALLED snapshot ${meta.index}@${meta.term}`);
    resolve();
  }

  private onSnapshotEvent(d: SimNode, e: SnapshotEvent): void {
    switch (e.kind) {
      case 'sent':
        this.stats.snapshotsSent++;
        this.say(`${d.id} sent snapshot ${e.index} to ${String(e.peer)} (${String(e.bytes)} bytes)`);
        break;
      case 'failed':
        this.stats.snapshotsAborted++;
        this.say(`${d.id} snapshot stream to ${String(e.peer)} stopped: ${String(e.error)}`);
        break;
      case 'refused':
        // Chunks are never corrupted here, and streams under one key carry the same bytes.
        this.checker.fail('driverContract', `${d.id} refused a snapshot stream from ${String(e.peer)}: ${String(e.error)}`);
        break;
      default:
        break;
    }
  }

  // ------------------------------------------------------------------ watching the core

  /** What the simulator checks around each call into `run`'s core (see observed-node.ts). */
  private watch(d: SimNode, run: Incarnation): CoreWatch {
    return {
      call: (what, fn) =>
        this.guard(() => {
          const result = this.callCore(d, what, fn);
          if (run.alive) this.observe(d);
          return result;
        }),
      onReady: (rd) => this.guard(() => run.alive && this.onReady(d, run, rd)),
      onAdvance: (rd) =>
        this.guard(() => {
          if (run.alive && rd.committedEntries.some((e) => e.kind === 'config')) this.checkConfigMatchesStateMachine(d, 'after applying a config entry');
        }),
      onCompact: (index, meta) => this.guard(() => run.alive && this.checkCompaction(d, index, meta)),
      onSnapshotMeta: (index, meta) => this.guard(() => run.alive && this.checkSnapshotMeta(d, index, meta)),
      shouldInstall: (m, wanted) => this.guard(() => this.shouldInstall(d, m, wanted)),
      onSnapshotStepped: (m) => this.guard(() => run.alive && this.checkSnapshotAdopted(d, run, m)),
    };
  }

  private onReady(d: SimNode, run: Incarnation, rd: Ready): void {
    if (rd.hardState !== null) this.checker.observeTerm(rd.hardState.term);
    const first = rd.entries[0];
    if (first !== undefined) this.checker.observeEntries(`${d.id}'s new entries`, first.index - 1, run.raft.termAt(first.index - 1), rd.entries);
    for (const m of rd.messages) if (m.from !== d.id) this.checker.fail('driverContract', `${d.id}'s Ready holds a message from ${m.from}`);
    this.stats.snapshotsRequested += rd.snapshotRequests.length;
    if (this.log !== null) {
      this.say(
        `${d.id} ready: hs=${rd.hardState === null ? '-' : `${rd.hardState.term}/${String(rd.hardState.vote)}/${rd.hardState.commit}`} ` +
          `entries=${describeRange(rd.entries)} msgs=${rd.messages.length} apply=${describeRange(rd.committedEntries)}` +
          (rd.snapshotRequests.length > 0 ? ` snapshots for ${rd.snapshotRequests.map((s) => s.to).join(',')}` : ''),
      );
    }
  }

  private checkCompaction(d: SimNode, index: number, meta: SnapshotMeta): void {
    const stored = d.store.termAt(index);
    if (meta.index !== index || meta.term !== stored) {
      this.checker.fail('driverContract', `${d.id}'s compact(${index}) returned (index ${meta.index}, term ${meta.term}); its durable log holds ${String(stored)} there`);
    }
    if (index === d.sm.applied && !sameConfig(meta.config, d.sm.config)) {
      this.checker.fail(
        'stateMachineSafety',
        `${d.id}'s compact(${index}) records config ${JSON.stringify(meta.config)}, but its state machine there has ${JSON.stringify(d.sm.config)}`,
      );
    }
  }

  private checkSnapshotMeta(d: SimNode, index: number, meta: SnapshotMeta | null): void {
    if (meta === null) return;
    const stored = d.store.termAt(index);
    if (meta.index !== index || meta.term !== stored) {
      this.checker.fail('driverContract', `${d.id}'s snapshotMetaAt(${index}) gave (index ${meta.index}, term ${meta.term}); its durable log holds ${String(stored)} there`);
    }
  }

  /** The core's answer to whether a complete snapshot should be installed (overruled by the installStaleSnapshot mutation). */
  private shouldInstall(d: SimNode, m: SnapshotRequest, wanted: boolean): boolean {
    this.stats.snapshotsReceived++;
    this.say(`${d.id} received snapshot ${m.meta.index}@${m.meta.term} from ${m.from} (term ${m.term}): ${wanted ? 'install' : 'not needed'}`);
    if (wanted || this.config.mutation === 'installStaleSnapshot') return true;
    this.stats.snapshotsIgnored++;
    this.trace.mix(0x1960);
    return false;
  }

  /** After installing, the driver steps the snapshot in: the core must adopt exactly what was installed. */
  private checkSnapshotAdopted(d: SimNode, run: Incarnation, m: SnapshotRequest): void {
    const meta = run.installed;
    if (meta === null || meta.index !== m.meta.index) return;
    run.installed = null;
    const st = run.raft.status();
    if (run.raft.logStart() !== meta.index || st.commit !== meta.index || st.applied !== meta.index) {
      this.checker.fail(
        'driverContract',
        `${d.id} installed snapshot ${meta.index} but its core did not adopt it: log start ${run.raft.logStart()}, commit ${st.commit}, applied ${st.applied}`,
      );
    }
    this.checkConfigMatchesStateMachine(d, `after installing snapshot ${meta.index}`);
  }

  private noteConfigApplied(e: Entry): void {
    let change: ConfigChange;
    try {
      change = decodeConfigChange(e.data);
    } catch {
      return; // a malformed change is a no-op in the core too
    }
    if (change.type === 'remove' && !this.toRetire.includes(change.node)) this.toRetire.push(change.node);
  }

  /** The core's configuration is the one its state machine's applied entries lead to. */
  private checkConfigMatchesStateMachine(d: SimNode, when: string): void {
    const config = d.raft!.status().config;
    if (!sameConfig(config, d.sm.config)) {
      this.checker.fail(
        'stateMachineSafety',
        `${d.id}'s core has config ${JSON.stringify(config)} ${when}, but its state machine (applied ${d.sm.applied}) has ${JSON.stringify(d.sm.config)}`,
      );
    }
  }

  /** A message leaves the node: the moment it counts as said (a vote is granted when its answer is sent). */
  private send(d: SimNode, m: Message): void {
    this.checker.observeTerm(m.term);
    switch (m.type) {
      case 'app':
        this.observeLeaderMessage(d, m.term);
        this.checker.observeEntries(`${m.from}->${m.to} append`, m.prevIndex, m.prevTerm, m.entries);
        break;
      case 'snapshot':
        if (m.chunk.length > 0) this.stats.snapshotChunks++;
        this.observeLeaderMessage(d, m.term);
        break;
      case 'heartbeat':
      case 'timeoutNow':
        this.observeLeaderMessage(d, m.term);
        break;
      case 'readIndexResp':
        if (m.index > 0) this.observeLeaderMessage(d, m.term);
        break;
      case 'voteResp':
        if (!m.reject) this.checker.observeVoteGranted(m.from, m.to, m.term);
        break;
      default:
        break;
    }
    this.network.send(m, this.now);
  }

  /** Only leaders send these; the sender's log is checked only while it still leads that term. */
  private observeLeaderMessage(d: SimNode, term: number): void {
    const st = d.raft?.status();
    const stillLeading = st !== undefined && st.role === 'leader' && st.term === term;
    this.checker.observeLeader(d.id, term, stillLeading ? d.raft : null);
  }

  // ------------------------------------------------------------------ observation

  /** After every call into a node: its role, term and commit index go to the checker. */
  private observe(d: SimNode): void {
    const raft = d.raft;
    if (raft === null) return;
    const st: Status = raft.status();
    this.checker.observeTerm(st.term);
    this.checker.observeCommit(d.id, st.commit);
    if (st.commit > st.lastIndex) this.checker.fail('driverContract', `${d.id}'s commit index ${st.commit} is beyond its last index ${st.lastIndex}`);
    if (st.role === 'leader') {
      if (!this.leaderTermsSeen.has(st.term)) {
        this.leaderTermsSeen.add(st.term);
        this.say(`${d.id} is LEADER of term ${st.term} (last index ${st.lastIndex}, commit ${st.commit})`);
      }
      this.checker.observeLeader(d.id, st.term, raft);
    }
  }

  /** Runs one call into the core; an exception from the core is a failure of the run, with its position. */
  private callCore<T>(d: SimNode, what: string, call: () => T): T {
    try {
      return call();
    } catch (err) {
      if (err instanceof InvariantViolation) throw err;
      const detail = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      this.checker.fail('driverContract', `RaftNode ${d.id} threw in ${what}: ${detail}`);
    }
  }

  /**
   * The members of the configuration of the one node that leads (all of them must converge),
   * or null when not exactly one node leads.
   */
  private finalMembers(): SimNode[] | null {
    const leaders = this.nodes.filter((d) => d.raft?.status().role === 'leader');
    if (leaders.length !== 1) return null;
    const { voters, learners } = leaders[0]!.raft!.status().config;
    return [...voters, ...learners].map((id) => this.nodes[this.slotOf(id)]!);
  }

  private convergenceView(): ConvergenceView {
    // Without a single leader, show every running node, so the problem names the contenders.
    const shown = (this.finalMembers() ?? this.nodes.filter((d) => d.run !== null)).filter((d) => !d.keptDown);
    const leader = shown.find((d) => d.raft?.status().role === 'leader')?.raft?.status() ?? null;
    const nodes = shown.map((d): ConvergenceNode => {
      const st = d.raft?.status();
      return {
        id: d.id,
        up: st !== undefined,
        role: st?.role ?? 'down',
        term: st?.term ?? 0,
        leader: st?.leader ?? null,
        commit: st?.commit ?? 0,
        lastIndex: st?.lastIndex ?? 0,
        applied: d.sm.applied,
        digest: d.sm.digest,
        matchAtLeader: leader?.progress[d.id]?.match ?? null,
      };
    });
    return {
      nodes,
      pendingCommands: this.clients.uncommitted,
      unansweredReads: shown.filter((d) => !d.calmReadAnswered).map((d) => d.id),
    };
  }

  private collectStats(): SimStats {
    const net = this.network.stats;
    return {
      ...this.stats,
      leaderTerms: this.leaderTermsSeen.size,
      acknowledged: this.clients.acknowledged,
      lostProposals: this.clients.lost,
      committed: this.checker.committedCount,
      messagesSent: net.sent,
      messagesLost: net.lost,
      messagesDuplicated: net.duplicated,
      messagesCutOff: net.cutOff,
    };
  }

  private slotOf(id: NodeId): number {
    const slot = this.ids.indexOf(id);
    if (slot < 0) this.checker.fail('driverContract', `message addressed to unknown node ${id}`);
    return slot;
  }

  private where(): string {
    const c = this.config;
    return `  seed=${c.seed} nodes=${c.nodeCount} step=${this.now} (${this.phase} phase)\n  replay: ${c.replayCommand}`;
  }

  private say(line: string): void {
    if (this.log !== null) this.log(`[${this.now}] ${line}`);
  }
}
