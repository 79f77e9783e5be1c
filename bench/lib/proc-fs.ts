// Reading a member's process figures from /proc (Linux), shared by the CPU
// and memory meters.
import { readFileSync } from 'node:fs';

/** A cluster member as the meters see it (the fields of MemberInfo they use). */
export interface MeteredMember {
  readonly id: string;
  readonly pid: number | null;
  readonly alive: boolean;
}

/** /proc/<pid>/<file> as text, or null when the process is gone. */
export function readProcFile(pid: number, file: string): string | null {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return null;
  }
}

/** `read(pid)` for every live member; members whose process is gone (null) are left out. */
export function readLiveMembers<T>(members: readonly MeteredMember[], read: (pid: number) => T | null): Array<{ id: string; pid: number; value: T }> {
  const out: Array<{ id: string; pid: number; value: T }> = [];
  for (const m of members) {
    if (!m.alive || m.pid === null) continue;
    const value = read(m.pid);
    if (value !== null) out.push({ id: m.id, pid: m.pid, value });
  }
  return out;
}
