// Keeps a full disk from stopping the member. LevelDB cannot go on after a
// failed write (it keeps the error until reopened), so waiting for ENOSPC means
// exiting: an adversary who filled the disk saw clients cut off (1006) and exit
// 70. Instead the free space of the data directory's file system is read every
// second, and while it is below the reserve the leader refuses requests that add
// data (push, watch, a new session) with QUOTA_EXCEEDED. Everything else goes on:
// reads, deletes, unwatch, session close and expiry, which need only small log
// entries, and replication of what was already accepted, which the reserve
// leaves room for. When space returns above the reserve plus a margin, writes
// are taken again with no restart.

import { statfs } from 'node:fs/promises';
import type { Logger } from 'pino';
import { VeraError } from './protocol-errors.js';

/** Space must come back to this multiple of the reserve before writes resume, so the state does not flap. */
const RESUME_FACTOR = 1.25;
const POLL_MS = 1000;

export class DiskGuard {
  private available = Number.POSITIVE_INFINITY;
  private low = false;
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;

  constructor(
    private readonly dir: string,
    /** Free bytes below which writes that add data are refused. */
    readonly reserveBytes: number,
    private readonly logger: Logger,
  ) {}

  /** Reads the free space once now, then every second. */
  async start(): Promise<void> {
    await this.poll();
    this.timer = setInterval(() => void this.poll(), POLL_MS);
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

  /** Throws QUOTA_EXCEEDED while the disk is below its reserve. */
  assertRoom(): void {
    if (!this.low) return;
    throw new VeraError(
      'QUOTA_EXCEEDED',
      `the disk holding this member's data has ${formatBytes(this.available)} free, below its reserve (--disk-reserve ${formatBytes(this.reserveBytes)}): ` +
        'requests that add data are refused until space is freed; reads, deletes and closing sessions still work',
    );
  }

  private poll(): Promise<void> {
    this.polling ??= this.read().finally(() => {
      this.polling = null;
    });
    return this.polling;
  }

  private async read(): Promise<void> {
    let free: number;
    try {
      const s = await statfs(this.dir);
      free = s.bavail * s.bsize;
    } catch (err) {
      // A statfs failure says nothing about space: keep the last reading.
      this.logger.debug({ event: 'disk-statfs-failed', err: String(err) }, 'could not read free disk space');
      return;
    }
    this.available = free;
    if (!this.low && free < this.reserveBytes) {
      this.low = true;
      this.logger.warn(
        { event: 'disk-low', availableBytes: free, reserveBytes: this.reserveBytes },
        `only ${formatBytes(free)} free on the data disk (reserve ${formatBytes(this.reserveBytes)}): refusing requests that add data until space is freed`,
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
