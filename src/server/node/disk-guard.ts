// Keeps a full disk from stopping the member. LevelDB cannot go on after a
// failed write (it keeps the error until reopened), so waiting for ENOSPC means
// exiting: an adversary who filled the disk saw clients cut off (1006) and exit
// 70. Instead every request that adds data (push, watch, a new session) is
// admitted against the free space of the data directory's file system, read at
// most FRESH_MS before, less what was admitted in the last two poll intervals
// and may not be on disk yet. While that is below the reserve the leader refuses
// such requests with QUOTA_EXCEEDED.
// Everything else goes on: reads, deletes, unwatch, session close and expiry,
// which need only small log entries, and replication of what was already
// accepted, which the reserve leaves room for. When space returns above the
// reserve plus a margin, writes are taken again with no restart.
//
// A first version only read the free space once a second; on a fast machine a
// few half-MiB pushes went from 3 MiB free to ENOSPC inside that second. The
// next read it on every admission, which was 7-10% of a busy leader's CPU
// (statfs is a system call); a reading a few milliseconds old costs nothing and
// misses nothing the charges do not cover.

import { statfsSync } from 'node:fs';
import type { Logger } from 'pino';
import { VeraError } from '../../protocol/index.js';

/** Space must come back to this multiple of the reserve before writes resume, so the state does not flap. */
const RESUME_FACTOR = 1.25;
/**
 * An admitted request's bytes are charged this many times over until a whole
 * poll interval has passed since it was admitted: its log entry, the applied
 * item, and LevelDB rewriting both when it compacts.
 */
export const WRITE_AMPLIFICATION = 3;
/** How often the free space is read when nothing is admitted, which also clears the charges. */
const POLL_MS = 250;
/** A reading younger than this serves an admission; an older one is taken again first. */
export const FRESH_MS = 10;

export type FreeSpaceReader = (dir: string) => number;

const statfsFree: FreeSpaceReader = (dir) => {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
};

export class DiskGuard {
  private available = Number.POSITIVE_INFINITY;
  /** When `available` was read (performance.now() ms). */
  private readAt = Number.NEGATIVE_INFINITY;
  /** Bytes admitted since the last periodic reading, times WRITE_AMPLIFICATION. */
  private charged = 0;
  /**
   * What was charged in the poll interval before that. A frame admitted just before a
   * reading may not be written yet when it is taken (a burst on a busy machine: four
   * half-MiB pushes got in where three fit), so a charge lasts one more interval.
   */
  private chargedBefore = 0;
  private low = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly dir: string,
    /** Free bytes below which writes that add data are refused. */
    readonly reserveBytes: number,
    private readonly logger: Logger,
    private readonly readFree: FreeSpaceReader = statfsFree,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Reads the free space now, then every POLL_MS. */
  start(): void {
    this.poll();
    this.timer = setInterval(() => this.poll(), POLL_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** True while the free space is below the reserve. */
  get full(): boolean {
    return this.low;
  }

  /**
   * Admits a request that will write about `bytes` (its frame size), or throws
   * QUOTA_EXCEEDED if the disk, less what was admitted before it and what this
   * one will write, would be below its reserve.
   */
  admit(bytes: number): void {
    const charge = bytes * WRITE_AMPLIFICATION;
    if (this.now() - this.readAt >= FRESH_MS) this.read();
    this.judge(this.available - this.chargedBefore - this.charged - charge);
    if (this.low) {
      throw new VeraError(
        'QUOTA_EXCEEDED',
        `the disk holding this member's data has ${formatBytes(Math.max(0, this.available - this.chargedBefore - this.charged))} free, below its reserve (--disk-reserve ${formatBytes(this.reserveBytes)}): ` +
          'requests that add data are refused until space is freed; reads, deletes and closing sessions still work',
      );
    }
    this.charged += charge;
  }

  /** A periodic reading: what was admitted before the previous one is on disk by now (or covered by the reserve). */
  poll(): void {
    if (!this.read()) return;
    this.chargedBefore = this.charged;
    this.charged = 0;
    this.judge(this.available - this.chargedBefore);
  }

  /** Reads the free space; false (keeping the last reading) if it cannot be read, which says nothing about space. */
  private read(): boolean {
    try {
      this.available = this.readFree(this.dir);
      this.readAt = this.now();
      return true;
    } catch (err) {
      this.logger.debug({ event: 'disk-statfs-failed', err: String(err) }, 'could not read free disk space');
      return false;
    }
  }

  private judge(free: number): void {
    if (!this.low && free < this.reserveBytes) {
      this.low = true;
      this.logger.warn(
        { event: 'disk-low', availableBytes: free, reserveBytes: this.reserveBytes },
        `only ${formatBytes(Math.max(0, free))} free on the data disk (reserve ${formatBytes(this.reserveBytes)}): refusing requests that add data until space is freed`,
      );
    } else if (this.low && free >= this.reserveBytes * RESUME_FACTOR) {
      this.low = false;
      this.logger.info({ event: 'disk-ok', availableBytes: free }, `${formatBytes(free)} free on the data disk again: taking writes`);
    }
  }
}

function formatBytes(n: number): string {
  if (n >= 1024 * 1024 * 1024) return `${(n / 1024 ** 3).toFixed(1)} GiB`;
  if (n >= 1024 * 1024) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${Math.round(n / 1024)} KiB`;
}
