// Pieces the three cluster implementations share.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killAllSync } from '../lib/procs.js';
import { reaperGuard } from '../lib/reaper.js';

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
