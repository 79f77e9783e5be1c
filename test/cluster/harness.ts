// The fault-injection cluster: N real `vera start` processes on 127.0.0.1, each
// with its own temporary data directory, and a FaultProxy on every directed peer
// link, plus the faults the scenarios and the chaos runner inject (kill -9,
// restart, SIGSTOP/SIGCONT, partitions, one-way cuts, flapping, latency, a wiped
// data directory) and bounded waits on what the members report.
//
// How peer traffic reaches the proxies. Every member gets the SAME --peers list
// with the real peer ports: the cluster id is derived from that list, and the
// address book it seeds is replicated (config entries and snapshots carry it), so
// per-member lists would give each member its own cluster id and would leak one
// member's proxy addresses to the others. Instead each process is started with a
// small preload (NODE_OPTIONS=--require) that rewrites the port of every loopback
// TCP connection it DIALS from a peer's real port to the proxy of that directed
// link. Listening sockets and client ports are untouched. The harness checks the
// routing: every proxy must carry a connection before start() returns.
//
// Every wait is bounded; close() SIGCONTs, kills and removes everything.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { FaultProxy } from './fault-proxy.js';
import type { StatusBody } from '../../src/server/http/http-api.js';
import { pollUntil, withTimeout } from '../support/poll.js';
import { VeraProcess, type LogLine } from '../support/vera-process.js';

/** The server's Raft timing (src/server/node/vera-node.ts DEFAULT_RAFT_TIMING: 50 ms ticks, 20-tick elections). */
export const TICK_MS = 50;
/** Longest randomized election timeout: [electionTicks, 2*electionTicks) ticks. */
export const ELECTION_TIMEOUT_MAX_MS = 2 * 20 * TICK_MS;

/** A harness misuse or a wait that ran out; says what was expected. */
export class HarnessError extends Error {
  override readonly name = 'HarnessError';
}

export interface ClusterOptions {
  /** 3 or 5 members. */
  readonly size: number;
  /**
   * Members outside the first configuration (ids after the first `size`), with
   * their ports and proxies ready: addMember() starts one with --join and adds it.
   */
  readonly spares?: number;
  /** Extra `vera start` flags for every member (e.g. --snapshot-entries). */
  readonly args?: readonly string[];
  /** Keep the data directories after close() (to inspect a failure). */
  readonly keepData?: boolean;
}


export interface ListView {
  readonly index: number;
  readonly items: ReadonlyArray<{ readonly index: number; readonly owner: string | null; readonly data: unknown }>;
}

/** One fault (or repair) as it was injected, for reports. */
export interface FaultRecord {
  /** Date.now() when it was injected. */
  readonly at: number;
  readonly what: string;
}

/** 'absent': not a member (a spare not added yet, or a member removed); nothing restarts it. */
type MemberState = 'up' | 'down' | 'paused' | 'absent';

export interface Member {
  readonly index: number;
  readonly id: string;
  readonly clientPort: number;
  readonly peerPort: number;
  readonly dataDir: string;
  readonly url: string;
  readonly httpUrl: string;
}

interface Slot extends Member {
  proc: VeraProcess | null;
  state: MemberState;
  /** Extra flags of the next start (--join after a wipe-and-rejoin). */
  startArgs: readonly string[];
  /** Every process this slot ran, for logs. */
  readonly history: VeraProcess[];
}

/** Rewrites the port of dialed loopback connections (see the file comment); runs inside each `vera` process. */
const DIAL_SHIM = `'use strict';
// Written by test/cluster/harness.ts: routes this process's peer dials through fault proxies.
const net = require('node:net');
const routes = JSON.parse(process.env.VERA_TEST_DIAL_MAP || '{}');
const loopback = new Set([undefined, null, '', '127.0.0.1', 'localhost', '::ffff:127.0.0.1']);
const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function routedConnect(...args) {
  // net.connect() passes its normalized [options, callback] array as the only argument.
  const first = args[0];
  const options = Array.isArray(first) ? first[0] : first;
  if (options !== null && typeof options === 'object' && options.path === undefined) {
    const to = routes[String(options.port)];
    if (to !== undefined && loopback.has(options.host)) options.port = to;
  } else if ((typeof first === 'number' || typeof first === 'string') && routes[String(first)] !== undefined && loopback.has(args[1])) {
    args[0] = routes[String(first)];
  }
  return connect.apply(this, args);
};
`;

export class ChaosCluster {
  readonly secret = randomBytes(12).toString('hex');
  readonly faults: FaultRecord[] = [];
  private readonly slots: Slot[];
  /** proxies[i][j]: the link member i dials to reach member j (null on the diagonal). */
  private readonly proxies: Array<Array<FaultProxy | null>>;
  private readonly flappers = new Set<() => void>();
  private closed = false;

  private constructor(
    private readonly root: string,
    private readonly shimPath: string,
    slots: Slot[],
    proxies: Array<Array<FaultProxy | null>>,
    private readonly options: ClusterOptions,
  ) {
    this.slots = slots;
    this.proxies = proxies;
  }

  /** Starts every member, waits until a leader is elected and every peer link carried traffic through its proxy. */
  static async start(options: ClusterOptions): Promise<ChaosCluster> {
    const spares = options.spares ?? 0;
    const size = options.size + spares;
    if (!Number.isInteger(options.size) || options.size < 1 || size > 9) throw new HarnessError(`cluster size must be 1..9 with its spares, got ${String(options.size)}+${String(spares)}`);
    const root = mkdtempSync(join(tmpdir(), 'vera-chaos-'));
    const shimPath = join(root, 'dial-shim.cjs');
    writeFileSync(shimPath, DIAL_SHIM);
    const list = await reservePorts(size * 2 + size * (size - 1));
    const slots: Slot[] = Array.from({ length: size }, (_, i) => {
      const clientPort = list[2 * i]!;
      return {
        index: i,
        id: `n${i + 1}`,
        clientPort,
        peerPort: list[2 * i + 1]!,
        dataDir: join(root, `n${i + 1}`),
        url: `ws://127.0.0.1:${clientPort}`,
        httpUrl: `http://127.0.0.1:${clientPort}`,
        proc: null,
        state: i < options.size ? 'down' : 'absent',
        startArgs: [],
        history: [],
      };
    });
    const proxies: Array<Array<FaultProxy | null>> = slots.map(() => slots.map(() => null));
    const cluster = new ChaosCluster(root, shimPath, slots, proxies, options);
    try {
      let next = size * 2;
      for (const from of slots) {
        for (const to of slots) {
          if (from === to) continue;
          proxies[from.index]![to.index] = await FaultProxy.start({ listenPort: list[next++]!, target: { host: '127.0.0.1', port: to.peerPort } });
        }
      }
      await Promise.all(slots.filter((s) => s.state === 'down').map((s) => cluster.launch(s)));
      await cluster.waitForLeader();
      // Proof that the dial shim works: each member dialed every other one through its proxy.
      const firstMembers = (i: number): boolean => i < options.size;
      await Promise.all(cluster.allProxies().filter(({ from, to }) => firstMembers(from) && firstMembers(to)).map(({ proxy }) => withTimeout(proxy.waitFor((s) => s.connections.accepted > 0), 20_000, 'traffic on every peer proxy')));
    } catch (error) {
      await cluster.close();
      throw error;
    }
    return cluster;
  }

  /** Members in the cluster now (every slot but the absent ones). */
  get size(): number {
    return this.slots.filter((s) => s.state !== 'absent').length;
  }

  get members(): readonly Member[] {
    return this.slots;
  }

  /** Client URLs of every member (whatever its state): what clients are given for failover. */
  get urls(): string[] {
    return this.slots.map((s) => s.url);
  }

  member(i: number): Member {
    return this.slot(i);
  }

  stateOf(i: number): MemberState {
    return this.slot(i).state;
  }

  /** Indexes of members whose process runs and is not paused. */
  get live(): number[] {
    return this.slots.filter((s) => s.state === 'up').map((s) => s.index);
  }

  /** The link member `from` dials to reach member `to`. */
  proxy(from: number, to: number): FaultProxy {
    const p = this.proxies[from]?.[to];
    if (p === undefined || p === null) throw new HarnessError(`no proxy for link ${from}->${to}`);
    return p;
  }

  /** The process currently running member `i` (throws if it is down). */
  process(i: number): VeraProcess {
    const proc = this.slot(i).proc;
    if (proc === null) throw new HarnessError(`member ${this.slot(i).id} is not running`);
    return proc;
  }

  /** Every log line of every process member `i` ran, oldest first. */
  logsOf(i: number): LogLine[] {
    return this.slot(i).history.flatMap((p) => p.logs);
  }

  // ------------------------------------------------------------------ process faults

  /** kill -9 (a paused member is killed too). */
  async kill9(i: number): Promise<void> {
    const s = this.slot(i);
    if (s.proc === null) throw new HarnessError(`kill9: ${s.id} is not running`);
    this.record(`kill9 ${s.id}`);
    await s.proc.kill9();
    s.proc = null;
    s.state = 'down';
  }

  /** SIGTERM (a clean shutdown, as an operator's restart does); resolves with the exit code. */
  async stop(i: number): Promise<number | null> {
    const s = this.slot(i);
    if (s.proc === null) throw new HarnessError(`stop: ${s.id} is not running`);
    this.record(`stop ${s.id}`);
    if (s.state === 'paused') s.proc.proc.kill('SIGCONT');
    const code = await s.proc.stop();
    s.proc = null;
    s.state = 'down';
    return code;
  }

  /** Starts a killed member again on the same data directory and ports. */
  async restart(i: number): Promise<void> {
    const s = this.slot(i);
    if (s.proc !== null) throw new HarnessError(`restart: ${s.id} is still running`);
    this.record(`restart ${s.id}`);
    await this.launch(s);
  }

  /** SIGSTOP: the process keeps its sockets but answers nothing. */
  pause(i: number): void {
    const s = this.slot(i);
    if (s.state !== 'up' || s.proc === null) throw new HarnessError(`pause: ${s.id} is ${s.state}`);
    this.record(`pause ${s.id}`);
    s.proc.proc.kill('SIGSTOP');
    s.state = 'paused';
  }

  /** SIGCONT a paused member. */
  resume(i: number): void {
    const s = this.slot(i);
    if (s.state !== 'paused' || s.proc === null) throw new HarnessError(`resume: ${s.id} is ${s.state}`);
    this.record(`resume ${s.id}`);
    s.proc.proc.kill('SIGCONT');
    s.state = 'up';
  }

  /**
   * Kills member `i`, empties its data directory and starts it again with the very
   * same command line: a fresh store with a new incarnation, which the others must
   * refuse (it may neither vote nor count toward a quorum).
   */
  async wipe(i: number): Promise<void> {
    const s = this.slot(i);
    this.record(`wipe ${s.id}`);
    if (s.state === 'paused') s.proc?.proc.kill('SIGCONT');
    if (s.proc !== null) await s.proc.kill9();
    s.proc = null;
    s.state = 'down';
    rmSync(s.dataDir, { recursive: true, force: true });
    await this.launch(s);
  }

  /**
   * The way back for a wiped member: remove it from the configuration through the
   * leader, start it on an empty store with --join, add it as a learner, wait
   * until it caught up, promote it. Needs a majority of the others.
   */
  async rejoin(i: number, timeoutMs = 30_000): Promise<void> {
    const s = this.slot(i);
    this.record(`rejoin ${s.id}`);
    await this.removeMember(i, timeoutMs);
    rmSync(s.dataDir, { recursive: true, force: true });
    await this.addMember(i, timeoutMs);
  }

  /**
   * Adds an absent member the way an operator does: start it on an empty store
   * with --join, add it as a learner through the leader, wait until it applied
   * as far as the leader had, promote it to voter.
   */
  async addMember(i: number, timeoutMs = 30_000): Promise<void> {
    const s = this.slot(i);
    if (s.state !== 'absent') throw new HarnessError(`addMember: ${s.id} is ${s.state}, not absent`);
    this.record(`add ${s.id}`);
    const others = this.slots.filter((o) => o !== s && o.state === 'up').map((o) => o.index);
    s.startArgs = ['--join'];
    await this.launch(s);
    await this.admin({ action: 'add', id: s.id, peer: `127.0.0.1:${s.peerPort}`, client: `127.0.0.1:${s.clientPort}` }, others, timeoutMs);
    const leader = await this.waitForLeader({ among: others, timeoutMs });
    const target = (await this.status(leader)).applied;
    await pollUntil(`${s.id} to catch up to index ${target}`, async () => ((await this.status(i)).applied >= target ? true : undefined), timeoutMs);
    await this.admin({ action: 'promote', id: s.id }, others, timeoutMs);
    s.startArgs = [];
  }

  /**
   * Removes member `i` from the configuration through the leader (it may be the
   * leader), then kills it: it is absent from then on (its data directory stays).
   */
  async removeMember(i: number, timeoutMs = 30_000): Promise<void> {
    const s = this.slot(i);
    if (s.state === 'absent') throw new HarnessError(`removeMember: ${s.id} is already absent`);
    this.record(`remove ${s.id}`);
    // Ask among the others, unless it leads: a wiped member knows no leader and would keep the rest from agreeing on one.
    const leads = s.state === 'up' && (await this.status(i).catch(() => null))?.role === 'leader';
    const among = this.slots.filter((o) => o.state === 'up' && (leads || o !== s)).map((o) => o.index);
    await this.admin({ action: 'remove', id: s.id }, among, timeoutMs);
    if (s.state === 'paused') s.proc?.proc.kill('SIGCONT');
    if (s.proc !== null) await s.proc.kill9();
    s.proc = null;
    s.state = 'absent';
  }

  /** A membership change through the leader among `among`, retried until `timeoutMs`; a change already made counts as done. */
  private async admin(body: { action: 'add' | 'promote' | 'remove'; id: string; peer?: string; client?: string }, among: readonly number[], timeoutMs: number): Promise<void> {
    await pollUntil(`${JSON.stringify(body)} accepted by the leader`, async () => {
      const leader = await this.waitForLeader({ among: among.filter((k) => this.slot(k).state === 'up'), timeoutMs });
      const response = await fetch(`${this.slot(leader).httpUrl}/v1/members`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(5000),
      });
      if (response.ok) return true;
      const text = await response.text();
      // A change already in place (a retry after a lost answer) counts as done; anything else is retried until the deadline.
      if (response.status === 409 && /is already a/.test(text)) return true;
      if (response.status === 404 && /is not a member/.test(text) && body.action === 'remove') return true;
      throw new HarnessError(`${JSON.stringify(body)}: HTTP ${response.status} ${text}`);
    }, timeoutMs);
  }

  // ------------------------------------------------------------------ network faults

  /**
   * Only members in the same group can talk; a member in no group is cut off from
   * everyone. Replaces whatever partition was in place (delays stay).
   */
  partition(groups: ReadonlyArray<readonly number[]>): void {
    const groupOf = new Map<number, number>();
    groups.forEach((g, gi) => {
      for (const i of g) {
        this.slot(i);
        if (groupOf.has(i)) throw new HarnessError(`partition: member ${i} is in two groups`);
        groupOf.set(i, gi);
      }
    });
    this.record(`partition ${groups.map((g) => `[${g.map((i) => this.slot(i).id).join(',')}]`).join(' ')}`);
    for (const { from, to, proxy } of this.allProxies()) {
      const a = groupOf.get(from);
      const b = groupOf.get(to);
      if (a !== undefined && a === b) proxy.heal();
      else proxy.block('both');
    }
  }

  /** Cuts member `i` off from every other member, both ways. */
  isolate(i: number): void {
    const rest = this.slots.filter((s) => s.index !== i).map((s) => s.index);
    this.partition([[i], rest]);
  }

  /**
   * `from` can no longer reach `to` (its messages are dropped), while `to` still
   * reaches `from`. The blocked link's connections stall in their handshake.
   */
  oneWay(from: number, to: number): void {
    this.record(`one-way ${this.slot(from).id}-x->${this.slot(to).id}`);
    this.proxy(from, to).block('forward');
  }

  /** Adds latency to both directed links between `a` and `b`. */
  delay(a: number, b: number, ms: number): void {
    this.record(`delay ${this.slot(a).id}<->${this.slot(b).id} ${ms}ms`);
    this.proxy(a, b).delay(ms);
    this.proxy(b, a).delay(ms);
  }

  /** Resets every open connection of both links between `a` and `b` (they redial). */
  cut(a: number, b: number): void {
    this.record(`cut ${this.slot(a).id}<->${this.slot(b).id}`);
    this.proxy(a, b).cut();
    this.proxy(b, a).cut();
  }

  /**
   * Blocks and heals both links between `a` and `b` every `periodMs` (a flapping
   * link) until `forMs` passed or heal() is called. Resolves when it stopped.
   */
  flap(a: number, b: number, periodMs: number, forMs: number): Promise<void> {
    this.record(`flap ${this.slot(a).id}<->${this.slot(b).id} every ${periodMs}ms for ${forMs}ms`);
    const links = [this.proxy(a, b), this.proxy(b, a)];
    return new Promise((resolve) => {
      let blocked = false;
      const stop = (): void => {
        clearInterval(timer);
        clearTimeout(end);
        this.flappers.delete(stop);
        if (!this.closed && blocked) for (const p of links) p.heal();
        resolve();
      };
      const timer = setInterval(() => {
        if (this.closed) return stop();
        blocked = !blocked;
        for (const p of links) {
          if (blocked) p.block('both');
          else p.heal();
        }
      }, periodMs);
      const end = setTimeout(stop, forMs);
      this.flappers.add(stop);
    });
  }

  /** Removes every network fault: blocks, delays, flapping. Processes are left as they are. */
  heal(): void {
    this.record('heal network');
    for (const stop of [...this.flappers]) stop();
    for (const { proxy } of this.allProxies()) {
      proxy.heal();
      proxy.delay(0);
    }
  }

  /** heal() plus: resume paused members and restart killed ones. */
  async healAll(): Promise<void> {
    this.heal();
    for (const s of this.slots) if (s.state === 'paused') this.resume(s.index);
    for (const s of this.slots) if (s.state === 'down') await this.restart(s.index);
  }

  // ------------------------------------------------------------------ observing

  async status(i: number): Promise<StatusBody> {
    return getJson<StatusBody>(`${this.slot(i).httpUrl}/v1/status`);
  }

  /** A stale (local) read of one list on member `i`. */
  async readLocal(i: number, path: string): Promise<ListView> {
    return getJson<ListView>(`${this.slot(i).httpUrl}/v1/data${path}?consistency=stale`);
  }

  /** A linearizable read of one list through member `i`. */
  async readLinearizable(i: number, path: string): Promise<ListView> {
    return getJson<ListView>(`${this.slot(i).httpUrl}/v1/data${path}?consistency=linearizable`);
  }

  /**
   * Waits until the members `among` (default: every live member) agree on a leader
   * that is one of them and says it leads; resolves with its index. Members that
   * do not answer are skipped, but a majority of the cluster must agree.
   */
  async waitForLeader(options: { among?: readonly number[]; not?: number; timeoutMs?: number } = {}): Promise<number> {
    const timeoutMs = options.timeoutMs ?? 20_000;
    const quorum = Math.floor(this.size / 2) + 1;
    return pollUntil('an agreed leader', async () => {
      const among = (options.among ?? this.live).filter((i) => this.slot(i).state === 'up');
      const statuses = (await Promise.all(among.map((i) => this.status(i).catch(() => null)))).filter((s): s is StatusBody => s !== null);
      const leaderId = statuses[0]?.leader ?? null;
      if (leaderId === null || statuses.length < Math.min(quorum, among.length)) return undefined;
      if (!statuses.every((s) => s.leader === leaderId)) return undefined;
      const leader = this.slots.find((s) => s.id === leaderId);
      if (leader === undefined || leader.index === options.not || !among.includes(leader.index)) return undefined;
      if (statuses.find((s) => s.id === leaderId)?.role !== 'leader') return undefined;
      return leader.index;
    }, timeoutMs);
  }

  /**
   * Waits until every member in `among` (default: every live member) reports the
   * same applied index, equal to its commit index, twice in a row: nothing more
   * is being replicated. Resolves with that index.
   */
  async waitForQuiet(options: { among?: readonly number[]; timeoutMs?: number } = {}): Promise<number> {
    let previous = -1;
    return pollUntil('every member to apply the same index', async () => {
      const among = options.among ?? this.live;
      const statuses = await Promise.all(among.map((i) => this.status(i)));
      const applied = statuses[0]?.applied ?? -1;
      const same = statuses.every((s) => s.applied === applied && s.commit === applied && s.leader !== null);
      const quiet = same && applied === previous;
      previous = same ? applied : -1;
      return quiet ? applied : undefined;
    }, options.timeoutMs ?? 30_000, 100);
  }

  /** The time (Date.now(), from the log line) of the latest election won by any member no later than `before`, or 0. */
  lastElectionAt(before = Infinity): number {
    let latest = 0;
    for (const s of this.slots) {
      for (const line of s.history.flatMap((p) => p.logs)) {
        if (line.event !== 'role-changed' || line.role !== 'leader' || typeof line.time !== 'number') continue;
        if (line.time <= before) latest = Math.max(latest, line.time);
      }
    }
    return latest;
  }

  /** Writes every member's log lines under `dir` (one file per member); returns the file paths. */
  dumpLogs(dir: string): string[] {
    return this.slots.map((s) => {
      const file = join(dir, `${s.id}.log`);
      const lines = s.history.flatMap((p, n) => [`--- process ${n + 1} (pid ${p.proc.pid ?? '?'})`, ...p.logs.map((l) => JSON.stringify(l)), ...p.stderr]);
      writeFileSync(file, lines.join('\n') + '\n');
      return file;
    });
  }

  /** Kills every process, closes every proxy, removes the data directories (unless keepData). Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const stop of [...this.flappers]) stop();
    await Promise.all(
      this.slots.map(async (s) => {
        if (s.proc === null) return;
        if (s.state === 'paused') s.proc.proc.kill('SIGCONT');
        await s.proc.kill9();
        s.proc = null;
        s.state = 'down';
      }),
    );
    // Bounded: FaultProxy.close() can wait forever for a link whose socket never emits 'close' (a resetAndDestroy() that fails emits 'error' instead).
    await Promise.all(
      this.allProxies().map(({ from, to, proxy }) =>
        withTimeout(proxy.close(), 2000, `proxy ${from}->${to} to close`).catch((error: unknown) => {
          if (process.env.VERA_CHAOS_DEBUG) process.stderr.write(`[harness] ${String(error)}: ${JSON.stringify(proxy.stats().connections)}\n`);
        }),
      ),
    );
    if (this.options.keepData !== true) rmSync(this.root, { recursive: true, force: true });
  }

  /** Where the data directories (and the dial shim) live. */
  get rootDir(): string {
    return this.root;
  }

  // ------------------------------------------------------------------ internals

  private slot(i: number): Slot {
    const s = this.slots[i];
    if (s === undefined) throw new HarnessError(`no member ${String(i)} in a cluster of ${this.slots.length}`);
    return s;
  }

  private allProxies(): Array<{ from: number; to: number; proxy: FaultProxy }> {
    const out: Array<{ from: number; to: number; proxy: FaultProxy }> = [];
    this.proxies.forEach((row, from) => row.forEach((proxy, to) => proxy !== null && out.push({ from, to, proxy })));
    return out;
  }

  private async launch(s: Slot): Promise<void> {
    if (this.closed) throw new HarnessError('the cluster is closed');
    const routes: Record<string, number> = {};
    for (const other of this.slots) if (other !== s) routes[String(other.peerPort)] = this.proxy(s.index, other.index).port;
    // Every store is created from the first configuration; a joining member also names itself.
    const peers = this.slots
      .filter((o) => o.index < this.options.size || o === s)
      .map((o) => `${o.id}=127.0.0.1:${o.peerPort}/${o.clientPort}`)
      .join(',');
    const proc = await VeraProcess.start({
      id: s.id,
      dataDir: s.dataDir,
      clientPort: s.clientPort,
      peerPort: s.peerPort,
      peers,
      secret: this.secret,
      args: [...(this.options.args ?? []), ...s.startArgs],
      env: { NODE_OPTIONS: `--require=${this.shimPath}`, VERA_TEST_DIAL_MAP: JSON.stringify(routes) },
      startTimeoutMs: 20_000,
    });
    s.proc = proc;
    s.history.push(proc);
    s.state = 'up';
  }

  private record(what: string): void {
    this.faults.push({ at: Date.now(), what });
  }
}

// ------------------------------------------------------------------ small helpers

/** Below the kernel's ephemeral range (commonly 32768-60999), so no outgoing connection or port-0 bind takes them. */
const PORT_RANGE = { from: 20_000, to: 32_000 } as const;

/**
 * `count` distinct ports that were free a moment ago, picked at random below the
 * ephemeral range: members and proxies must know each other's ports before they
 * start, and a port from the ephemeral range (freePort()) could be taken in the
 * meantime by any outgoing connection, e.g. a client's or a peer's.
 */
export async function reservePorts(count: number): Promise<number[]> {
  const out = new Set<number>();
  for (let attempts = 0; out.size < count; attempts++) {
    if (attempts > count * 50) throw new HarnessError(`could not find ${count} free ports in ${PORT_RANGE.from}-${PORT_RANGE.to}`);
    const port = PORT_RANGE.from + Math.floor(Math.random() * (PORT_RANGE.to - PORT_RANGE.from));
    if (!out.has(port) && (await canListen(port))) out.add(port);
  }
  return [...out];
}

function canListen(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(false));
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
  });
}

/** GET a JSON body; throws on a non-2xx answer or after 3 s. */
export async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url, { signal: AbortSignal.timeout(3000) });
  const text = await response.text();
  if (!response.ok) throw new HarnessError(`GET ${url}: HTTP ${response.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

