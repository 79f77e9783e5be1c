// Redis and PostgreSQL for the journal benchmark, started on loopback in
// temporary directories under the bench's process registry (killed on exit).
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePorts, LOOPBACK } from '../lib/net.js';
import { spawnManaged, type ManagedProcess } from '../lib/procs.js';

export interface RunningServer {
  readonly port: number;
  stop(): Promise<void>;
}

/** redis-server with the append-only file on, fsynced `always` or `everysec`. */
export async function startRedis(appendfsync: 'always' | 'everysec', logDir: string): Promise<RunningServer> {
  const [port] = await freePorts(1);
  const dir = mkdtempSync(join(tmpdir(), 'vera-bench-redis-'));
  const proc = spawnManaged(`redis ${appendfsync}`, 'redis-server', [
    '--port', String(port), '--bind', LOOPBACK, '--dir', dir, '--save', '',
    '--appendonly', 'yes', '--appendfsync', appendfsync, '--protected-mode', 'no',
  ], { logFile: join(logDir, `redis-${appendfsync}.log`) });
  await proc.waitForLine((l) => l.includes('Ready to accept connections'), 20_000);
  return { port: port!, stop: () => stopAndRemove(proc, dir) };
}

const PG_BIN = '/usr/lib/postgresql/15/bin';

/** A private PostgreSQL 15 cluster with its defaults (fsync on, synchronous_commit on). */
export async function startPostgres(logDir: string): Promise<RunningServer> {
  const [port] = await freePorts(1);
  const dir = mkdtempSync(join(tmpdir(), 'vera-bench-pg-'));
  // PostgreSQL refuses to run as root: run it as the postgres user when we are root.
  const asUser = userInfo().uid === 0 ? 'postgres' : null;
  if (asUser !== null) chownSync(dir, postgresUid(), postgresGid());
  const run = (bin: string, args: string[]): [string, string[]] => (asUser === null ? [join(PG_BIN, bin), args] : ['runuser', ['-u', asUser, '--', join(PG_BIN, bin), ...args]]);
  const [initCmd, initArgs] = run('initdb', ['-D', join(dir, 'data'), '-U', 'bench', '--auth=trust', '-E', 'UTF8']);
  execFileSync(initCmd, initArgs, { stdio: 'ignore' });
  const [cmd, args] = run('postgres', ['-D', join(dir, 'data'), '-p', String(port), '-k', dir, '-c', `listen_addresses=${LOOPBACK}`, '-c', 'max_connections=400']);
  const proc = spawnManaged('postgres', cmd, args, { logFile: join(logDir, 'postgres.log') });
  await proc.waitForLine((l) => l.includes('database system is ready to accept connections'), 30_000);
  return { port: port!, stop: () => stopAndRemove(proc, dir) };
}

export function postgresAvailable(): boolean {
  return existsSync(join(PG_BIN, 'postgres')) && existsSync(join(PG_BIN, 'initdb'));
}

function postgresUid(): number {
  return Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
}

function postgresGid(): number {
  return Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
}

async function stopAndRemove(proc: ManagedProcess, dir: string): Promise<void> {
  await proc.stop(5_000);
  rmSync(dir, { recursive: true, force: true });
}
