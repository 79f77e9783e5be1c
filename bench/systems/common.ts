// Pieces the three cluster implementations share.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killAllSync, type ManagedProcess } from '../lib/procs.js';
import { reaperGuard } from '../lib/reaper.js';
import type { ClientRecipe, ConnectOptions, MemberInfo, SystemName } from './system.js';

const liveDirs = new Set<string>();
let exitHookInstalled = false;

/**
 * A fresh directory under the OS temp dir (the data disk whose fsync floor is
 * measured). Whatever is not removed by removeDir() is removed when the
 * process exits, Ctrl-C included.
 */
export function makeTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  liveDirs.add(dir);
  reaperGuard.addDir(dir);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      // Servers first, so none writes into a directory being removed.
      killAllSync();
      for (const d of liveDirs) rmSync(d, { recursive: true, force: true });
    });
  }
  return dir;
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  liveDirs.delete(dir);
  reaperGuard.removeDir(dir);
}

/** Settles `promise` or rejects with `what` after timeoutMs. */
export function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not finish within ${timeoutMs} ms`)), timeoutMs);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** Calls every cleanup even when some fail; rethrows the first failure. */
export async function settleAll(tasks: ReadonlyArray<() => Promise<void>>): Promise<void> {
  const results = await Promise.allSettled(tasks.map((task) => task()));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}

/**
 * Starts a server, again if it exits while starting: a restarted member can
 * lose a race for its old port or lock for a moment after a kill -9.
 */
export async function startWithRetries(what: string, attempts: number, start: () => Promise<void>): Promise<void> {
  let lastError: unknown = null;
  for (let i = 0; i < attempts; i++) {
    try {
      await start();
      return;
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  throw new Error(`${what} did not start after ${attempts} attempts: ${lastError instanceof Error ? lastError.message : String(lastError)}`);
}

/** What the shared bookkeeping needs of a member; each system adds its own ports and paths. */
export interface ClusterMember {
  readonly id: string;
  readonly clientPort: number;
  process: ManagedProcess | null;
}

/**
 * The part of a Cluster that is the same for every system: member lookup,
 * kill -9, restart, teardown and which ports a client gets. A subclass fills
 * `members_` in start() and says how one member is launched.
 */
export abstract class ProcessCluster<M extends ClusterMember> {
  abstract readonly name: SystemName;
  /** As the server reports it, once it has been asked. */
  version = 'unknown';
  /** Every member's data lives below this; removed by stop(). */
  protected readonly root: string;
  protected members_: M[] = [];

  constructor(tempDirPrefix: string) {
    this.root = makeTempDir(tempDirPrefix);
  }

  /** Starts `member`'s server on the data it has and resolves once it serves. */
  protected abstract launch(member: M): Promise<void>;

  async stop(): Promise<void> {
    // The data is thrown away, so no clean shutdown is needed; SIGKILL saves seconds per cluster.
    await settleAll(this.members_.map((m) => async () => m.process?.kill9()));
    removeDir(this.root);
  }

  members(): readonly MemberInfo[] {
    return this.members_.map((m) => ({ id: m.id, clientPort: m.clientPort, pid: m.process?.pid ?? null, alive: m.process?.isAlive() ?? false }));
  }

  async kill9(id: string): Promise<void> {
    await this.member(id).process?.kill9();
  }

  async restart(id: string): Promise<void> {
    const member = this.member(id);
    if (member.process?.isAlive() === true) throw new Error(`${this.name} ${id} is still running`);
    await startWithRetries(`${this.name} ${id}`, 3, () => this.launch(member));
  }

  recipe(): ClientRecipe {
    return { system: this.name, ports: this.members_.map((m) => m.clientPort) };
  }

  protected member(id: string): M {
    const found = this.members_.find((m) => m.id === id);
    if (found === undefined) throw new Error(`${this.name} has no member ${id}`);
    return found;
  }

  protected alive(): M[] {
    return this.members_.filter((m) => m.process?.isAlive() === true);
  }

  /** The client ports a connection made with `options` may use. */
  protected clientPorts(options: ConnectOptions): number[] {
    if (options.onlyPort !== undefined) return [options.onlyPort];
    if (options.member !== undefined) return [this.member(options.member).clientPort];
    return this.members_.map((m) => m.clientPort);
  }
}
