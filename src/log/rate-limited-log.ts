// Log lines that a peer or client can provoke at will (a refused connection, a
// bad handshake) are limited per kind: the first few per interval are written,
// the rest only counted, and the count is reported with the next line written.
// A flood then costs a few lines per interval instead of megabytes.

/** What a rate-limited log writes through: pino's logger and the peer transport's PeerLogger fit. */
export interface WarnLogger {
  warn(obj: object, msg?: string): void;
}

/** Lines of one kind written per interval before the rest are only counted. */
const LINES_PER_INTERVAL = 5;

interface Window {
  start: number;
  written: number;
  suppressed: number;
}

export class RateLimitedLog {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly logger: WarnLogger,
    private readonly intervalMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  warn(kind: string, fields: Record<string, unknown>, message: string): void {
    const now = this.now();
    let w = this.windows.get(kind);
    if (w === undefined || now - w.start >= this.intervalMs) {
      const suppressed = w?.suppressed ?? 0;
      w = { start: now, written: 0, suppressed: 0 };
      this.windows.set(kind, w);
      if (suppressed > 0) this.logger.warn({ event: 'log-suppressed', kind, suppressed }, `${suppressed} more '${kind}' lines were suppressed`);
      // Kinds that stopped occurring are forgotten, so the map holds only recent ones.
      for (const [k, other] of this.windows) if (now - other.start >= this.intervalMs && other.suppressed === 0) this.windows.delete(k);
      this.windows.set(kind, w);
    }
    if (w.written < LINES_PER_INTERVAL) {
      w.written++;
      this.logger.warn({ event: kind, ...fields }, message);
    } else {
      w.suppressed++;
    }
  }
}
