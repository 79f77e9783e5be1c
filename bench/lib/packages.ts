// The competitors come from Debian packages. When one is missing the suite
// installs it with apt-get (after one `apt-get update`); when that fails the
// system is reported as unavailable and the suite goes on without it.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { SystemName } from '../systems/system.js';

export interface Availability {
  readonly available: boolean;
  /** Why not, or what was done ("installed etcd-server"). */
  readonly note: string;
}

const PACKAGES: Readonly<Record<Exclude<SystemName, 'vera'>, { readonly pkg: string; readonly present: () => boolean }>> = {
  etcd: { pkg: 'etcd-server', present: () => commandExists('etcd') },
  zookeeper: { pkg: 'zookeeper', present: () => existsSync('/usr/share/java/zookeeper.jar') && commandExists('java') },
};

let aptUpdated = false;

export function ensureSystem(system: SystemName, log: (m: string) => void): Availability {
  if (system === 'vera') return { available: true, note: 'built from this tree' };
  const { pkg, present } = PACKAGES[system];
  return ensureInstalled(pkg, present, log);
}

/** A Debian package the journal benchmark needs (redis-server, postgresql); `command` tells whether it is there. */
export function ensurePackage(pkg: string, command: string | null, log: (m: string) => void): Availability {
  return ensureInstalled(pkg, () => (command === null ? spawnSync('dpkg', ['-s', pkg], { stdio: 'ignore' }).status === 0 : commandExists(command)), log);
}

function ensureInstalled(pkg: string, present: () => boolean, log: (m: string) => void): Availability {
  if (present()) return { available: true, note: `${pkg} already installed` };
  if (!commandExists('apt-get')) return { available: false, note: `${pkg} is not installed and apt-get is not available` };
  log(`installing ${pkg} with apt-get (one-time)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (!aptUpdated) {
    const update = spawnSync('apt-get', ['update'], { env, encoding: 'utf8', timeout: 180_000 });
    aptUpdated = true;
    if (update.status !== 0) log(`apt-get update failed (${lastLine(update.stderr)}); trying the install anyway`);
  }
  const install = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', pkg], { env, encoding: 'utf8', timeout: 300_000 });
  if (install.status !== 0 || !present()) {
    return { available: false, note: `apt-get install ${pkg} failed: ${lastLine(install.stderr || install.stdout) || `exit ${install.status}`}` };
  }
  return { available: true, note: `installed ${pkg} with apt-get` };
}

function commandExists(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function lastLine(text: string | null): string {
  return (text ?? '').trim().split('\n').pop() ?? '';
}
