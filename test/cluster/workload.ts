// Client workloads for the fault-injection cluster, all through the real client
// library (src/client) with its failover:
//  - Workload: several clients at once doing persistent pushes with unique data,
//    ifLastIndex compare-and-set pushes, deletes of items they observed, and
//    linearizable gets, every one recorded in a HistoryRecorder (the input of the
//    linearizability checker; its header lists the rules followed here);
//  - Watcher: a session watching lists, recording every event with the connection
//    it arrived on, for the watch-stream checker;
//  - EphemeralOwner: a client in its own process that pushes ephemeral items and
//    is then killed with SIGKILL, for the session-expiry checker.

import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { connect, type VeraClient } from '../../src/client/index.js';
import type { ChangeEvent, Item, ResyncList } from '../../src/client/index.js';
import type { HistoryItem, HistoryRecorder, OpKind } from './history.js';
import { withTimeout } from '../support/poll.js';
import { HarnessError } from './harness.js';

// ------------------------------------------------------------------ seeded randomness

/**
 * A small seeded PRNG (Mulberry32, a public-domain 32-bit generator by Tommy
 * Ettinger): schedules and operation mixes replay from their seed.
 */
export class Rng {
  private state: number;

  constructor(readonly seed: number) {
    if (!Number.isSafeInteger(seed)) throw new HarnessError(`a seed must be an integer, got ${String(seed)}`);
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new HarnessError('pick() from an empty list');
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** A key chosen with probability proportional to its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as Array<[K, number]>;
    const total = entries.reduce((sum, [, w]) => sum + w, 0);
    let roll = this.next() * total;
    for (const [key, w] of entries) {
      roll -= w;
      if (roll < 0) return key;
    }
    return entries[entries.length - 1]![0];
  }

  /** An independent generator derived from this one (for one client or one schedule). */
  fork(): Rng {
    return new Rng(this.int(0, 2 ** 31 - 1));
  }
}

// ------------------------------------------------------------------ the recorded workload

export interface OpMix {
  readonly push: number;
  readonly cas: number;
  readonly delete: number;
  readonly get: number;
}

export const DEFAULT_MIX: OpMix = { push: 35, cas: 15, delete: 15, get: 35 };

export interface WorkloadOptions {
  readonly urls: readonly string[];
  /** The lists the clients work on. */
  readonly paths: readonly string[];
  /** How many clients run at once (each one operation at a time). */
  readonly clients: number;
  readonly recorder: HistoryRecorder;
  readonly rng: Rng;
  readonly mix?: OpMix;
  /** A request that takes longer is given up (outcome unknown for writes). Default 4000. */
  readonly requestTimeoutMs?: number;
  /** Session timeout the clients ask for. Default 5000. */
  readonly sessionTimeoutMs?: number;
  /** Up to this many ms of think time between a client's operations (pacing, not synchronisation). Default 15. */
  readonly thinkMs?: number;
  /** Prefix of every pushed datum; unique per run so data never repeats. Default 'w'. */
  readonly tag?: string;
}

export interface WorkloadStats {
  /** Operations by kind and outcome. */
  readonly ops: Record<string, number>;
  /** Sessions opened (first connects and replacements after a session was lost). */
  readonly sessions: number;
  /** Connect attempts that failed (no leader reachable in time). */
  readonly connectFailures: number;
}

type Action = keyof OpMix;

export class Workload {
  private stopping = false;
  private readonly loops: Array<Promise<void>> = [];
  private readonly counts: Record<string, number> = {};
  private sessions = 0;
  private connectFailures = 0;
  private readonly mix: OpMix;
  private readonly requestTimeoutMs: number;
  private readonly sessionTimeoutMs: number;
  private readonly thinkMs: number;
  private readonly tag: string;
  /** Wakes waiters of the op counter (waitForOps). */
  private readonly opWaiters = new Set<() => void>();
  private completedOps = 0;

  constructor(private readonly options: WorkloadOptions) {
    if (options.paths.length === 0) throw new HarnessError('a workload needs at least one path');
    if (!Number.isInteger(options.clients) || options.clients < 1) throw new HarnessError(`clients must be a positive integer, got ${String(options.clients)}`);
    this.mix = options.mix ?? DEFAULT_MIX;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 4000;
    this.sessionTimeoutMs = options.sessionTimeoutMs ?? 5000;
    this.thinkMs = options.thinkMs ?? 15;
    this.tag = options.tag ?? 'w';
  }

  /** Starts every client's loop; they run until stop(). */
  start(): void {
    if (this.loops.length > 0) throw new HarnessError('the workload was already started');
    for (let i = 0; i < this.options.clients; i++) this.loops.push(this.runClient(`c${i + 1}`, this.options.rng.fork()));
  }

  /** Operations completed so far (any outcome). */
  get completed(): number {
    return this.completedOps;
  }

  /** Resolves once `n` more operations than now have completed with outcome ok; rejects after `timeoutMs`. */
  waitForOps(n: number, timeoutMs: number): Promise<void> {
    const target = (this.counts.ok ?? 0) + n;
    return withTimeout(
      new Promise<void>((done) => {
        const check = (): void => {
          if ((this.counts.ok ?? 0) < target) return;
          this.opWaiters.delete(check);
          done();
        };
        this.opWaiters.add(check);
        check();
      }),
      timeoutMs,
      `${n} more successful operations`,
    );
  }

  /** Stops issuing operations, waits for those in flight (bounded by the request timeout) and closes every session. */
  async stop(): Promise<WorkloadStats> {
    this.stopping = true;
    await Promise.all(this.loops);
    return this.stats();
  }

  stats(): WorkloadStats {
    return { ops: { ...this.counts }, sessions: this.sessions, connectFailures: this.connectFailures };
  }

  private count(key: string): void {
    this.counts[key] = (this.counts[key] ?? 0) + 1;
  }

  private async runClient(name: string, rng: Rng): Promise<void> {
    // What this client has seen of each list: the items of its last get plus its own pushes since.
    const observed = new Map<string, HistoryItem[]>();
    let client: VeraClient | null = null;
    let seq = 0;
    try {
      while (!this.stopping) {
        if (client === null || client.state === 'closed' || client.state === 'expired') {
          client = await this.openSession();
          if (client === null) continue;
        }
        const path = rng.pick(this.options.paths);
        const action = rng.weighted<Action>({ ...this.mix });
        const known = observed.get(path);
        await this.runOp(name, client, rng, path, action, known, observed, () => `${this.tag}:${name}:${++seq}`);
        if (this.thinkMs > 0) await pause(rng.int(0, this.thinkMs));
      }
    } finally {
      if (client !== null) await client.close().catch(() => undefined);
    }
  }

  /** Opens a session, or returns null (after a short backoff) when no leader answered in time. */
  private async openSession(): Promise<VeraClient | null> {
    try {
      const client = await connect([...this.options.urls], {
        timeoutMs: this.sessionTimeoutMs,
        requestTimeoutMs: this.requestTimeoutMs,
        connectTimeoutMs: this.requestTimeoutMs,
      });
      this.sessions++;
      return client;
    } catch {
      this.connectFailures++;
      await pause(100);
      return null;
    }
  }

  private async runOp(
    name: string,
    client: VeraClient,
    rng: Rng,
    path: string,
    action: Action,
    known: HistoryItem[] | undefined,
    observed: Map<string, HistoryItem[]>,
    nextData: () => string,
  ): Promise<void> {
    const recorder = this.options.recorder;
    let kind: OpKind = 'get';
    try {
      switch (action) {
        case 'push':
        case 'cas': {
          kind = 'push';
          // A compare-and-set names the newest index this client has observed (0 for a list it saw empty).
          const cas = action === 'cas' && known !== undefined;
          const ifLastIndex = cas ? (known[known.length - 1]?.index ?? 0) : undefined;
          const data = nextData();
          const item = await recorder.run(name, 'push', path, ifLastIndex === undefined ? { data } : { data, ifLastIndex }, async () =>
            toHistoryItem(await client.push(path, data, { persistent: true, watch: false, ...(ifLastIndex === undefined ? {} : { ifLastIndex }) })),
          );
          observed.set(path, [...(known ?? []), item]);
          break;
        }
        case 'delete': {
          if (known === undefined || known.length === 0) {
            kind = 'get';
            await this.recordedGet(name, client, path, observed);
            break;
          }
          kind = 'delete';
          const target = rng.pick(known);
          // Forget the target whatever the answer: deleted, absent, or unknown.
          observed.set(path, known.filter((i) => i.index !== target.index));
          await recorder.run(name, 'delete', path, { index: target.index }, async () => {
            await client.delete(path, target.index);
            return null;
          });
          break;
        }
        case 'get':
          await this.recordedGet(name, client, path, observed);
          break;
      }
      this.count(`${kind}:ok`);
      this.count('ok');
    } catch (error) {
      const code = typeof error === 'object' && error !== null ? String((error as { code?: unknown }).code ?? 'ERROR') : 'ERROR';
      this.count(`${kind}:${code}`);
    }
    this.completedOps++;
    for (const wake of [...this.opWaiters]) wake();
  }

  private async recordedGet(name: string, client: VeraClient, path: string, observed: Map<string, HistoryItem[]>): Promise<void> {
    const items = await this.options.recorder.run(name, 'get', path, {}, async () => {
      const result = await client.get(path, { consistency: 'linearizable' });
      return result.items.map(toHistoryItem);
    });
    observed.set(path, [...items]);
  }
}

export function toHistoryItem(item: Item): HistoryItem {
  return { index: item.index, data: item.data, owner: item.owner };
}

function pause(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

// ------------------------------------------------------------------ watchers

/** One notification as a watcher received it (after the client dropped resent duplicates). */
export interface ObservedEvent {
  /** Order of arrival among this watcher's events and resyncs. */
  readonly seq: number;
  /** Which connection of the session it arrived on (1 = the first). */
  readonly connection: number;
  readonly index: number;
  readonly type: 'push' | 'delete';
  readonly path: string;
  readonly item: HistoryItem;
}

export interface ObservedResync {
  readonly seq: number;
  readonly connection: number;
  readonly lists: readonly ResyncList[];
}

/** What `watch` answered for one list: events follow from just after `index`. */
export interface WatchStart {
  readonly path: string;
  readonly index: number;
  readonly items: readonly HistoryItem[];
}

export interface WatcherOptions {
  readonly sessionTimeoutMs?: number;
  readonly requestTimeoutMs?: number;
}

/**
 * A session watching lists. The client library hides which connection an event
 * came on, so connections are counted here from its 'disconnected' events: an
 * event after the n-th disconnect can only have come on connection n+1.
 */
export class Watcher {
  readonly starts = new Map<string, WatchStart>();
  readonly events: ObservedEvent[] = [];
  readonly resyncs: ObservedResync[] = [];
  /** Why the session ended early (expired or failed), if it did. */
  ended: string | null = null;
  /** The one prefix this watcher watches, if it is a prefix watcher (startPrefix). */
  prefix?: string;
  private connection = 1;
  private seq = 0;
  private readonly listeners = new Set<() => void>();

  private constructor(
    readonly name: string,
    private readonly client: VeraClient,
  ) {
    client.on('disconnected', () => {
      this.connection++;
    });
    client.on('event', (event: ChangeEvent) => {
      this.events.push({ seq: this.seq++, connection: this.connection, index: event.index, type: event.type, path: event.path, item: toHistoryItem(event.item) });
      this.changed();
    });
    client.on('resync', (lists) => {
      this.resyncs.push({ seq: this.seq++, connection: this.connection, lists });
      this.changed();
    });
    client.on('sessionExpired', (error) => {
      this.ended = `session expired: ${error.message}`;
      this.changed();
    });
    client.on('failed', (error) => {
      this.ended = `client failed: ${error.message}`;
      this.changed();
    });
  }

  /** Connects and watches every path (retrying each watch until `timeoutMs`). */
  static async start(name: string, urls: readonly string[], paths: readonly string[], options: WatcherOptions = {}, timeoutMs = 20_000): Promise<Watcher> {
    const client = await connect([...urls], {
      timeoutMs: options.sessionTimeoutMs ?? 10_000,
      requestTimeoutMs: options.requestTimeoutMs ?? 5000,
      connectTimeoutMs: timeoutMs,
    });
    const watcher = new Watcher(name, client);
    const deadline = performance.now() + timeoutMs;
    for (const path of paths) {
      for (;;) {
        try {
          const result = await client.watch(path);
          watcher.starts.set(path, { path, index: result.index, items: (result.items ?? []).map(toHistoryItem) });
          break;
        } catch (error) {
          if (performance.now() > deadline) {
            await client.close();
            throw new HarnessError(`watcher ${name} could not watch ${path}: ${String(error)}`);
          }
        }
      }
    }
    return watcher;
  }

  /**
   * Connects and watches every list below `prefix` with one prefix watch, before any of
   * `paths` (lists below it) holds an item: each starts empty at the watch's index. The
   * watch-stream checker then judges each of `paths` as an exact watch's.
   */
  static async startPrefix(name: string, urls: readonly string[], prefix: string, paths: readonly string[], timeoutMs = 20_000): Promise<Watcher> {
    const client = await connect([...urls], { timeoutMs: 10_000, requestTimeoutMs: 5000, connectTimeoutMs: timeoutMs });
    const watcher = new Watcher(name, client);
    watcher.prefix = prefix;
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      try {
        const result = await client.watch(prefix, { prefix: true });
        for (const path of paths) watcher.starts.set(path, { path, index: result.index, items: [] });
        return watcher;
      } catch (error) {
        if (performance.now() > deadline) {
          await client.close();
          throw new HarnessError(`watcher ${name} could not watch below ${prefix}: ${String(error)}`);
        }
      }
    }
  }

  /** How many connections the session has used so far. */
  get connections(): number {
    return this.connection;
  }

  /** Resolves once `predicate` holds (checked now and after every event, resync or ending); rejects after `timeoutMs`. */
  waitUntil(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
    return withTimeout(
      new Promise<void>((done) => {
        const check = (): void => {
          if (!predicate()) return;
          this.listeners.delete(check);
          done();
        };
        this.listeners.add(check);
        check();
      }),
      timeoutMs,
      `watcher ${this.name}: ${what}`,
    );
  }

  close(): Promise<void> {
    this.listeners.clear();
    return this.client.close();
  }

  private changed(): void {
    for (const check of [...this.listeners]) check();
  }
}

// ------------------------------------------------------------------ ephemeral owners in their own process

/** What the owner process printed once its items were committed. */
export interface OwnerReport {
  readonly session: string;
  readonly timeoutMs: number;
  readonly items: readonly HistoryItem[];
}

// Runs in the child: connect, push ephemeral items, print one JSON line, then keep the session alive until killed.
const OWNER_SCRIPT = `
const spec = JSON.parse(process.env.VERA_OWNER_SPEC);
const { connect } = await import(spec.clientModule);
try {
  const client = await connect(spec.urls, { timeoutMs: spec.timeoutMs, connectTimeoutMs: 15000, requestTimeoutMs: 15000 });
  const items = [];
  for (let n = 0; n < spec.count; n++) items.push(await client.push(spec.path, spec.tag + ':' + n, { watch: false }));
  process.stdout.write(JSON.stringify({ session: client.session, timeoutMs: client.sessionTimeoutMs, items }) + '\\n');
} catch (error) {
  process.stdout.write(JSON.stringify({ error: String(error && error.message || error) }) + '\\n');
  process.exitCode = 1;
}
`;

/** The compiled client library (dist/, built before the cluster tests by test/global-setup.ts or by the chaos runner). */
const CLIENT_MODULE = pathToFileURL(resolve(import.meta.dirname, '../../dist/client/index.js')).href;

/**
 * A client in its own process that owns ephemeral items. kill9() ends it without a
 * `bye`, as a crashed application would: its session must expire on its own.
 */
export class EphemeralOwner {
  /** Date.now() of the SIGKILL, once killed. */
  killedAt: number | null = null;

  private constructor(
    private readonly proc: ChildProcess,
    readonly path: string,
    readonly report: OwnerReport,
    private readonly exited: Promise<void>,
  ) {}

  static async start(urls: readonly string[], path: string, options: { count: number; timeoutMs: number; tag: string }, startTimeoutMs = 30_000): Promise<EphemeralOwner> {
    const spec = { clientModule: CLIENT_MODULE, urls, path, count: options.count, timeoutMs: options.timeoutMs, tag: options.tag };
    const proc = spawn(process.execPath, ['--input-type=module', '-e', OWNER_SCRIPT], {
      env: { ...process.env, NODE_OPTIONS: '', VERA_OWNER_SPEC: JSON.stringify(spec) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<void>((done) => proc.on('exit', () => done()));
    let stderr = '';
    proc.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const firstLine = new Promise<string>((done, fail) => {
      let buffered = '';
      proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        buffered += chunk;
        const nl = buffered.indexOf('\n');
        if (nl >= 0) done(buffered.slice(0, nl));
      });
      void exited.then(() => fail(new HarnessError(`ephemeral owner exited before reporting: ${stderr.slice(0, 1000)}`)));
    });
    let parsed: OwnerReport & { error?: string };
    try {
      parsed = JSON.parse(await withTimeout(firstLine, startTimeoutMs, 'the ephemeral owner to push its items')) as OwnerReport & { error?: string };
    } catch (error) {
      proc.kill('SIGKILL');
      throw error;
    }
    if (parsed.error !== undefined) {
      proc.kill('SIGKILL');
      throw new HarnessError(`ephemeral owner failed: ${parsed.error}`);
    }
    return new EphemeralOwner(proc, path, { session: parsed.session, timeoutMs: parsed.timeoutMs, items: parsed.items.map((i) => toHistoryItem(i as Item)) }, exited);
  }

  /** SIGKILL, no goodbye; resolves once the process is gone. */
  async kill9(): Promise<void> {
    if (this.killedAt === null) this.killedAt = Date.now();
    this.proc.kill('SIGKILL');
    await this.exited;
  }
}
