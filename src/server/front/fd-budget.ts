// How the process's file descriptors are shared, so that clients can never take
// the ones storage needs. With 486 idle client sockets at a 512 open-file limit,
// LevelDB could not open a table file ("Too many open files") and the member
// stopped to protect its data. Now LevelDB gets a fixed share (its own
// max_open_files, instead of its default of 1000 whatever the limit), a reserve
// is kept for peers, logs and staged snapshots, and the client port accepts at
// most what is left.

import { readFileSync } from 'node:fs';

export interface FdBudget {
  /** The soft RLIMIT_NOFILE, or null when it cannot be read (not Linux). */
  readonly limit: number | null;
  /** LevelDB's max_open_files. */
  readonly levelFiles: number;
  /** Sockets the client port may hold at once (HTTP and WebSocket). */
  readonly clientConnections: number;
}

/** Peer links (two per member), the log, stdio, staged snapshot files, the event loop's own. */
const RESERVED_FDS = 96;
const LEVEL_FILES_MAX = 1000;
const LEVEL_FILES_MIN = 64;
const CLIENT_CONNECTIONS_MIN = 16;

/** The budget for a process with `limit` descriptors; `clientCap` is the configured ceiling on client sockets. */
export function fdBudget(limit: number | null, clientCap: number): FdBudget {
  if (limit === null) return { limit, levelFiles: LEVEL_FILES_MAX, clientConnections: clientCap };
  const levelFiles = Math.min(LEVEL_FILES_MAX, Math.max(LEVEL_FILES_MIN, Math.floor(limit / 4)));
  const left = limit - levelFiles - RESERVED_FDS;
  return { limit, levelFiles, clientConnections: Math.min(clientCap, Math.max(CLIENT_CONNECTIONS_MIN, left)) };
}

/** The soft open-files limit of this process, from /proc/self/limits. */
export function openFileLimit(): number | null {
  try {
    const match = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (match === null || match[1] === 'unlimited') return null;
    return Number(match[1]);
  } catch {
    return null;
  }
}
