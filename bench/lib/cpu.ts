// CPU time of the servers and of the load generator over a run, as percent of
// one core: on a 2-core machine this shows who is saturated (a server, or the
// client side that drives it).
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
