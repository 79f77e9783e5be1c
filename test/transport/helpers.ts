// Test helpers for the peer transport: free ports, a logger and a message sink
// that tests can wait on, and a raw WebSocket peer for misbehaving on purpose.
// Every wait resolves on the real event; the deadline only turns a hang into a
// readable failure.

import WebSocket from 'ws';
import { DialerHandshake } from '../../src/raft/transport/auth.js';
import { PeerTransport, type PeerLogger, type PeerTransportOptions } from '../../src/raft/transport/peer-transport.js';
import { peerUrl } from '../../src/raft/transport/shared.js';
import type { HeartbeatRequest, Message, NodeId } from '../../src/raft/types.js';
import { withTimeout } from '../support/poll.js';

export const SECRET = 'test-cluster-secret';
export const CLUSTER = 'vera-test';
const DEADLINE_MS = 10_000;

export { freePort } from '../support/vera-process.js';

/** `promise`, or a rejection naming `what` if it has not settled within the deadline. */
export function withDeadline<T>(promise: Promise<T>, what: string): Promise<T> {
  return withTimeout(promise, DEADLINE_MS, what);
}

/** Resolves when `check()` first returns a value, re-checking whenever `subscribe` signals a change. */
function waitUntil<T>(check: () => T | undefined, subscribe: (wake: () => void) => () => void, what: string): Promise<T> {
  const now = check();
  if (now !== undefined) return Promise.resolve(now);
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`timed out waiting for ${what}`));
    }, DEADLINE_MS);
    const unsubscribe = subscribe(() => {
      const value = check();
      if (value === undefined) return;
      clearTimeout(timer);
      unsubscribe();
      resolve(value);
    });
  });
}

export interface LogLine {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly obj: Record<string, unknown>;
  readonly msg: string | undefined;
}

/** A PeerLogger that records every line and lets a test wait for one. */
export class RecordingLogger implements PeerLogger {
  readonly lines: LogLine[] = [];
  private readonly listeners = new Set<() => void>();

  debug(obj: object, msg?: string): void {
    this.record('debug', obj, msg);
  }
  info(obj: object, msg?: string): void {
    this.record('info', obj, msg);
  }
  warn(obj: object, msg?: string): void {
    this.record('warn', obj, msg);
  }
  error(obj: object, msg?: string): void {
    this.record('error', obj, msg);
  }

  events(event: string): LogLine[] {
    return this.lines.filter((l) => l.obj.event === event);
  }

  /** Waits for a line with this event (and matching fields), counting lines already logged. */
  waitFor(event: string, fields: Record<string, unknown> = {}): Promise<LogLine> {
    const matches = (l: LogLine): boolean => l.obj.event === event && Object.entries(fields).every(([k, v]) => l.obj[k] === v);
    return waitUntil(
      () => this.lines.find(matches),
      (wake) => {
        this.listeners.add(wake);
        return () => this.listeners.delete(wake);
      },
      `log event ${event} ${JSON.stringify(fields)}`,
    );
  }

  private record(level: LogLine['level'], obj: object, msg: string | undefined): void {
    this.lines.push({ level, obj: obj as Record<string, unknown>, msg });
    for (const wake of [...this.listeners]) wake();
  }
}

/** Collects delivered messages; tests wait for a count. */
export class MessageSink {
  readonly messages: Message[] = [];
  private readonly listeners = new Set<() => void>();

  readonly onMessage = (m: Message): void => {
    this.messages.push(m);
    for (const wake of [...this.listeners]) wake();
  };

  waitForCount(n: number): Promise<Message[]> {
    return waitUntil(
      () => (this.messages.length >= n ? this.messages.slice(0, n) : undefined),
      (wake) => {
        this.listeners.add(wake);
        return () => this.listeners.delete(wake);
      },
      `${n} messages (have ${this.messages.length})`,
    );
  }
}

export interface TestNode {
  readonly id: NodeId;
  readonly port: number;
  readonly transport: PeerTransport;
  readonly sink: MessageSink;
  readonly logger: RecordingLogger;
}

/** A transport on 127.0.0.1:`ports[id]` that knows every other id in `ports`. Not started. */
export function makeNode(
  id: NodeId,
  ports: Readonly<Record<NodeId, number>>,
  overrides: Partial<PeerTransportOptions> = {},
): TestNode {
  const sink = new MessageSink();
  const logger = new RecordingLogger();
  const port = ports[id]!;
  const transport = new PeerTransport({
    selfId: id,
    listen: { host: '127.0.0.1', port },
    peers: Object.entries(ports)
      .filter(([peer]) => peer !== id)
      .map(([peer, p]) => ({ id: peer, host: '127.0.0.1', port: p })),
    secret: SECRET,
    clusterId: CLUSTER,
    onMessage: sink.onMessage,
    logger,
    limits: { maxQueueMessages: 1000, maxQueueBytes: 1 << 20, maxFrameBytes: 64 * 1024 },
    // Fast redials keep tests short; the backoff itself is unit-tested.
    reconnect: { initialDelayMs: 5, maxDelayMs: 50 },
    handshakeTimeoutMs: 5000,
    ...overrides,
  });
  return { id, port, transport, sink, logger };
}

export function heartbeat(from: NodeId, to: NodeId, term: number): HeartbeatRequest {
  return { type: 'heartbeat', from, to, term, commit: 0, context: '' };
}

/** A hand-driven WebSocket peer, for sending what a well-behaved transport never would. */
export class RawPeer {
  readonly ws: WebSocket;
  readonly opened: Promise<void>;
  readonly closed: Promise<{ code: number; reason: string }>;

  /** `localAddress` picks the loopback address the socket comes from (any of 127.0.0.0/8). */
  constructor(port: number, path?: string, localAddress?: string) {
    this.ws = new WebSocket(path === undefined ? peerUrl('127.0.0.1', port) : `ws://127.0.0.1:${port}${path}`, {
      perMessageDeflate: false,
      ...(localAddress === undefined ? {} : { localAddress }),
    });
    this.ws.on('error', () => undefined); // 'close' follows and is what tests wait on
    this.opened = withDeadline(new Promise((resolve) => this.ws.once('open', () => resolve())), 'the raw peer to connect');
    this.closed = withDeadline(
      new Promise((resolve) => this.ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() }))),
      'the raw peer connection to close',
    );
    // Tests await these; the no-op handlers only stop an unawaited deadline from being reported twice.
    this.opened.catch(() => undefined);
    this.closed.catch(() => undefined);
  }

  /** The next frame from the other side. */
  nextFrame(): Promise<Buffer> {
    return withDeadline(new Promise((resolve) => this.ws.once('message', (data) => resolve(data as Buffer))), 'a frame from the listener');
  }

  /** Runs the dialer side of the handshake; resolves true when the listener accepted us. */
  async authenticate(selfId: NodeId, peerId: NodeId, secret = SECRET, clusterId = CLUSTER, commandVersion?: number): Promise<boolean> {
    await this.opened;
    const handshake = new DialerHandshake({ secret, clusterId, selfId, ...(commandVersion === undefined ? {} : { commandVersion }) }, peerId);
    const challenge = this.nextFrame();
    this.ws.send(handshake.hello());
    const proof = handshake.receive(await challenge)!;
    const welcome = Promise.race([this.nextFrame(), this.closed.then(() => null)]);
    this.ws.send(proof);
    const frame = await welcome;
    if (frame === null) return false;
    handshake.receive(frame);
    return handshake.authenticated;
  }

  send(frame: Buffer | string): void {
    this.ws.send(frame);
  }

  terminate(): Promise<{ code: number; reason: string }> {
    this.ws.terminate();
    return this.closed;
  }
}
