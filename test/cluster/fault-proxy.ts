// A TCP proxy for one directed peer link of a test cluster, on loopback, that
// injects network faults: partitions (one-way or both ways), latency and cuts.
//
// For a Raft peer link A -> B (A dials B; in Vera each member dials every other
// member and sends only on the socket it dialed), point A's address for B at the
// proxy and the proxy at B. "forward" is the dialer-to-listener direction (A's
// bytes towards B), "backward" the other (B's replies, e.g. handshake frames).
//
// How a block behaves, and why. Dropping bytes in the middle of a TCP stream would
// hand the receiver a stream with a hole in it: for a framed protocol such as
// WebSocket that is a corrupt frame, which no real network produces (TCP either
// delivers everything in order or the connection fails). So the proxy never lets
// a connection continue past lost bytes:
//  - block(dir) destroys (RST) every current connection if it blocks a direction
//    that was flowing, since bytes in flight may have been cut mid-frame. Peers see
//    a failed connection and will redial: like a partition, messages are lost.
//  - While both directions are blocked, new connections are accepted and reset at
//    once (the dialer sees its connection fail, as with an unreachable peer).
//  - While one direction is blocked, new connections are accepted and held open:
//    the open direction is forwarded from its first byte, the blocked one dropped
//    from its first byte, so each receiver sees a clean stream or silence, never a
//    hole. The peer link's handshake then stalls and times out, as it would
//    across a one-way partition.
//  - heal() unblocks and destroys every connection that dropped any byte (it can
//    never be made whole again); connections that lost nothing carry on.
// delay(ms) holds every chunk for ms before passing it on, in order, in both
// directions (a change of delay never lets a later chunk overtake an earlier one).
// cut() destroys all current connections without blocking new ones.
// Nothing keeps running after close(): timers, sockets and the listener are gone.

import { once } from 'node:events';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

export type Direction = 'forward' | 'backward';
export type BlockMode = Direction | 'both';

/** Bad options, a port that cannot be bound, or use after close. */
export class FaultProxyError extends Error {
  override readonly name = 'FaultProxyError';
}

export interface FaultProxyOptions {
  /** Port to listen on; 0 picks a free one. */
  readonly listenPort: number;
  readonly target: { readonly host: string; readonly port: number };
  /** Interface to listen on (default 127.0.0.1). */
  readonly listenHost?: string;
}

export interface DirectionStats {
  /** Bytes written on to the receiving side. */
  readonly forwardedBytes: number;
  /** Bytes discarded: blocked, or still queued when their connection was destroyed. */
  readonly droppedBytes: number;
  /** Bytes held back by delay() right now. */
  readonly queuedBytes: number;
}

export interface FaultProxyStats {
  readonly forward: DirectionStats;
  readonly backward: DirectionStats;
  readonly connections: {
    /** Connections accepted and passed on towards the target. */
    readonly accepted: number;
    /** Connections reset on arrival because both directions were blocked. */
    readonly refused: number;
    /** Connections currently open (both sockets not yet closed). */
    readonly active: number;
    /** Connections destroyed by block(), heal() or cut(). */
    readonly destroyed: number;
    /** Connections closed because the target could not be reached. */
    readonly targetUnreachable: number;
  };
}

/** Past this many queued bytes in one direction, stop reading from the sender until it drains. */
const HIGH_WATER_BYTES = 1024 * 1024;

type ByteCounter = 'forwardedBytes' | 'droppedBytes' | 'queuedBytes';

interface Counters {
  forward: Record<ByteCounter, number>;
  backward: Record<ByteCounter, number>;
  accepted: number;
  refused: number;
  destroyed: number;
  targetUnreachable: number;
}

/** What a connection needs from its proxy. */
interface ProxyControl {
  isBlocked(dir: Direction): boolean;
  delayMs(): number;
  /** Adds `bytes` (negative to take away) to a counter. */
  counted(dir: Direction, field: ByteCounter, bytes: number): void;
  /** A delay timer was started (+1) or fired or was cleared (-1). */
  timers(delta: 1 | -1): void;
}

type Queued = { readonly chunk: Buffer; readonly dueAt: number } | { readonly chunk: null; readonly dueAt: number };

/** One direction of one connection: reads from `from`, writes to `to`, possibly late, possibly not at all. */
class Pipe {
  private readonly queue: Queued[] = [];
  private queuedBytes = 0;
  private lastDueAt = 0;
  private timer: NodeJS.Timeout | null = null;
  /** Reading from the sender is paused: too much queued, or the receiver's buffer is full. */
  private paused = false;
  private awaitingDrain = false;
  /** The sender finished its side (FIN): the end is queued or delivered. */
  sawEnd = false;
  /** Some byte of this direction was discarded: the stream can never be whole again. */
  lostBytes = false;

  constructor(
    private readonly dir: Direction,
    private readonly from: Socket,
    private readonly to: Socket,
    private readonly proxy: ProxyControl,
  ) {
    from.on('data', (chunk: Buffer) => this.push(chunk));
    from.on('end', () => this.end());
  }

  private push(chunk: Buffer): void {
    if (this.proxy.isBlocked(this.dir)) {
      this.lostBytes = true;
      this.proxy.counted(this.dir, 'droppedBytes', chunk.length);
      return;
    }
    const delay = this.proxy.delayMs();
    if (delay === 0 && this.queue.length === 0) {
      this.write(chunk);
      return;
    }
    // Never earlier than the chunk before it, whatever the delay is now: order is kept.
    const dueAt = Math.max(performance.now() + delay, this.lastDueAt);
    this.lastDueAt = dueAt;
    this.queue.push({ chunk, dueAt });
    this.queuedBytes += chunk.length;
    this.proxy.counted(this.dir, 'queuedBytes', chunk.length);
    if (this.queuedBytes > HIGH_WATER_BYTES) this.pauseSender();
    this.schedule();
  }

  private end(): void {
    this.sawEnd = true;
    // A FIN is part of the stream: in a blocked direction it is lost like any byte.
    if (this.proxy.isBlocked(this.dir)) this.lostBytes = true;
    else if (this.queue.length === 0) this.to.end();
    else this.queue.push({ chunk: null, dueAt: this.lastDueAt });
  }

  private write(chunk: Buffer): void {
    if (this.to.destroyed || this.to.writableEnded) {
      this.lostBytes = true;
      this.proxy.counted(this.dir, 'droppedBytes', chunk.length);
      return;
    }
    this.proxy.counted(this.dir, 'forwardedBytes', chunk.length);
    if (!this.to.write(chunk) && !this.awaitingDrain) {
      this.awaitingDrain = true;
      this.to.once('drain', () => {
        this.awaitingDrain = false;
        this.resumeSender();
      });
      this.pauseSender();
    }
  }

  private pauseSender(): void {
    if (this.paused) return;
    this.paused = true;
    this.from.pause();
  }

  private resumeSender(): void {
    if (!this.paused || this.awaitingDrain || this.queuedBytes > HIGH_WATER_BYTES) return;
    this.paused = false;
    this.from.resume();
  }

  private schedule(): void {
    const head = this.queue[0];
    if (this.timer !== null || head === undefined) return;
    this.proxy.timers(1);
    this.timer = setTimeout(() => this.flush(), Math.max(0, Math.ceil(head.dueAt - performance.now())));
  }

  private flush(): void {
    this.timer = null;
    this.proxy.timers(-1);
    const now = performance.now();
    for (let head = this.queue[0]; head !== undefined && head.dueAt <= now; head = this.queue[0]) {
      this.queue.shift();
      if (head.chunk === null) {
        this.to.end();
        continue;
      }
      this.queuedBytes -= head.chunk.length;
      this.proxy.counted(this.dir, 'queuedBytes', -head.chunk.length);
      this.write(head.chunk);
    }
    this.resumeSender();
    this.schedule();
  }

  /** Stops for good: queued bytes count as dropped. */
  stop(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.proxy.timers(-1);
    }
    this.timer = null;
    const dropped = this.queuedBytes;
    this.queue.length = 0;
    this.queuedBytes = 0;
    if (dropped > 0) {
      this.proxy.counted(this.dir, 'queuedBytes', -dropped);
      this.proxy.counted(this.dir, 'droppedBytes', dropped);
    }
  }
}

/** One proxied connection: the dialer's socket, ours to the target, a pipe each way. */
class Link {
  readonly forward: Pipe;
  readonly backward: Pipe;
  readonly closed: Promise<void>;
  private wasDestroyed = false;

  constructor(
    readonly client: Socket,
    readonly upstream: Socket,
    proxy: ProxyControl,
    onTargetUnreachable: () => void,
  ) {
    this.forward = new Pipe('forward', client, upstream, proxy);
    this.backward = new Pipe('backward', upstream, client, proxy);
    let connected = false;
    upstream.once('connect', () => (connected = true));
    // Errors end in 'close', handled below; listening keeps them from being thrown.
    client.on('error', () => {});
    upstream.on('error', () => {
      if (!connected) onTargetUnreachable();
    });
    // A side that closed after passing on its end lets the other finish delivering;
    // one that closed abruptly takes the other down with it (RST), as TCP would.
    client.once('close', () => {
      if (!this.forward.sawEnd) this.destroy();
    });
    upstream.once('close', () => {
      if (!this.backward.sawEnd) this.destroy();
    });
    this.closed = Promise.all([closeOf(client), closeOf(upstream)]).then(() => {
      this.forward.stop();
      this.backward.stop();
    });
  }

  get lostBytes(): boolean {
    return this.forward.lostBytes || this.backward.lostBytes;
  }

  get destroyed(): boolean {
    return this.wasDestroyed;
  }

  destroy(): void {
    this.wasDestroyed = true;
    this.forward.stop();
    this.backward.stop();
    reset(this.client);
    reset(this.upstream);
  }
}

function closeOf(socket: Socket): Promise<void> {
  return new Promise((resolve) => socket.once('close', () => resolve()));
}

/** Closes a socket with RST, as a network failure looks to the peer. */
function reset(socket: Socket): void {
  if (socket.destroyed) return;
  if (socket.connecting) socket.destroy();
  else socket.resetAndDestroy();
}

export class FaultProxy {
  private readonly links = new Set<Link>();
  private readonly blocked = { forward: false, backward: false };
  private delayMs = 0;
  private readonly counters: Counters = {
    forward: { forwardedBytes: 0, droppedBytes: 0, queuedBytes: 0 },
    backward: { forwardedBytes: 0, droppedBytes: 0, queuedBytes: 0 },
    accepted: 0,
    refused: 0,
    destroyed: 0,
    targetUnreachable: 0,
  };
  private readonly watchers = new Set<{ check: () => void; fail: (error: Error) => void }>();
  private closing: Promise<void> | null = null;
  private timerCount = 0;
  private readonly control: ProxyControl = {
    isBlocked: (dir) => this.blocked[dir],
    delayMs: () => this.delayMs,
    counted: (dir, field, bytes) => {
      this.counters[dir][field] += bytes;
      this.changed();
    },
    timers: (delta) => {
      this.timerCount += delta;
    },
  };

  private constructor(
    private readonly server: Server,
    private readonly target: { readonly host: string; readonly port: number },
    readonly host: string,
    readonly port: number,
  ) {
    server.on('connection', (socket) => this.accept(socket));
  }

  /** Starts listening; resolves once the port is bound. */
  static async start(options: FaultProxyOptions): Promise<FaultProxy> {
    const host = options.listenHost ?? '127.0.0.1';
    checkPort('listenPort', options.listenPort, true);
    if (typeof options.target !== 'object' || options.target === null) throw new FaultProxyError('target must be { host, port }');
    checkPort('target.port', options.target.port, false);
    if (typeof options.target.host !== 'string' || options.target.host === '') throw new FaultProxyError('target.host must be a non-empty string');
    const server = createServer({ allowHalfOpen: true });
    try {
      server.listen(options.listenPort, host);
      await once(server, 'listening');
    } catch (error) {
      server.close();
      throw new FaultProxyError(`cannot listen on ${host}:${options.listenPort}: ${(error as Error).message}`, { cause: error });
    }
    const { port } = server.address() as AddressInfo;
    return new FaultProxy(server, { host: options.target.host, port: options.target.port }, host, port);
  }

  /** Drops traffic in `mode`'s direction(s) until heal(); see the file comment for what happens to connections. */
  block(mode: BlockMode): void {
    this.checkOpen('block');
    if (mode !== 'forward' && mode !== 'backward' && mode !== 'both') throw new FaultProxyError(`block() takes 'forward', 'backward' or 'both', got ${String(mode)}`);
    const dirs: Direction[] = mode === 'both' ? ['forward', 'backward'] : [mode];
    const newlyBlocked = dirs.filter((d) => !this.blocked[d]);
    for (const d of dirs) this.blocked[d] = true;
    // Every current connection was forwarding in a newly blocked direction: bytes in flight may be cut mid-frame.
    if (newlyBlocked.length > 0) this.destroyWhere(() => true);
    this.changed();
  }

  /** Unblocks both directions; connections that lost bytes are destroyed, the rest carry on. */
  heal(): void {
    this.checkOpen('heal');
    this.blocked.forward = false;
    this.blocked.backward = false;
    this.destroyWhere((link) => link.lostBytes);
    this.changed();
  }

  /** Holds every chunk for `ms` from now on (0 = no delay), in order, both directions. */
  delay(ms: number): void {
    this.checkOpen('delay');
    if (!Number.isFinite(ms) || ms < 0) throw new FaultProxyError(`delay must be a non-negative number of ms, got ${String(ms)}`);
    this.delayMs = ms;
  }

  /** Destroys every current connection (RST both ways) without blocking new ones. */
  cut(): void {
    this.checkOpen('cut');
    this.destroyWhere(() => true);
    this.changed();
  }

  /** Delay timers currently pending (0 after close()). */
  get pendingTimers(): number {
    return this.timerCount;
  }

  get blockedDirections(): { readonly forward: boolean; readonly backward: boolean } {
    return { ...this.blocked };
  }

  stats(): FaultProxyStats {
    const c = this.counters;
    return {
      forward: { ...c.forward },
      backward: { ...c.backward },
      connections: { accepted: c.accepted, refused: c.refused, active: this.links.size, destroyed: c.destroyed, targetUnreachable: c.targetUnreachable },
    };
  }

  /**
   * Resolves with the stats once `predicate` holds for them, checked now and after
   * every change; rejects if the proxy closes first. For tests and harnesses that
   * need to wait for traffic to have happened, without sleeping.
   */
  waitFor(predicate: (stats: FaultProxyStats) => boolean): Promise<FaultProxyStats> {
    if (this.closing !== null) return Promise.reject(new FaultProxyError('the proxy is closed'));
    return new Promise((resolve, reject) => {
      const watcher = {
        check: () => {
          const stats = this.stats();
          if (!predicate(stats)) return;
          this.watchers.delete(watcher);
          resolve(stats);
        },
        fail: (error: Error) => {
          this.watchers.delete(watcher);
          reject(error);
        },
      };
      this.watchers.add(watcher);
      watcher.check();
    });
  }

  /** Stops listening and destroys every connection; resolves when all sockets are closed. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const serverClosed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      const links = [...this.links];
      for (const link of links) link.destroy();
      for (const watcher of [...this.watchers]) watcher.fail(new FaultProxyError('the proxy closed while waiting'));
      await Promise.all([serverClosed, ...links.map((l) => l.closed)]);
    })();
    return this.closing;
  }

  private accept(client: Socket): void {
    if (this.closing !== null) {
      reset(client);
      return;
    }
    if (this.blocked.forward && this.blocked.backward) {
      this.counters.refused++;
      client.on('error', () => {});
      reset(client);
      this.changed();
      return;
    }
    this.counters.accepted++;
    const upstream = createConnection({ host: this.target.host, port: this.target.port, allowHalfOpen: true });
    const link = new Link(client, upstream, this.control, () => {
      this.counters.targetUnreachable++;
      reset(client);
      this.changed();
    });
    this.links.add(link);
    void link.closed.then(() => {
      this.links.delete(link);
      this.changed();
    });
    this.changed();
  }

  private destroyWhere(test: (link: Link) => boolean): void {
    for (const link of this.links) {
      if (link.destroyed || !test(link)) continue;
      this.counters.destroyed++;
      link.destroy();
    }
  }

  private changed(): void {
    for (const watcher of [...this.watchers]) watcher.check();
  }

  private checkOpen(what: string): void {
    if (this.closing !== null) throw new FaultProxyError(`${what}() after close()`);
  }
}

function checkPort(name: string, port: unknown, zeroAllowed: boolean): void {
  if (typeof port !== 'number' || !Number.isInteger(port) || port < (zeroAllowed ? 0 : 1) || port > 65535) {
    throw new FaultProxyError(`${name} must be an integer port${zeroAllowed ? ' (0 = pick)' : ''}, got ${String(port)}`);
  }
}
