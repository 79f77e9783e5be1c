// A small in-process stand-in for a Vera server, speaking protocol v1 through the
// real protocol module, with knobs tests use to provoke what a client must
// survive: redirects, missing leaders, dropped connections, held or reordered
// replies, silence, expired sessions. Not a model of the real server's
// consistency: one process, everything applied at once.
import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  decodeFrame,
  encodeError,
  encodeNotify,
  encodeReply,
  helloFirstError,
  type AnyResult,
  type ChangeEvent,
  type Encoding,
  type Item,
  type ProtocolError,
  type Request,
  type ResyncList,
} from '../../src/protocol/index.js';
import { DEFAULT_LIMITS } from '../../src/protocol/types.js';
import { RANGE_OPS } from '../../src/families/range/wire.js';

interface Session {
  readonly id: string;
  /** The resume token the opening hello answered; a resume must send it (PROTOCOL.md "Session"). */
  readonly token: string;
  acked: number;
  readonly watches: Set<string>;
  conn: Conn | null;
}

interface Conn {
  readonly ws: WebSocket;
  encoding: Encoding | null;
  session: Session | null;
}

export interface Received {
  readonly at: number;
  readonly session: string | null;
  readonly request: Request;
  readonly binary: boolean;
}

/** What members of one fake cluster share, as replicated state would be shared. */
export class FakeState {
  readonly sessions = new Map<string, Session>();
  readonly lists = new Map<string, Item[]>();
  readonly log: ChangeEvent[] = [];
  index = 0;
  sessionCount = 0;
}

export type HelloMode = { kind: 'leader' } | { kind: 'redirect'; leader: string } | { kind: 'noLeader'; retryAfterMs: number; times: number };

export class FakeServer {
  readonly received: Received[] = [];
  /** Emits 'request' (Received) for every decoded request. */
  readonly events = new EventEmitter();
  helloMode: HelloMode = { kind: 'leader' };
  /** Requests of these ops get no reply until release(). */
  readonly holdOps = new Set<string>();
  /** When true, nothing is answered at all (a hung server). */
  silent = false;
  /** When false, a new session's hello answers no resume token (as a cluster before command version 6). */
  resumeTokens = true;
  /** Hellos are answered this much later (a member slow to attach a session); none on a connection closed meanwhile. */
  helloDelayMs = 0;
  /** Fields added to every hello reply (scale-out: `role`, `members`). */
  helloFields: Readonly<Record<string, unknown>> = {};
  private held: Array<{ request: Request; send: () => void }> = [];
  private readonly failures = new Map<string, ProtocolError[]>();
  private readonly conns = new Set<Conn>();

  private constructor(
    private readonly wss: WebSocketServer,
    readonly name: string,
    readonly sessionTimeoutMs: number,
    readonly state: FakeState,
  ) {
    wss.on('connection', (ws) => this.accept(ws));
  }

  private get sessions(): Map<string, Session> {
    return this.state.sessions;
  }

  private get lists(): Map<string, Item[]> {
    return this.state.lists;
  }

  private get log(): ChangeEvent[] {
    return this.state.log;
  }

  private get index(): number {
    return this.state.index;
  }

  private set index(value: number) {
    this.state.index = value;
  }

  /** Pass another server's `state` to make the two members of one cluster. */
  static async start(options: { name?: string; sessionTimeoutMs?: number; state?: FakeState } = {}): Promise<FakeServer> {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/v1/connect' });
    await new Promise<void>((resolve, reject) => {
      wss.once('listening', resolve);
      wss.once('error', reject);
    });
    return new FakeServer(wss, options.name ?? 'fake', options.sessionTimeoutMs ?? 10_000, options.state ?? new FakeState());
  }

  /** `ws://127.0.0.1:port`, the form NOT_LEADER hints take. */
  get url(): string {
    return `ws://127.0.0.1:${(this.wss.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const conn of this.conns) conn.ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }

  /** The next request of `op` gets this error instead of its normal answer. */
  failNext(op: string, error: ProtocolError): void {
    const queue = this.failures.get(op) ?? [];
    queue.push(error);
    this.failures.set(op, queue);
  }

  /** Sends the held replies, in the given order of their requests' ids. */
  release(order: 'asReceived' | 'reverse' = 'asReceived'): void {
    const held = this.held;
    this.held = [];
    if (order === 'reverse') held.reverse();
    for (const h of held) h.send();
  }

  heldCount(): number {
    return this.held.length;
  }

  /** Drops every connection without a close handshake, as a crash or a network cut would. */
  dropAll(): void {
    for (const conn of this.conns) conn.ws.terminate();
  }

  /** Closes every connection with a close code, as a member sending its clients away does (4009, say). */
  closeAll(code: number, reason: string): void {
    for (const conn of this.conns) conn.ws.close(code, reason);
  }

  /** Ends a session as expiry would: its ephemeral items go, and resuming it fails. */
  expire(sessionId: string): void {
    const session = this.sessions.get(sessionId);
    if (session === undefined) return;
    this.endSession(session);
  }

  /** Sends a resync to a session's connection. */
  resync(sessionId: string, lists: ResyncList[]): void {
    const conn = this.sessions.get(sessionId)?.conn;
    if (conn?.encoding) conn.ws.send(encodeNotify({ resync: lists }, conn.encoding));
  }

  sessionIds(): string[] {
    return [...this.sessions.keys()];
  }

  acked(sessionId: string): number {
    return this.sessions.get(sessionId)?.acked ?? -1;
  }

  /** Resolves with the first request (already received or future) that matches. */
  waitFor(match: (r: Received) => boolean, from = 0): Promise<Received> {
    const done = this.received.slice(from).find(match);
    if (done !== undefined) return Promise.resolve(done);
    return new Promise((resolve) => {
      const listener = (r: Received): void => {
        if (!match(r)) return;
        this.events.off('request', listener);
        resolve(r);
      };
      this.events.on('request', listener);
    });
  }

  // ---------------------------------------------------------------- protocol

  private accept(ws: WebSocket): void {
    const conn: Conn = { ws, encoding: null, session: null };
    this.conns.add(conn);
    ws.on('message', (data, isBinary) => this.onFrame(conn, data as Buffer, isBinary));
    ws.on('close', () => {
      this.conns.delete(conn);
      if (conn.session?.conn === conn) conn.session.conn = null;
    });
  }

  private onFrame(conn: Conn, data: Buffer, isBinary: boolean): void {
    // One family's ops besides the core (range: a read), answered with an empty page.
    const decoded = decodeFrame(data, isBinary, DEFAULT_LIMITS, RANGE_OPS);
    if (!decoded.ok) {
      conn.ws.send(encodeError(decoded.id, decoded.error, decoded.encoding));
      return;
    }
    const { encoding } = decoded;
    const request = decoded.request as Request; // a range op passes as one: handle() looks at its op first
    const received: Received = { at: performance.now(), session: conn.session?.id ?? null, request, binary: isBinary };
    this.received.push(received);
    // Announced after handling, so a waiter sees the request's effects (held, applied) already.
    if (!this.silent) this.handle(conn, request, encoding);
    this.events.emit('request', received);
  }

  private handle(conn: Conn, request: Request, encoding: Encoding): void {
    const reply = (result: AnyResult): void => void conn.ws.send(encodeReply(request.id, result, encoding));
    const fail = (error: ProtocolError): void => void conn.ws.send(encodeError(request.id, error, encoding));
    const answer = (respond: () => void): void => {
      if (this.holdOps.has(request.op)) this.held.push({ request, send: respond });
      else respond();
    };

    const failure = this.failures.get(request.op)?.shift();
    if (failure !== undefined) return answer(() => fail(failure));
    if (conn.session === null && request.op !== 'hello') return fail(helloFirstError(request.op));

    if ((request.op as string) === 'range.items') return answer(() => reply({ index: this.index, items: this.lists.get((request as unknown as { path: string }).path) ?? [] } as AnyResult));
    switch (request.op) {
      case 'hello': {
        const answerHello = (): void => this.hello(conn, request.session, request.resume, encoding, reply, fail);
        if (this.helloDelayMs === 0) return answerHello();
        setTimeout(() => {
          if (conn.ws.readyState === conn.ws.OPEN) answerHello();
        }, this.helloDelayMs);
        return;
      }
      case 'ping':
        if (request.ack !== undefined) conn.session!.acked = Math.max(conn.session!.acked, request.ack);
        return reply({ index: this.index });
      case 'bye':
        this.endSession(conn.session!);
        conn.session = null;
        return reply({});
      case 'push': {
        const session = conn.session!;
        const items = this.lists.get(request.path) ?? [];
        const last = items[items.length - 1]?.index ?? 0;
        if (request.ifLastIndex !== undefined && request.ifLastIndex !== last) {
          return answer(() => fail({ code: 'CONFLICT', message: `the newest item of ${request.path} has index ${last}, not ${request.ifLastIndex}` }));
        }
        const item: Item = { index: ++this.index, owner: request.persistent === true ? null : session.id, data: request.data };
        items.push(item);
        this.lists.set(request.path, items);
        this.publish([{ index: item.index, type: 'push', path: request.path, item }]);
        if (request.watch !== false) session.watches.add(request.path);
        return answer(() => reply({ item }));
      }
      case 'get':
        return answer(() => reply({ index: this.index, items: this.lists.get(request.path) ?? [] }));
      case 'ls':
        return answer(() => reply({ index: this.index, children: this.children(request.path) }));
      case 'delete': {
        const items = this.lists.get(request.path) ?? [];
        const item = items.find((i) => i.index === request.index);
        if (item === undefined) return answer(() => fail({ code: 'NOT_FOUND', message: `no item ${request.index} in ${request.path}` }));
        if (item.owner !== null && item.owner !== conn.session!.id) {
          return answer(() => fail({ code: 'FORBIDDEN', message: `item ${request.index} of ${request.path} is owned by another session` }));
        }
        this.remove([[request.path, item]]);
        return answer(() => reply({}));
      }
      case 'watch':
        conn.session!.watches.add(request.path);
        return answer(() => reply({ index: this.index, items: this.lists.get(request.path) ?? [] }));
      case 'unwatch':
        conn.session!.watches.delete(request.path);
        return answer(() => reply({}));
    }
  }

  private hello(
    conn: Conn,
    resume: string | undefined,
    token: string | undefined,
    encoding: Encoding,
    reply: (r: AnyResult) => void,
    fail: (e: ProtocolError) => void,
  ): void {
    const mode = this.helloMode;
    if (mode.kind === 'redirect') return fail({ code: 'NOT_LEADER', message: `${this.name} is a follower`, hints: { leader: mode.leader } });
    if (mode.kind === 'noLeader' && mode.times > 0) {
      mode.times--;
      return fail({ code: 'NO_LEADER', message: 'election in progress', hints: { retryAfterMs: mode.retryAfterMs } });
    }
    let session: Session;
    if (resume !== undefined) {
      const known = this.sessions.get(resume);
      if (known === undefined) return fail({ code: 'SESSION_EXPIRED', message: `session ${resume} has expired` });
      if (token !== known.token) return fail({ code: 'UNAUTHORIZED', message: `session ${resume} is resumed only with its resume token` });
      session = known;
    } else {
      const id = `s${++this.state.sessionCount}`;
      session = { id, token: `token-${id}`, acked: 0, watches: new Set(), conn: null };
      this.sessions.set(session.id, session);
    }
    if (session.conn !== null && session.conn !== conn) session.conn.ws.close(4002, 'session resumed on another connection');
    session.conn = conn;
    conn.session = session;
    conn.encoding = encoding;
    reply({ session: session.id, timeoutMs: this.sessionTimeoutMs, node: this.name, leader: this.name, term: 1, index: this.index, ...(resume === undefined && this.resumeTokens ? { resume: session.token } : {}), ...this.helloFields } as AnyResult);
    // At-least-once across reconnects: everything above the last ack, one frame per index.
    const missed = this.log.filter((e) => e.index > session.acked && session.watches.has(e.path));
    for (const batch of byIndex(missed)) conn.ws.send(encodeNotify({ events: batch }, encoding));
  }

  private endSession(session: Session): void {
    this.sessions.delete(session.id);
    const owned: Array<[string, Item]> = [];
    for (const [path, items] of this.lists) for (const item of items) if (item.owner === session.id) owned.push([path, item]);
    if (owned.length > 0) this.remove(owned);
    session.conn?.ws.terminate();
  }

  /** Deletes items in one "entry": one index for all of them. */
  private remove(doomed: Array<[string, Item]>): void {
    const index = ++this.index;
    const events: ChangeEvent[] = [];
    for (const [path, item] of doomed) {
      this.lists.set(path, (this.lists.get(path) ?? []).filter((i) => i !== item));
      events.push({ index, type: 'delete', path, item });
    }
    this.publish(events);
  }

  private publish(events: ChangeEvent[]): void {
    this.log.push(...events);
    for (const session of this.sessions.values()) {
      const mine = events.filter((e) => session.watches.has(e.path));
      const conn = session.conn;
      if (mine.length > 0 && conn?.encoding) conn.ws.send(encodeNotify({ events: mine }, conn.encoding));
    }
  }

  private children(path: string): string[] {
    const prefix = path === '/' ? '/' : `${path}/`;
    const names = new Set<string>();
    for (const [p, items] of this.lists) if (items.length > 0 && p.startsWith(prefix)) names.add(p.slice(prefix.length).split('/')[0]!);
    return [...names].sort();
  }
}

function byIndex(events: ChangeEvent[]): ChangeEvent[][] {
  const batches: ChangeEvent[][] = [];
  for (const event of events) {
    const last = batches[batches.length - 1];
    if (last !== undefined && last[0]!.index === event.index) last.push(event);
    else batches.push([event]);
  }
  return batches;
}
