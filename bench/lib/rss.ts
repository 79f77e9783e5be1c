// Resident memory of server processes, read from /proc (Linux). A tracker
// samples every member once a second and keeps each member's peak across
// restarts (VmHWM is per process, and S5 restarts a member).
import { readFileSync } from 'node:fs';

export interface ProcMemory {
  /** Current resident set, bytes. */
  readonly rssBytes: number;
  /** Peak resident set of this process so far (VmHWM), bytes. */
  readonly peakBytes: number;
}

/** Reads /proc/<pid>/status; null when the process is gone. */
export function readProcMemory(pid: number): ProcMemory | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  return parseProcStatus(text);
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

  constructor(private readonly members: () => ReadonlyArray<{ readonly id: string; readonly pid: number | null; readonly alive: boolean }>) {}

  start(intervalMs = 1_000): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  /** Takes a sample now (call before killing a member so its peak is not lost). */
  sample(): void {
    for (const m of this.members()) {
      if (!m.alive || m.pid === null) continue;
      const mem = readProcMemory(m.pid);
      if (mem !== null) this.peaks.set(m.id, Math.max(this.peaks.get(m.id) ?? 0, mem.peakBytes));
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
export function currentRss(members: ReadonlyArray<{ readonly id: string; readonly pid: number | null; readonly alive: boolean }>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of members) {
    if (!m.alive || m.pid === null) continue;
    const mem = readProcMemory(m.pid);
    if (mem !== null) out[m.id] = mem.rssBytes;
  }
  return out;
}
