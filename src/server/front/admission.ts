// Which sockets the client port keeps. Every socket (HTTP or WebSocket) counts
// against a total, derived from the open-file limit (fd-budget.ts), and against a
// per-address cap (ZooKeeper's maxClientCnxns is the model), so one address can
// neither exhaust the process's descriptors nor crowd out everyone else. Over
// either bound a new socket is closed at once; the storage never notices.

import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { RateLimitedLog } from '../../log/rate-limited-log.js';

export interface AdmissionLimits {
  /** Sockets on the client port at once, all addresses. */
  readonly connectionsMax: number;
  /** Sockets from one remote address at once. */
  readonly connectionsPerAddress: number;
  /** A socket that has started no HTTP request (nor WebSocket upgrade) by then is closed. */
  readonly firstRequestTimeoutMs: number;
}

export class Admission {
  private open = 0;
  private readonly byAddress = new Map<string, number>();
  private readonly refusals: RateLimitedLog;

  constructor(
    private readonly limits: AdmissionLimits,
    logger: Logger,
  ) {
    this.refusals = new RateLimitedLog(logger, 10_000);
  }

  /** Sockets that have started a request, so their first-request timer is moot. */
  private readonly used = new WeakSet<Socket>();

  /** Called for every new socket; closes it when over a bound. */
  admit(socket: Socket): void {
    const address = socket.remoteAddress ?? '?';
    const fromAddress = this.byAddress.get(address) ?? 0;
    const over =
      this.open >= this.limits.connectionsMax
        ? `the client port holds ${this.open} connections, its limit`
        : fromAddress >= this.limits.connectionsPerAddress
          ? `${address} holds ${fromAddress} connections, the per-address limit`
          : null;
    if (over !== null) {
      this.refusals.warn('connection-refused', { address }, `connection refused: ${over}`);
      socket.destroy();
      return;
    }
    this.open++;
    this.byAddress.set(address, fromAddress + 1);
    // Node's headersTimeout does not cover a socket that never sends a byte.
    const silent = setTimeout(() => {
      if (!this.used.has(socket)) socket.destroy();
    }, this.limits.firstRequestTimeoutMs);
    socket.once('close', () => {
      clearTimeout(silent);
      this.open--;
      const left = (this.byAddress.get(address) ?? 1) - 1;
      if (left === 0) this.byAddress.delete(address);
      else this.byAddress.set(address, left);
    });
  }

  /** The socket started an HTTP request or a WebSocket upgrade. */
  markUsed(socket: Socket): void {
    this.used.add(socket);
  }

  get connections(): number {
    return this.open;
  }
}
