// CPU time of the servers and of the load generator over a run, as percent of
// one core: on a 2-core machine this shows who is saturated (a server, or the
// client side that drives it).
import { readFileSync } from 'node:fs';
import { readLiveMembers, readProcFile, type MeteredMember } from './proc-fs.js';

/** Linux reports utime/stime in clock ticks; USER_HZ is 100 on every mainstream kernel. */
const TICKS_PER_SECOND = 100;

/** utime + stime of a process in seconds, or null when it is gone. */
export function readProcCpuSeconds(pid: number): number | null {
  const text = readProcFile(pid, 'stat');
  return text === null ? null : parseProcStat(text);
}

export function parseProcStat(text: string): number | null {
  // The command name (field 2) may contain spaces and parentheses: fields are counted after the last ')'.
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  const fields = text.slice(close + 2).split(' ');
  // After the name, field 3 (state) is index 0, so utime (14) is 11 and stime (15) is 12.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
  return (utime + stime) / TICKS_PER_SECOND;
}

export interface CpuShare {
  /** The load generator (this process), percent of one core. */
  readonly loadGeneratorPct: number;
  /** Each member, percent of one core. */
  readonly membersPct: Readonly<Record<string, number>>;
}

/** Starts measuring; the returned function ends the measurement. */
export function startCpuMeter(members: readonly MeteredMember[]): () => CpuShare {
  const wallStart = performance.now();
  const selfStart = process.cpuUsage();
  const start = readLiveMembers(members, readProcCpuSeconds);
  return () => {
    const wallSeconds = (performance.now() - wallStart) / 1000;
    const self = process.cpuUsage(selfStart);
    const membersPct: Record<string, number> = {};
    for (const { id, pid, value: seconds } of start) {
      const now = readProcCpuSeconds(pid);
      if (now !== null && wallSeconds > 0) membersPct[id] = Math.round(((now - seconds) / wallSeconds) * 1000) / 10;
    }
    const loadGeneratorPct = wallSeconds > 0 ? Math.round(((self.user + self.system) / 1e6 / wallSeconds) * 1000) / 10 : 0;
    return { loadGeneratorPct, membersPct };
  };
}

/** Busy and total jiffies of the whole machine (the first line of /proc/stat), or null off Linux. */
export function readMachineJiffies(text?: string): { busy: number; total: number } | null {
  let stat = text;
  if (stat === undefined) {
    try {
      stat = readFileSync('/proc/stat', 'utf8');
    } catch {
      return null;
    }
  }
  const line = stat.split('\n').find((l) => l.startsWith('cpu '));
  if (line === undefined) return null;
  // user nice system idle iowait irq softirq steal ...: idle and iowait are not busy.
  const fields = line.trim().split(/\s+/).slice(1).map(Number);
  if (fields.length < 4 || fields.some((f) => !Number.isFinite(f))) return null;
  const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - fields[3]! - (fields[4] ?? 0), total };
}

/** The whole machine's CPU use over `windowMs` (every process: the servers, this one, anything else), percent of one core. */
export async function machineCpuPct(windowMs: number): Promise<number> {
  const start = readMachineJiffies();
  await new Promise((resolve) => setTimeout(resolve, windowMs));
  const end = readMachineJiffies();
  if (start === null || end === null || end.total <= start.total) return 0;
  return ((end.busy - start.busy) / TICKS_PER_SECOND / (windowMs / 1000)) * 100;
}

/**
 * Waits until the machine uses at most `maxPct` of one core over a window, so that
 * background work one load left behind (compactions, log snapshots) or a burst of
 * other work does not fall on the next measurement; gives up after `timeoutMs`.
 * Resolves to the time waited and the last window's use.
 */
export async function waitForQuiet(maxPct: number, timeoutMs: number, windowMs = 300): Promise<{ waitedMs: number; pct: number; quiet: boolean }> {
  const t0 = performance.now();
  for (;;) {
    const pct = await machineCpuPct(windowMs);
    if (pct <= maxPct) return { waitedMs: performance.now() - t0, pct, quiet: true };
    if (performance.now() - t0 >= timeoutMs) return { waitedMs: performance.now() - t0, pct, quiet: false };
  }
}

/**
 * Starts measuring the CPU that other processes use: the whole machine's busy time minus
 * that of `pids` (the servers) and of this process (the load generator). The returned
 * function ends it: percent of one core. Kernel threads doing the servers' work
 * (writeback, softirqs) count as other, so a loaded run shows a little even on a quiet machine.
 */
export function startForeignCpuMeter(pids: readonly number[]): () => number {
  const t0 = performance.now();
  const machine0 = readMachineJiffies();
  const self0 = process.cpuUsage();
  const ours0 = new Map<number, number>();
  for (const pid of pids) {
    const s = readProcCpuSeconds(pid);
    if (s !== null) ours0.set(pid, s);
  }
  return () => {
    const wall = (performance.now() - t0) / 1000;
    const machine1 = readMachineJiffies();
    if (machine0 === null || machine1 === null || wall <= 0) return 0;
    let ours = 0;
    for (const [pid, s] of ours0) {
      const now = readProcCpuSeconds(pid);
      if (now !== null) ours += now - s;
    }
    const self = process.cpuUsage(self0);
    const busy = (machine1.busy - machine0.busy) / TICKS_PER_SECOND;
    return Math.max(0, ((busy - ours - (self.user + self.system) / 1e6) / wall) * 100);
  };
}
