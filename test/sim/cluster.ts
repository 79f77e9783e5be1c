// The deterministic cluster simulator: 3 or 5 RaftNodes, a simulated network,
// simulated disks and clients, all in virtual time and all driven by one seed.
//
// One step is one unit of virtual time. In each step: faults and client actions
// happen, due messages are delivered, nodes tick, due I/O jobs complete, nodes
// with work hand out a Ready, and the safety checker has seen every state.
//
// Ready handling is an asynchronous I/O job, as in the real driver: the Ready's
// writes land after a random delay; a leader's 'app' messages may leave at once
// or after the write (coin flip), everything else only after; then committed
// entries are applied and advance() is called. A crash drops the pending job
// (the unsynced write and the held-back messages) and the node's memory; the
// restarted node is rebuilt from its storage. The simulated state machine is
// durable with its applied index (as the real one: entry and applied index in
// one LevelDB batch), so a restarted node resumes applying at applied + 1.
//
// Snapshots (modelled on the real driver, src/raft/driver.ts): after a node's
// Ready loop goes idle it may compact its log up to what its state machine has
// applied (a per-seed policy, plus random compactions). A leader's Ready may ask
// for a snapshot for a follower: the driver captures its state machine, gets the
// meta from the core and streams the state in chunks over the lossy network,
// then reports the stream sent. The receiver assembles the chunks with the real
// SnapshotAssembler; when one is complete and no Ready is outstanding, it asks the
// core whether to install, then freezes the core (no ticks, messages held) while
// the install write lands, durably replaces its state machine and resets its log
// in one write, and steps the snapshot message in. Power may fail before or after
// that write.
//
// Membership: beyond the initial 3 or 5 voters there are spare node slots. A
// leader sometimes proposes a single-server change (add a learner, promote a
// caught-up learner, remove a voter or learner); a spare is provisioned with
// empty storage when it is added, and a node whose removal is committed is
// stopped for good (as an operator would), never re-added under the same id.

import { decodeConfigChange } from '../../src/raft/config.js';
import { RaftNode } from '../../src/raft/core.js';
import { SnapshotAssembler, SnapshotError } from '../../src/raft/state-transfer.js';
import { StorageError } from '../../src/raft/storage.js';
import {
  mayBeSentBeforePersist,
  type ClusterConfig,
  type ConfigChange,
  type Entry,
  type Message,
  type NodeId,
  type RaftOptions,
  type Ready,
  type SnapshotRequest,
  type Status,
} from '../../src/raft/types.js';
import { encodeCommand, SimClients } from './clients.js';
import type { SimConfig } from './config.js';
import { describeMessage, describeRange, MESSAGE_CODE } from './describe.js';
import { randomMembershipChange, randomPartition } from './faults.js';
import { TraceHash } from './hash.js';
import { convergenceProblem, InvariantViolation, SafetyChecker, type ConvergenceNode, type ConvergenceView, type LogView } from './invariants.js';
import { CALM_NETWORK, SimNetwork } from './network.js';
import { SimRandom } from './random.js';
import { SimLogStore } from './sim-storage.js';
import { SnapshotStream } from './snapshot-stream.js';
import { decodeState, encodeState, sameConfig, SimStateMachine, SnapshotFormatError, type SimState } from './state-machine.js';

/** Writes issued while a voter is kept down in the calm phase. */
const CALM_MINORITY_COMMANDS = 5;

interface IoJob {
  readonly ready: Ready;
  readonly dueAt: number;
  /** Messages that may only leave once the write is durable. */
  readonly held: readonly Message[];
}

/** Leader side: one snapshot being streamed to one follower; it stops if leadership moves on. */
interface OutgoingSnapshot {
  readonly stream: SnapshotStream;
  /** When its next chunk leaves. */
  nextAt: number;
}

/** Receiver side: a complete, verified snapshot. */
interface ReceivedSnapshot {
  readonly message: SnapshotRequest;
  readonly state: SimState;
}

interface InstallJob extends ReceivedSnapshot {
  readonly dueAt: number;
}

class NodeDriver {
  raft: RaftNode | null = null;
  /** Spare slots start unprovisioned: no process, no data, until a membership change adds them. */
  provisioned = false;
  /** Removed from the cluster (its removal was committed): stopped for good. */
  retired = false;
  /** Kept down in the calm phase to show that the majority goes on without it. */
  keptDown = false;
  incarnation = 0;
  job: IoJob | null = null;
  restartAt = 0;
  /** This node's end-of-run reads (retries included), when the last was asked, and whether one was answered. */
  readonly calmReads = new Set<string>();
  calmReadAskedAt = -1;
  calmReadAnswered = false;
  readonly sm: SimStateMachine;
  /** Chunks of the snapshot being received (memory: a crash loses them). */
  assembler = new SnapshotAssembler();
  /** A complete snapshot waiting for the Ready loop to go idle. */
  pendingInstall: ReceivedSnapshot | null = null;
  /** An install in progress: the core is frozen (no ticks, no calls) until it completes. */
  install: InstallJob | null = null;
  /** Messages that arrived during an install, stepped in once it is done. */
  held: Message[] = [];
  /** Leader: snapshot streams in progress, by follower. */
  readonly streams = new Map<NodeId, OutgoingSnapshot>();
  /** Leader: heartbeat round -> the step its Ready was taken (no later than it was sent); the lease is timed from it. */
  readonly roundSentAt = new Map<number, number>();
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

  /** Running, and not frozen by a snapshot install: clients and faults may call into its core. */
  get callable(): boolean {
    return this.raft !== null && this.install === null;
  }

  /** What a process loses when it stops: everything in memory. */
  forgetMemory(): void {
    this.raft = null;
    this.job = null;
    this.assembler = new SnapshotAssembler();
    this.pendingInstall = null;
    this.install = null;
    this.held = [];
    this.streams.clear();
    this.roundSentAt.clear();
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
  private readonly nodes: NodeDriver[] = [];
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
  /** New client commands still to be issued in the calm phase (the minority-down stage writes some). */
  private calmNewCommands = 0;
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
      this.nodes.push(new NodeDriver(id, slot, store, this.faultRandom.int(config.stepsPerTick), this.initialConfig));
    });
    for (const d of this.nodes.slice(0, config.nodeCount)) this.provision(d);
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
  run(): SimResult {
    while (this.now < this.config.faultSteps) this.step();
    this.calmDown();
    const calmStart = this.now;
    // A majority suffices: with one voter (maybe the leader) down for good, new writes and reads
    // still complete; then it comes back and catches up (by snapshot, if the others compacted).
    // While the membership never changed, any one voter is a minority of every configuration in
    // play, so it goes down at once: the rest must repair what the faults left on their own.
    // Otherwise (retired nodes, pending changes) only a converged cluster loses a voter.
    const early = this.config.calmMinorityDown && this.stats.configChanges === 0;
    if (early) this.runWithOneVoterDown(this.initialConfig.voters);
    this.converge('');
    if (this.config.calmMinorityDown && !early) {
      const leader = this.finalMembers()!.find((d) => d.raft!.status().role === 'leader')!;
      if (this.runWithOneVoterDown(leader.raft!.status().config.voters)) this.converge('');
    }
    this.stats.calmSteps = this.now - calmStart;
    const logs = new Map<NodeId, LogView>();
    for (const n of this.convergenceView().nodes) logs.set(n.id, this.nodes[this.slotOf(n.id)]!.raft!);
    this.checker.checkFinalLogs(logs);
    return { config: this.config, traceHash: this.trace.value, stats: this.collectStats() };
  }

  /** Both liveness stages (see run()), each within its bound from now. */
  private converge(label: string): void {
    for (const d of this.nodes) {
      d.calmReadAnswered = false; // every stage needs its own answered reads
      d.calmReadAskedAt = -1;
    }
    const bound = this.livenessBound();
    // At least one entry per round trip (message out, disk write, answer back).
    const perEntry = 2 * CALM_NETWORK.maxDelay + this.config.maxIoDelay + 1;
    const lastIndexes = this.nodes.filter((d) => d.raft !== null).map((d) => d.raft!.lastIndex());
    const backlog = Math.max(0, ...lastIndexes.map((last) => last - this.checker.highestCommitIndex));
    this.stepUntilConverged(
      false,
      this.now + bound + backlog * perEntry,
      `${bound} steps (${this.config.livenessElectionTimeouts} election timeouts) + ${backlog} uncommitted entries x ${perEntry} steps${label}`,
    );
    const view = this.convergenceView();
    const leaderCommit = view.nodes.find((n) => n.role === 'leader')!.commit;
    const lag = Math.max(0, ...view.nodes.map((n) => leaderCommit - n.applied));
    this.stepUntilConverged(true, this.now + bound + lag * perEntry, `${bound} steps + catching up ${lag} entries x ${perEntry} steps${label}`);
  }

  private livenessBound(): number {
    return this.config.livenessElectionTimeouts * this.config.electionTicks * this.config.stepsPerTick;
  }

  /**
   * One of `voters` (the voters of every configuration in play) is stopped, if the rest is
   * still a majority of at least two; the others converge with a few new writes; then it
   * comes back (the caller checks that everyone converges again). Returns whether it ran.
   */
  private runWithOneVoterDown(voters: readonly NodeId[]): boolean {
    if (voters.length < 3) return false;
    const victim = this.nodes[this.slotOf(this.faultRandom.pick(voters))]!;
    if (victim.raft !== null) this.crash(victim, 'kept down: the majority must go on without it');
    victim.keptDown = true;
    victim.restartAt = Number.POSITIVE_INFINITY;
    this.calmNewCommands = CALM_MINORITY_COMMANDS;
    this.converge(` while ${victim.id} stays down`);
    this.say(`${victim.id} comes back`);
    victim.keptDown = false;
    victim.restartAt = this.now + 1;
    return true;
  }

  private stepUntilConverged(caughtUp: boolean, deadline: number, what: string): void {
    for (;;) {
      const problem = convergenceProblem(this.convergenceView(), caughtUp);
      if (problem === null) return;
      if (this.now >= deadline) this.checker.fail('liveness', `not converged after faults stopped, within ${what}: ${problem}`);
      this.step();
    }
  }

  step(): void {
    this.now++;
    this.stats.steps++;
    if (this.phase === 'faults') this.injectFaults();
    this.restartDueNodes();
    this.healDuePartitions();
    this.clientActions();
    this.deliverDueMessages();
    this.checkLeases();
    this.tickNodes();
    this.completeDueJobs();
    this.pumpSnapshotStreams();
    this.pumpReadies();
    this.compactLogs();
    this.retireRemovedNodes();
  }

  // ------------------------------------------------------------------ node lifecycle

  private start(d: NodeDriver): void {
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
    const restored = { hardState: loaded.hardState, snapshot: loaded.snapshot, entries: loaded.entries, applied: d.sm.applied };
    d.raft = this.callCore(d, 'constructor', () => new RaftNode(options, restored));
    this.checker.observeRestart(d.id);
    this.checkConfigMatchesStateMachine(d, 'after a restart');
    this.observe(d);
  }

  /** A node joins (initial members, or a spare a membership change adds): fresh storage, first start. */
  private provision(d: NodeDriver): void {
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

  private crash(d: NodeDriver, why: string): void {
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

  private restartDueNodes(): void {
    for (const d of this.nodes) {
      if (d.raft === null && d.provisioned && !d.retired && d.restartAt <= this.now) {
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
      const up = this.nodes.filter((d) => d.raft !== null);
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
        const accepted = this.callCore(leader, 'transferLeadership', () => leader.raft!.transferLeadership(to));
        this.say(`${leader.id} transferLeadership(${to}) -> ${accepted}`);
        if (accepted) this.stats.transfers++;
        this.observe(leader);
      }
    }
    if (f.campaign > 0 && r.chance(f.campaign)) {
      const d = r.pick(this.nodes);
      if (d.callable) {
        this.say(`${d.id} campaign()`);
        this.callCore(d, 'campaign', () => d.raft!.campaign());
        this.observe(d);
      }
    }
    if (f.configChange > 0 && r.chance(f.configChange)) this.changeMembership();
    const suspicion = this.config.leaderSuspicion;
    if (suspicion > 0 && r.chance(suspicion)) {
      const d = r.pick(this.nodes);
      if (d.callable) {
        // Mostly the node's real leader (dead or alive), sometimes any other member; and sometimes
        // every node at once (a leader whose port rejects all peers while it runs: a firewall).
        const leader = d.raft!.status().leader;
        const peer = leader !== null && r.chance(0.8) ? leader : r.pick(this.ids.filter((id) => id !== d.id));
        const firewall = peer === leader && r.chance(0.3);
        if (firewall) this.cutOff(peer, `firewall rejects ${peer}`);
        const told = firewall ? this.nodes.filter((x) => x.callable && x.id !== peer) : [d];
        for (const x of told) {
          this.say(`${x.id} leaderUnreachable(${peer})`);
          this.callCore(x, 'leaderUnreachable', () => x.raft!.leaderUnreachable(peer));
          this.observe(x);
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
    const st = leader.raft!.status();
    const members = new Set([...st.config.voters, ...st.config.learners]);
    const outsiders = this.nodes.filter((d) => !members.has(d.id) && !d.retired).map((d) => d.id);
    const change = randomMembershipChange(r, st, outsiders, { minVoters: 3, maxVoters: this.config.nodeCount + 1 });
    if (change === null) return;
    const result = this.callCore(leader, 'proposeConfigChange', () => leader.raft!.proposeConfigChange(change));
    this.say(`${leader.id} proposeConfigChange(${change.type} ${change.node}) -> ${result.ok ? `accepted at ${result.index}` : result.reason}`);
    this.trace.mix(result.ok ? result.index : 0);
    if (result.ok) {
      this.stats.configChanges++;
      const target = this.nodes[this.slotOf(change.node)]!;
      if (change.type === 'addLearner' && !target.provisioned) this.provision(target);
    }
    this.observe(leader);
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
    for (const d of this.nodes) if (d.raft === null && d.provisioned && !d.retired) d.restartAt = this.now + 1;
  }

  // ------------------------------------------------------------------ clients

  private clientActions(): void {
    const f = this.config.faults;
    const r = this.clientRandom;
    const retryAfter = 2 * this.config.electionTicks * this.config.stepsPerTick;
    if (this.now % 16 === 0) this.clients.retryStuck(this.now, retryAfter);
    if (r.chance(f.propose)) this.propose();
    if (this.phase === 'faults') {
      if (r.chance(f.read)) {
        const d = r.pick(this.nodes);
        // As the real driver: a leader whose lease covers this moment answers at once, else a ReadIndex round.
        if (d.callable && !this.leaseRead(d)) this.requestRead(d);
      }
    } else {
      this.calmReads(retryAfter);
    }
  }

  private propose(): void {
    const r = this.clientRandom;
    const created = this.clients.created;
    const command = this.clients.nextCommand(this.phase === 'faults' || this.calmNewCommands > 0);
    if (command === null) return;
    if (this.phase === 'calm' && this.clients.created > created) this.calmNewCommands--;
    const leaders = this.nodes.filter((d) => d.raft?.status().role === 'leader');
    // Mostly to a leader; sometimes to anyone, which exercises the notLeader answer.
    const target = leaders.length > 0 && !r.chance(0.1) ? r.pick(leaders) : r.pick(this.nodes);
    if (!target.callable) return;
    this.stats.proposals++;
    const result = this.callCore(target, 'propose', () => target.raft!.propose(encodeCommand(command)));
    this.trace.mix(result.ok ? result.index : 0);
    if (result.ok) {
      this.say(`${target.id} propose c${command} -> accepted at (${result.index}, ${result.term})`);
      this.clients.onAccepted(target.id, command, result.index, result.term, this.now);
    } else {
      this.say(`${target.id} propose c${command} -> ${result.reason}`);
    }
    this.observe(target);
  }

  private requestRead(d: NodeDriver): string {
    const context = `r${++this.readCounter}`;
    this.checker.observeReadRequest(d.id, context);
    this.stats.readsRequested++;
    const accepted = this.callCore(d, 'readIndex', () => d.raft!.readIndex(context));
    this.say(`${d.id} readIndex(${context}) -> ${accepted} (committed anywhere: ${this.checker.highestCommitIndex})`);
    this.observe(d);
    return context;
  }

  /** A client's read under the leader lease; false when the lease does not cover now (then it takes a ReadIndex round). */
  private leaseRead(d: NodeDriver): boolean {
    const commit = this.leaseReadIndex(d);
    if (commit === null) return false;
    this.say(`${d.id} lease read at index ${commit} (committed anywhere: ${this.checker.highestCommitIndex})`);
    this.stats.leaseReads++;
    return true;
  }

  /**
   * The index a lease read would get on `d` now (RaftNode.leaseRound, timed as the real driver
   * times it: from the step the round's Ready was taken), checked against the whole cluster; null
   * when its lease does not cover now. Called for every node every step, so that any moment a
   * stale lease would be trusted is caught, whether or not a client happened to read then.
   */
  private leaseReadIndex(d: NodeDriver): number | null {
    const raft = d.raft!;
    const round = this.callCore(d, 'leaseRound', () => raft.leaseRound());
    if (round === null) return null;
    const sentAt = d.roundSentAt.get(round);
    const leaseTicks = this.config.mutation === 'leaseTooLong' ? 2 * this.config.electionTicks : raft.leaseTicks - 2;
    if (sentAt === undefined || this.now >= sentAt + leaseTicks * this.config.stepsPerTick) return null;
    const { term, commit } = raft.status();
    this.checker.observeLeaseRead(d.id, term, commit);
    return commit;
  }

  private checkLeases(): void {
    for (const d of this.nodes) {
      if (d.callable && this.leaseReadIndex(d) !== null) this.stats.leaseSteps++;
    }
  }

  /** In the calm phase every member must answer one read; unanswered ones are asked again after a while. */
  private calmReads(retryAfter: number): void {
    const members = this.finalMembers();
    if (members === null) return;
    for (const d of members) {
      if (!d.callable || d.calmReadAnswered) continue;
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
      if (d.raft === null) continue;
      this.network.stats.delivered++;
      this.trace.mix(MESSAGE_CODE[m.type]);
      this.trace.mix(this.slotOf(m.from) * 8 + d.slot);
      this.trace.mix(m.term);
      if (this.log !== null) this.say(`deliver ${describeMessage(m)}`);
      this.receive(d, m);
    }
  }

  /** A message reaches a running node's driver. */
  private receive(d: NodeDriver, m: Message): void {
    if (d.install !== null) {
      d.held.push(m); // the core holds still while its state is replaced
      return;
    }
    if (m.type === 'snapshot') {
      this.receiveSnapshotChunk(d, m);
      return;
    }
    this.callCore(d, `step(${m.type})`, () => d.raft!.step(m));
    this.observe(d);
  }

  private tickNodes(): void {
    const { stepsPerTick, faults } = this.config;
    for (const d of this.nodes) {
      // Time stands still for a core whose state is being replaced (as in the real driver).
      if (!d.callable || (this.now + d.tickPhase) % stepsPerTick !== 0) continue;
      // A clock may run late without bound (ticks skipped), but makes up at most one skipped tick:
      // no clock counts more than one tick beyond real time. Leases assume exactly that (docs/raft.md).
      let ticks = 1;
      if (this.phase === 'faults' && faults.clockSkew > 0 && this.faultRandom.chance(faults.clockSkew)) {
        ticks = d.owesTick && this.faultRandom.chance(0.5) ? 2 : 0;
        d.owesTick = ticks === 0;
      }
      for (let i = 0; i < ticks; i++) {
        this.callCore(d, 'tick', () => d.raft!.tick());
        this.observe(d);
      }
    }
  }

  // ------------------------------------------------------------------ Ready handling (the I/O jobs)

  private completeDueJobs(): void {
    for (const d of this.nodes) {
      if (d.job !== null && d.job.dueAt <= this.now) this.completeJob(d);
      if (d.install !== null && d.install.dueAt <= this.now) this.completeInstall(d);
    }
  }

  private pumpReadies(): void {
    for (const d of this.nodes) {
      // A zero-delay job completes at once, which may produce the next Ready; bound the loop.
      for (let round = 0; round < 8 && d.raft !== null && d.job === null && d.install === null; round++) {
        // As in the real driver, a received snapshot is installed before the next Ready is taken.
        if (d.pendingInstall !== null) {
          this.beginInstall(d);
          continue;
        }
        if (!this.callCore(d, 'hasReady', () => d.raft!.hasReady())) break;
        const job = this.takeReady(d);
        if (job.dueAt <= this.now) this.completeJob(d);
      }
    }
  }

  private takeReady(d: NodeDriver): IoJob {
    const raft = d.raft!;
    const rd = this.callCore(d, 'ready', () => raft.ready());
    if (rd.hardState !== null) this.checker.observeTerm(rd.hardState.term);
    const first = rd.entries[0];
    if (first !== undefined) this.checker.observeEntries(`${d.id}'s new entries`, first.index - 1, raft.termAt(first.index - 1), rd.entries);
    for (const rs of rd.readStates) {
      this.say(`${d.id} read state ${rs.context} at index ${rs.index}`);
      this.checker.observeReadState(d.id, rs);
      this.stats.readsAnswered++;
      if (d.calmReads.has(rs.context)) d.calmReadAnswered = true;
    }
    const held: Message[] = [];
    // Like a real driver, decide per Ready (not per message) whether the leader's appends go
    // out before the write: deciding per message would reorder even a FIFO link.
    const appendsEarly = this.ioRandom.chance(0.5);
    for (const m of rd.messages) {
      if (m.from !== d.id) this.checker.fail('driverContract', `${d.id}'s Ready holds a message from ${m.from}`);
      if (m.type === 'heartbeat' && !d.roundSentAt.has(Number(m.context))) d.roundSentAt.set(Number(m.context), this.now);
      const early = this.config.mutation === 'sendBeforePersist' || (appendsEarly && mayBeSentBeforePersist(m));
      if (early) this.send(d, m);
      else held.push(m);
    }
    // Nothing to write or apply: nothing to wait for (the real driver would not touch the disk).
    const idle = rd.hardState === null && rd.entries.length === 0 && rd.committedEntries.length === 0;
    const delay = idle ? 0 : this.ioRandom.int(this.config.maxIoDelay + 1);
    const job: IoJob = { ready: rd, dueAt: this.now + delay, held };
    d.job = job;
    if (this.log !== null) {
      this.say(
        `${d.id} ready: hs=${rd.hardState === null ? '-' : `${rd.hardState.term}/${String(rd.hardState.vote)}/${rd.hardState.commit}`} ` +
          `entries=${describeRange(rd.entries)} msgs=${rd.messages.length} (held ${held.length}) apply=${describeRange(rd.committedEntries)} io=${delay}`,
      );
    }
    return job;
  }

  private completeJob(d: NodeDriver): void {
    const job = d.job!;
    d.job = null;
    const rd = job.ready;
    if (rd.hardState !== null || rd.entries.length > 0) {
      try {
        d.store.persist(rd.hardState, rd.entries);
      } catch (err) {
        if (err instanceof StorageError && err.code === 'io') {
          this.stats.writeFailures++;
          this.crash(d, 'write failed');
          return;
        }
        this.checker.fail('driverContract', `${d.id}'s Ready could not be persisted: ${String(err)}`);
      }
      const first = rd.entries[0];
      if (first !== undefined) this.checker.observeEntries(`${d.id}'s durable log`, first.index - 1, d.store.termAt(first.index - 1), rd.entries);
      if (rd.hardState !== null) this.checker.observeDurableHardState(d.id, rd.hardState);
    }
    for (const m of job.held) this.send(d, m);
    let configApplied = false;
    for (const e of rd.committedEntries) {
      if (d.store.termAt(e.index) !== e.term) {
        this.checker.fail(
          'driverContract',
          `${d.id} was asked to apply (index ${e.index}, term ${e.term}) but its durable log holds ${String(d.store.termAt(e.index))} there`,
        );
      }
      d.sm.apply(e);
      this.checker.observeApply(d.id, e);
      this.checker.observeStateDigest(d.id, e.index, d.sm.digest);
      this.trace.mix(d.slot);
      this.trace.mix(e.index);
      this.trace.mix(e.term);
      if (e.kind === 'config') {
        this.noteConfigApplied(e);
        configApplied = true;
      }
      const outcome = this.clients.onApplied(d.id, e);
      if (outcome.kind === 'acknowledged') {
        this.checker.observeAcknowledged(d.id, e);
      } else if (outcome.kind === 'mismatch') {
        this.checker.fail(
          'acknowledgedWriteLost',
          `${d.id} accepted c${outcome.expected} at (index ${e.index}, term ${e.term}) but applied ${outcome.got === null ? 'a non-command' : `c${outcome.got}`} there`,
        );
      }
    }
    if (rd.committedEntries.length > 0) this.say(`${d.id} applied ${describeRange(rd.committedEntries)}`);
    this.callCore(d, 'advance', () => d.raft!.advance(rd));
    if (configApplied) this.checkConfigMatchesStateMachine(d, 'after applying a config entry');
    this.observe(d);
    // As the real driver: capture the state machine now that this Ready's entries are applied.
    for (const need of rd.snapshotRequests) this.startSnapshotStream(d, need.to);
  }

  /** The core's configuration is the one its state machine's applied entries lead to. */
  private checkConfigMatchesStateMachine(d: NodeDriver, when: string): void {
    const config = d.raft!.status().config;
    if (!sameConfig(config, d.sm.config)) {
      this.checker.fail(
        'stateMachineSafety',
        `${d.id}'s core has config ${JSON.stringify(config)} ${when}, but its state machine (applied ${d.sm.applied}) has ${JSON.stringify(d.sm.config)}`,
      );
    }
  }

  // ------------------------------------------------------------------ snapshots and compaction

  /** Leader: a Ready asked for a snapshot for `to`. Capture the state machine and start streaming it. */
  private startSnapshotStream(d: NodeDriver, to: NodeId): void {
    this.stats.snapshotsRequested++;
    const raft = d.raft;
    if (raft === null) return;
    if (d.streams.has(to)) {
      this.say(`${d.id} snapshot for ${to} requested while one is streaming: ignored`);
      return; // as the real driver: the stream in progress will report
    }
    const captured = d.sm.capture();
    // The off-by-one mutation labels the state with the index before the one it reflects.
    const index = this.config.mutation === 'snapshotOffByOne' ? captured.applied - 1 : captured.applied;
    const meta = this.callCore(d, 'snapshotMetaAt', () => raft.snapshotMetaAt(index));
    const st = raft.status();
    if (meta === null || st.role !== 'leader') {
      this.say(`${d.id} cannot snapshot for ${to} (meta ${meta === null ? 'none' : meta.index}, role ${st.role})`);
      this.callCore(d, 'reportSnapshot', () => raft.reportSnapshot(to, false));
      this.stats.snapshotsAborted++;
      this.observe(d);
      return;
    }
    const stored = d.store.termAt(index);
    if (meta.index !== index || meta.term !== stored) {
      this.checker.fail('driverContract', `${d.id}'s snapshotMetaAt(${index}) gave (index ${meta.index}, term ${meta.term}); its durable log holds ${String(stored)} there`);
    }
    if (this.config.mutation !== 'snapshotOffByOne' && !sameConfig(meta.config, captured.config)) {
      this.checker.fail(
        'stateMachineSafety',
        `${d.id}'s snapshotMetaAt(${index}) gives config ${JSON.stringify(meta.config)}, but its state machine there has ${JSON.stringify(captured.config)}`,
      );
    }
    const { paddingBytes, chunkBytes } = this.config.snapshots;
    const data = encodeState({ ...captured, applied: meta.index }, paddingBytes);
    const delay = this.ioRandom.int(this.config.maxIoDelay + 1); // capturing takes a moment
    const separateDone = this.ioRandom.chance(0.5);
    const stream = new SnapshotStream({ from: d.id, to, term: st.term, meta, data, chunkBytes, separateDone });
    d.streams.set(to, { stream, nextAt: this.now + delay });
    this.say(`${d.id} SNAPSHOT for ${to}: captured index ${meta.index}@${meta.term}, ${data.length} bytes`);
    this.trace.mix(0x5a9);
    this.trace.mix(meta.index);
  }

  /** Leaders send the next chunk of each stream that is due; a stream whose leader moved on stops. */
  private pumpSnapshotStreams(): void {
    for (const d of this.nodes) {
      if (d.raft === null || d.streams.size === 0) continue;
      for (const out of [...d.streams.values()]) {
        const { stream } = out;
        if (out.nextAt > this.now || d.raft === null) continue;
        const raft = d.raft;
        const st = raft.status();
        if (st.role !== 'leader' || st.term !== stream.term) {
          d.streams.delete(stream.to);
          this.say(`${d.id} snapshot stream to ${stream.to} stopped: no longer leader of term ${stream.term}`);
          this.callCore(d, 'reportSnapshot', () => raft.reportSnapshot(stream.to, false));
          this.stats.snapshotsAborted++;
          this.observe(d);
          continue;
        }
        for (const m of stream.nextMessages()) this.send(d, m);
        this.stats.snapshotChunks++;
        if (!stream.finished) {
          out.nextAt = this.now + this.config.snapshots.chunkGapSteps;
          continue;
        }
        d.streams.delete(stream.to);
        this.callCore(d, 'reportSnapshot', () => raft.reportSnapshot(stream.to, true));
        this.stats.snapshotsSent++;
        this.observe(d);
      }
    }
  }

  /** Receiver: chunks go to the assembler; a complete snapshot waits for the Ready loop to go idle. */
  private receiveSnapshotChunk(d: NodeDriver, m: SnapshotRequest): void {
    let data: Buffer | null;
    try {
      data = d.assembler.accept(`${m.from}/${m.term}/${m.meta.index}`, m.offset, m.chunk, m.done, m.checksum);
    } catch (err) {
      // Chunks are never corrupted here and streams with one key carry the same bytes.
      if (err instanceof SnapshotError) this.checker.fail('driverContract', `${d.id} rejected a snapshot stream from ${m.from}: ${err.message}`);
      throw err;
    }
    if (data === null) return;
    let state: SimState;
    try {
      state = decodeState(data);
    } catch (err) {
      if (err instanceof SnapshotFormatError) this.checker.fail('driverContract', `${d.id} received an undecodable snapshot: ${err.message}`);
      throw err;
    }
    if (state.applied !== m.meta.index) {
      this.checker.fail('driverContract', `snapshot from ${m.from} carries a state of index ${state.applied} but meta index ${m.meta.index}`);
    }
    this.stats.snapshotsReceived++;
    this.say(`${d.id} received snapshot ${m.meta.index}@${m.meta.term} from ${m.from} (term ${m.term})`);
    d.pendingInstall = { message: m, state };
  }

  /** No Ready is outstanding: ask the core, then freeze it while the install write lands. */
  private beginInstall(d: NodeDriver): void {
    const received = d.pendingInstall!;
    d.pendingInstall = null;
    const raft = d.raft!;
    const wanted = this.callCore(d, 'shouldInstallSnapshot', () => raft.shouldInstallSnapshot(received.message));
    if (!wanted && this.config.mutation !== 'installStaleSnapshot') {
      // As src/raft/driver.ts: nothing is installed, but the message is stepped in so the core
      // answers with its commit index (dropping it lost liveness: seed 4074).
      this.stats.snapshotsIgnored++;
      this.say(`${d.id} ignores snapshot ${received.message.meta.index} (commit ${raft.status().commit}, term ${raft.status().term})`);
      this.trace.mix(0x1960);
      this.callCore(d, 'step(snapshot)', () => raft.step({ ...received.message, chunk: new Uint8Array(0) }));
      this.observe(d);
      return;
    }
    const delay = this.ioRandom.int(this.config.maxIoDelay + 1);
    d.install = { ...received, dueAt: this.now + delay };
    this.say(`${d.id} INSTALLING snapshot ${received.message.meta.index} (io=${delay})`);
    if (delay === 0) this.completeInstall(d);
  }

  private completeInstall(d: NodeDriver): void {
    const { message, state } = d.install!;
    const { meta } = message;
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
        this.crash(d, 'snapshot install write failed');
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
    d.install = null;
    const raft = d.raft!;
    this.callCore(d, 'step(snapshot)', () => raft.step({ ...message, chunk: new Uint8Array(0) }));
    const st = raft.status();
    if (raft.logStart() !== meta.index || st.commit !== meta.index || st.applied !== meta.index) {
      this.checker.fail(
        'driverContract',
        `${d.id} installed snapshot ${meta.index} but its core did not adopt it: log start ${raft.logStart()}, commit ${st.commit}, applied ${st.applied}`,
      );
    }
    this.checkConfigMatchesStateMachine(d, `after installing snapshot ${meta.index}`);
    this.say(`${d.id} INSTALLED snapshot ${meta.index}@${meta.term}`);
    this.observe(d);
    const held = d.held;
    d.held = [];
    for (const m of held) if (d.raft !== null) this.receive(d, m);
  }

  /**
   * Idle nodes compact as the real driver does (policy), and in the fault phase one node
   * sometimes compacts to a random point its state machine holds.
   */
  private compactLogs(): void {
    const { policy, randomCompaction } = this.config.snapshots;
    if (policy !== null) {
      for (const d of this.nodes) {
        if (d.raft === null || d.job !== null || d.install !== null) continue;
        if (d.sm.applied - d.raft.logStart() >= policy.everyEntries + policy.keepEntries) this.compact(d, d.sm.applied - policy.keepEntries);
      }
    }
    if (randomCompaction > 0 && this.phase === 'faults' && this.faultRandom.chance(randomCompaction)) {
      const idle = this.nodes.filter((d) => d.raft !== null && d.job === null && d.install === null && d.sm.applied > d.raft.logStart());
      if (idle.length === 0) return;
      const d = this.faultRandom.pick(idle);
      this.compact(d, this.faultRandom.range(d.raft!.logStart() + 1, d.sm.applied));
    }
  }

  private compact(d: NodeDriver, index: number): void {
    const raft = d.raft!;
    const meta = this.callCore(d, `compact(${index})`, () => raft.compact(index));
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
    try {
      d.store.compact(meta);
    } catch (err) {
      this.checker.fail('driverContract', `${d.id}'s storage refused compaction to ${index}: ${String(err)}`);
    }
    this.stats.compactions++;
    this.trace.mix(0xc0c0);
    this.trace.mix(index);
    if (this.log !== null) this.say(`${d.id} compacted its log to ${index}@${meta.term}`);
    this.observe(d);
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

  /** A message leaves the node: the moment it counts as said (a vote is granted when its answer is sent). */
  private send(d: NodeDriver, m: Message): void {
    this.checker.observeTerm(m.term);
    switch (m.type) {
      case 'app':
        this.observeLeaderMessage(d, m.term);
        this.checker.observeEntries(`${m.from}->${m.to} append`, m.prevIndex, m.prevTerm, m.entries);
        break;
      case 'heartbeat':
      case 'snapshot':
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
  private observeLeaderMessage(d: NodeDriver, term: number): void {
    const st = d.raft?.status();
    const stillLeading = st !== undefined && st.role === 'leader' && st.term === term;
    this.checker.observeLeader(d.id, term, stillLeading ? d.raft : null);
  }

  // ------------------------------------------------------------------ observation

  /** After every call into a node: its role, term and commit index go to the checker. */
  private observe(d: NodeDriver): void {
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
  private callCore<T>(d: NodeDriver, what: string, call: () => T): T {
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
  private finalMembers(): NodeDriver[] | null {
    const leaders = this.nodes.filter((d) => d.raft?.status().role === 'leader');
    if (leaders.length !== 1) return null;
    const { voters, learners } = leaders[0]!.raft!.status().config;
    return [...voters, ...learners].map((id) => this.nodes[this.slotOf(id)]!);
  }

  private convergenceView(): ConvergenceView {
    // Without a single leader, show every running node, so the problem names the contenders.
    const shown = (this.finalMembers() ?? this.nodes.filter((d) => d.raft !== null)).filter((d) => !d.keptDown);
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
