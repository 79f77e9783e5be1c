// Resident memory of server processes, read from /proc (Linux). A tracker
// samples every member once a second and keeps each member's peak across
// restarts (VmHWM is per process, and S5 restarts a member).
import { readLiveMembers, readProcFile, type MeteredMember } from './proc-fs.js';

export interface ProcMemory {
  /** Current resident set, bytes. */
  readonly rssBytes: number;
  /** Peak resident set of this process so far (VmHWM), bytes. */
  readonly peakBytes: number;
}

/** Reads /proc/<pid>/status; null when the process is gone. */
export function readProcMemory(pid: number): ProcMemory | null {
  const text = readProcFile(pid, 'status');
  return text === null ? null : parseProcStatus(text);
}

export function parseProcStatus(text: string): ProcMemory | null {
  const kb = (field: string): number | null => {
    const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(text);
    return match === null ? null : Number(match[1]) * 1024;
  };
  const rss = kb('VmRSS');
  const peak = kb('VmHWM');
  if (rss === null || peak === null) return null;
  return { rssBytes: rss, peakBytes: peak };
}

export class PeakRssTracker {
  private readonly peaks = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly members: () => readonly MeteredMember[]) {}

  start(intervalMs = 1_000): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  /** Takes a sample now (call before killing a member so its peak is not lost). */
  sample(): void {
    for (const { id, value } of readLiveMembers(this.members(), readProcMemory)) {
      this.peaks.set(id, Math.max(this.peaks.get(id) ?? 0, value.peakBytes));
    }
  }

  stop(): Record<string, number> {
    this.sample();
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    return Object.fromEntries([...this.peaks.entries()].sort(([a], [b]) => a.localeCompare(b)));
  }
}

/** Current RSS of every live member, bytes. */
export function currentRss(members: readonly MeteredMember[]): Record<string, number> {
  return Object.fromEntries(readLiveMembers(members, readProcMemory).map(({ id, value }) => [id, value.rssBytes]));
}
