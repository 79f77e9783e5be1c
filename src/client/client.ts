// The Vera client: one session kept alive across connections.
//
// - connect() tries the given servers in turn, in a random order (option
//   `random`), follows NOT_LEADER to the leader, and backs off (honoring
//   retryAfterMs) on NO_LEADER/UNAVAILABLE.
// - The session is heartbeated with `ping {ack}` at a third of its timeout; a
//   connection silent for two thirds of it is presumed dead (as ZooKeeper's
//   client does) so the session can be resumed elsewhere before it expires.
// - On connection loss it reconnects to any known server and resumes with
//   `hello {session, resume}` (the resume token its first hello answered). Reads in flight are resent; writes in flight reject
//   with UNAVAILABLE because their outcome is unknown. The known servers include
//   the members the last hello named; after close code 4009 each gets less time.
// - SESSION_EXPIRED ends the client for good: its ephemeral items are gone,
//   and only the application knows how to recover (recipes depend on that).
import { CloseCode, DEFAULT_LIMITS, NOT_PROPOSED, validateRequest, VeraError, type FamilyRequest, type FamilyResult, type RequestBuilder, type ChangeEvent, type Encoding, type GetResult, type HelloResult, type Item, type JsonValue, type LsResult, type Op, type Request, type RequestBody, type ResultOf, type ResyncList, type WatchResult } from '../protocol/index.js';
import { Backoff, type BackoffOptions } from './backoff.js';
import { Connection, ConnectionLost, type TlsClientOptions } from './connection.js';
import { TypedEmitter } from './emitter.js';
import { Notifications, type ClientEvent } from './notifications.js';
import { checkResult } from './results.js';
import { ServerRing } from './urls.js';

export interface ConnectOptions extends TlsClientOptions {
  /** Session timeout to ask for; the server clamps it (and reports what it granted). */
  readonly timeoutMs?: number;
  /**
   * Resume this session instead of opening a new one; only with `resume`. A session id alone
   * proves nothing (items show it), so without its token a new session is opened instead.
   */
  readonly session?: string;
  /** With `session`: its resume token (`client.resumeToken` of the client that opened it). */
  readonly resume?: string;
  /** Authentication token, for servers that require one (`vera login`, or POST /v1/auth/login). */
  readonly token?: string;
  /** A user and password instead of a token: sent in each hello (so use wss:// beyond loopback). */
  readonly user?: string;
  readonly password?: string;
  /** Frame encoding. Default 'msgpack'. */
  readonly encoding?: Encoding;
  /** How long connect() keeps trying before it gives up. Default 10 s. */
  readonly connectTimeoutMs?: number;
  /** How long a request may take, retries and waiting for a connection included. Default 30 s. */
  readonly requestTimeoutMs?: number;
  /** Delays between connection attempts and retried requests. */
  readonly backoff?: BackoffOptions;
  /** NOT_LEADER answers followed in a row before backing off (guards against redirect loops). Default 8. */
  readonly maxRedirects?: number;
  /**
   * Shuffles the servers (a number in [0, 1) per call, as Math.random, the default, gives), so
   * clients given the same ones spread over them, and over the rest when one goes. One that
   * always answers 0 keeps the given order, as tests want.
   */
  readonly random?: () => number;
  /**
   * Whether the members a server names in its hello join the servers this client tries (default
   * true). Off for a client that must reach the cluster only through the addresses it was given:
   * through a proxy, a tunnel or NAT, where a member's own address is not the one to dial.
   */
  readonly learnMembers?: boolean;
}

export interface PushOptions {
  /** Default false: the item is deleted when this session ends. */
  readonly persistent?: boolean;
  /** Default true: also watch the list from the pushed item on. */
  readonly watch?: boolean;
  /** Succeed only if the list's newest item has this index (0 = empty list); else CONFLICT. */
  readonly ifLastIndex?: number;
}

export interface GetOptions {
  readonly consistency?: 'linearizable' | 'stale';
}

export interface WatchOptions {
  /** Watch every list at or below the path. */
  readonly prefix?: boolean;
  /**
   * Start from this past index (the last one this client saw, say, before it restarted):
   * the result's `events` are what happened after it, up to its `index`; live events
   * follow from there. `missed: true` when the member no longer holds them all: re-read.
   */
  readonly since?: number;
}

export type ClientState = 'connecting' | 'open' | 'reconnecting' | 'closing' | 'closed' | 'expired';

export interface ConnectedInfo {
  readonly url: string;
  readonly session: string;
  readonly resumed: boolean;
  readonly hello: HelloResult;
}

export interface ClientEvents {
  /** A change on a watched list (duplicates from resumes already dropped). */
  event: (event: ChangeEvent) => void;
  /** Replace your view of these lists: the server could not replay their events. */
  resync: (lists: readonly ResyncList[]) => void;
  /** The session is gone (its ephemeral items deleted); the client is finished. */
  sessionExpired: (error: VeraError) => void;
  /** A connection was established (first one, or a resume). */
  connected: (info: ConnectedInfo) => void;
  /** The connection was lost; the client is reconnecting. */
  disconnected: (reason: string) => void;
  /** Reconnecting failed for good (e.g. UNAUTHORIZED); the client is closed. */
  failed: (error: VeraError) => void;
  /** The server dropped these watches: the user may no longer watch them (a permission was revoked). */
  revoked: (watches: ReadonlyArray<{ readonly path: string; readonly prefix: boolean }>, reason: string) => void;
}

/**
 * Close code a server uses when another connection resumed this session
 * (docs/protocol.md "Close codes"). Reconnecting would steal it back and forth.
 */
const CLOSE_SESSION_MOVED = CloseCode.sessionMoved;

const READS: ReadonlySet<Op> = new Set<Op>(['get', 'ls']);
/** The shortest time one server gets to answer a first hello, however many servers share the connect budget. */
const MIN_ATTEMPT_MS = 500;
const FATAL_HELLO_ERRORS: ReadonlySet<string> = new Set(['SESSION_EXPIRED', 'UNAUTHORIZED', 'BAD_REQUEST', 'FORBIDDEN']);

interface Call {
  readonly body: RequestBody;
  readonly read: boolean;
  readonly deadline: number;
  readonly resolve: (result: Readonly<Record<string, unknown>>) => void;
  readonly reject: (error: VeraError) => void;
  readonly backoff: Backoff;
  deadlineTimer: ReturnType<typeof setTimeout> | null;
  retryTimer: ReturnType<typeof setTimeout> | null;
  sent: { readonly conn: Connection; readonly id: number } | null;
  settled: boolean;
}

/** Connects and opens (or resumes) a session. Rejects with a VeraError when no server accepts it in time. */
export async function connect(urls: string | readonly string[], options: ConnectOptions = {}): Promise<VeraClient> {
  const client = new VeraClient(typeof urls === 'string' ? [urls] : urls, options);
  await client.start();
  return client;
}

export class VeraClient extends TypedEmitter<ClientEvents> {
  private readonly ring: ServerRing;
  private readonly learnMembers: boolean;
  private readonly encoding: Encoding;
  private readonly connectTimeoutMs: number;
  private readonly requestTimeoutMs: number;
  private readonly maxRedirects: number;
  private readonly notifications: Notifications;
  private stateValue: ClientState = 'connecting';
  private conn: Connection | null = null;
  private sessionId: string | null;
  /** The session's resume token, when the server gave one: sent with every resume. */
  private resumeValue: string | null;
  private grantedTimeoutMs = 0;
  private nextId = 1;
  private readonly calls = new Set<Call>();
  private readonly queue: Call[] = [];
  private heartbeat: ReturnType<typeof setTimeout> | null = null;
  private readonly stop = new AbortController();
  private nextPreferredUrl: string | null = null;
  private closing: Promise<void> | null = null;

  /** Use connect(); the constructor does no I/O. */
  constructor(
    urls: readonly string[],
    private readonly options: ConnectOptions = {},
  ) {
    super();
    this.ring = new ServerRing(urls, options.random);
    this.learnMembers = options.learnMembers ?? true;
    this.encoding = options.encoding ?? 'msgpack';
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.maxRedirects = options.maxRedirects ?? 8;
    // A session is resumed only with its token: a bare id would be refused, so it opens a new one.
    const resumable = options.session !== undefined && options.resume !== undefined;
    this.sessionId = resumable ? options.session! : null;
    this.resumeValue = resumable ? options.resume! : null;
    this.notifications = new Notifications({
      event: (event) => this.emit('event', event),
      resync: (lists) => this.emit('resync', lists),
    });
  }

  /** Opens the first connection; connect() calls it. */
  async start(): Promise<void> {
    try {
      await this.establish(false, performance.now() + this.connectTimeoutMs, null);
    } catch (error) {
      this.shutDown('closed', asVeraError(error));
      throw error;
    }
  }

  get state(): ClientState {
    return this.stateValue;
  }

  /** The session id (set once connected). */
  get session(): string {
    if (this.sessionId === null) throw new VeraError('UNAVAILABLE', 'not connected yet');
    return this.sessionId;
  }

  /**
   * The session's resume token (null when the server gives none): proof that this client
   * opened the session. Keep it secret; pass it as `resume` with `session` to resume elsewhere.
   */
  get resumeToken(): string | null {
    return this.resumeValue;
  }

  /** The session timeout the server granted. */
  get sessionTimeoutMs(): number {
    return this.grantedTimeoutMs;
  }

  /** The server URL of the current connection, or null while disconnected. */
  get serverUrl(): string | null {
    return this.conn?.url ?? null;
  }

  // ---------------------------------------------------------------- operations

  /** Pushes `data` (any JSON value) onto the list at `path`; resolves with the committed item. */
  async push(path: string, data: unknown, options: PushOptions = {}): Promise<Item> {
    const result = await this.call('push', { path, data: data as JsonValue, ...options });
    return result.item;
  }

  /** The whole list, from one read at the returned index; a list over one frame comes in several (a streamed get). */
  async get(path: string, options: GetOptions = {}): Promise<GetResult> {
    return this.call('get', { path, stream: true, ...options });
  }

  /** Names directly below `path` that lead to a non-empty list. */
  async ls(path: string): Promise<LsResult> {
    return this.call('ls', { path });
  }

  /** Deletes the item with `index` from the list at `path`. */
  async delete(path: string, index: number): Promise<void> {
    await this.call('delete', { path, index });
  }

  /** Watches a list (or, with prefix, every list below a path); events start right after the returned index. */
  async watch(path: string, options: WatchOptions = {}): Promise<WatchResult> {
    const result = await this.call('watch', { path, ...options });
    if (result.tooLarge !== true) return result;
    // Too big to come with the watch: read it now and keep what existed at the watch's index.
    // Items deleted since then are missing here, and their delete events follow.
    const later = await this.get(path);
    const items = later.items.filter((item) => item.index <= result.index);
    const { tooLarge: _tooLarge, ...rest } = result;
    return { ...rest, items };
  }

  async unwatch(path: string, options: WatchOptions = {}): Promise<void> {
    await this.call('unwatch', { path, ...(options.prefix === undefined ? {} : { prefix: options.prefix }) });
  }

  /** Notifications as an async iterator, from now on. Ends on close(); throws SESSION_EXPIRED when the session dies. */
  events(): AsyncIterableIterator<ClientEvent> {
    return this.notifications.subscribe();
  }

  /** Ends the session (`bye`: its ephemeral items are deleted) and closes the connection. */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    if (this.stateValue === 'closed' || this.stateValue === 'expired') return Promise.resolve();
    this.closing = this.closeNow();
    return this.closing;
  }

  private async closeNow(): Promise<void> {
    const conn = this.stateValue === 'open' ? this.conn : null;
    this.stateValue = 'closing';
    this.stopHeartbeat();
    this.stop.abort();
    if (conn !== null && conn.isOpen) {
      try {
        await withTimeout(conn.request({ id: this.nextId++, op: 'bye' }), Math.min(this.requestTimeoutMs, 5_000));
      } catch {
        // The session then simply expires on the server; nothing more to do here.
      }
    }
    this.shutDown('closed', new VeraError('UNAVAILABLE', 'the client was closed'));
  }

  // ---------------------------------------------------------------- requests

  private call<O extends Op>(op: O, args: Omit<RequestBody<O>, 'op'>): Promise<ResultOf<O>> {
    // The server's own rules, except the data size: only the server knows its data limit.
    const checked = validateRequest({ id: 0, op, ...args }, DEFAULT_LIMITS, { checkDataSize: false });
    if (!checked.ok) return Promise.reject(new VeraError(checked.error.code, checked.error.message));
    const { id: _unused, ...body } = checked.request;
    return this.send(body, READS.has(op)).then((result) => checkResult(op, result));
  }

  /**
   * Sends an op a command family added to the protocol (src/protocol/extension.ts),
   * checked first with that family's request builder. Unless `read` (it changes
   * nothing), it is treated as a write: once it may have reached a server it is not
   * sent again. Resolves with the reply's fields.
   */
  callFamilyOp(op: string, fields: Readonly<Record<string, unknown>>, build: RequestBuilder, read = false): Promise<FamilyResult> {
    let checked: FamilyRequest;
    try {
      checked = build({ ...fields, id: 0, op }, 0, DEFAULT_LIMITS);
    } catch (error) {
      return Promise.reject(error instanceof VeraError ? error : new VeraError('BAD_REQUEST', String(error)));
    }
    const { id: _unused, ...body } = checked;
    return this.send(body as unknown as RequestBody, read).then(({ ok: _ok, ...result }) => result);
  }

  private send(body: RequestBody, read: boolean): Promise<Readonly<Record<string, unknown>>> {
    return new Promise<Readonly<Record<string, unknown>>>((resolve, reject) => {
      const call: Call = {
        body,
        read,
        deadline: performance.now() + this.requestTimeoutMs,
        resolve,
        reject,
        backoff: new Backoff(this.options.backoff),
        deadlineTimer: null,
        retryTimer: null,
        sent: null,
        settled: false,
      };
      call.deadlineTimer = setTimeout(() => this.timeOut(call), this.requestTimeoutMs);
      this.calls.add(call);
      this.dispatch(call);
    });
  }

  private dispatch(call: Call): void {
    if (call.settled) return;
    const state = this.stateValue;
    if (state === 'closing' || state === 'closed') return this.settle(call, new VeraError('UNAVAILABLE', 'the client was closed'));
    if (state === 'expired') return this.settle(call, new VeraError('SESSION_EXPIRED', 'the session has expired'));
    const conn = this.conn;
    if (state !== 'open' || conn === null || !conn.isOpen) {
      this.queue.push(call);
      return;
    }
    const id = this.nextId++;
    call.sent = { conn, id };
    conn.request({ ...call.body, id } as Request).then(
      (result) => {
        call.sent = null;
        this.settle(call, null, result);
      },
      (error: unknown) => {
        call.sent = null;
        this.onCallError(call, conn, asVeraError(error));
      },
    );
  }

  private onCallError(call: Call, conn: Connection, error: VeraError): void {
    if (call.settled) return;
    const op = call.body.op;
    if (error instanceof ConnectionLost) {
      if (call.read) return this.dispatch(call); // reads are safe to resend
      return this.settle(call, new VeraError('UNAVAILABLE', `${error.message}; ${op} may or may not have been applied`, {}, { cause: error }));
    }
    switch (error.code) {
      case 'NOT_LEADER':
        // Refused, so not applied: resend it to the leader.
        this.queue.push(call);
        this.moveToLeader(conn, error);
        return;
      case 'NO_LEADER':
      case 'RATE_LIMITED':
        return this.retryLater(call, error);
      case 'UNAVAILABLE':
        // A write refused before it was proposed changed nothing: safe to send again, as a read is.
        return call.read || error.hints.reason === NOT_PROPOSED ? this.retryLater(call, error) : this.settle(call, error);
      case 'SESSION_EXPIRED':
        this.settle(call, error);
        this.expire(error);
        return;
      default:
        return this.settle(call, error);
    }
  }

  private retryLater(call: Call, error: VeraError): void {
    const delay = call.backoff.next(error.hints.retryAfterMs);
    if (performance.now() + delay >= call.deadline) return this.settle(call, error);
    call.retryTimer = setTimeout(() => {
      call.retryTimer = null;
      this.dispatch(call);
    }, delay);
  }

  private timeOut(call: Call): void {
    const sent = call.sent;
    if (sent !== null) sent.conn.forget(sent.id);
    const unknown = sent !== null && !call.read ? '; it may or may not have been applied' : '';
    this.settle(call, new VeraError('TIMEOUT', `${call.body.op} got no reply within ${this.requestTimeoutMs} ms${unknown}`));
  }

  private settle(call: Call, error: VeraError | null, result?: Readonly<Record<string, unknown>>): void {
    if (call.settled) return;
    call.settled = true;
    if (call.deadlineTimer !== null) clearTimeout(call.deadlineTimer);
    if (call.retryTimer !== null) clearTimeout(call.retryTimer);
    this.calls.delete(call);
    const queued = this.queue.indexOf(call);
    if (queued >= 0) this.queue.splice(queued, 1);
    if (error !== null) call.reject(error);
    else call.resolve(result ?? {});
  }

  // ---------------------------------------------------------------- connections

  /**
   * Connects to some server and says hello, until it works, fails for good, or `deadline` passes.
   * Attempts started before `hurryUntil` are shorter (attemptTimeoutMs).
   */
  private async establish(resume: boolean, deadline: number | null, preferredUrl: string | null, hurryUntil: number | null = null): Promise<void> {
    const backoff = new Backoff(this.options.backoff);
    let redirects = 0;
    let nextUrl = preferredUrl;
    let lastError: VeraError | null = null;
    for (;;) {
      if (this.stop.signal.aborted) throw new VeraError('UNAVAILABLE', 'the client was closed');
      const remaining = deadline === null ? this.requestTimeoutMs : deadline - performance.now();
      if (remaining <= 0) {
        const reason = lastError === null ? 'no attempt finished' : lastError.message;
        throw new VeraError(lastError?.code === 'NO_LEADER' ? 'NO_LEADER' : 'UNAVAILABLE', `could not connect to ${this.ring.all().join(', ')} within ${this.connectTimeoutMs} ms: ${reason}`, lastError?.hints ?? {});
      }
      const url = nextUrl ?? this.ring.current();
      nextUrl = null;
      const fullAttemptMs = this.attemptTimeoutMs(hurryUntil);
      const attemptMs = Math.min(remaining, fullAttemptMs);
      try {
        await this.attempt(url, resume, attemptMs);
        return;
      } catch (error) {
        const failed = asVeraError(error);
        // An attempt the deadline cut short that merely ran out of time says less than the failure
        // before it (a refused certificate, say), which is then the one reported.
        if (lastError === null || attemptMs >= fullAttemptMs || !ranOutOfTime(failed)) lastError = failed;
      }
      if (FATAL_HELLO_ERRORS.has(lastError.code)) throw lastError;
      // A hint that would lower the transport (ws:// when wss:// was given) is not followed.
      const leaderUrl = lastError.code === 'NOT_LEADER' && lastError.hints.leader !== undefined ? this.ring.leaderUrl(lastError.hints.leader) : null;
      if (leaderUrl !== null && redirects < this.maxRedirects) {
        redirects++;
        nextUrl = leaderUrl;
        this.ring.add(nextUrl);
        continue;
      }
      redirects = 0;
      this.ring.advance();
      const delay = backoff.next(lastError.hints.retryAfterMs);
      await abortableDelay(deadline === null ? delay : Math.min(delay, Math.max(0, deadline - performance.now())), this.stop.signal);
    }
  }

  /**
   * How long one server gets to open a socket and answer hello. Once a session
   * exists, a server slower than two thirds of its timeout would let it expire,
   * so move on to the next one; before that, the request timeout applies.
   * Until `hurryUntil` (half the timeout after a 4009: the member closed once its
   * confirmation of the session was half the timeout old) each gets a quarter, so two
   * can be tried in what is left. After that the session has either expired (a server
   * says so at once) or been attached afresh at its full timeout, so a resume that
   * needs longer than a quarter (a busy leader's attach) gets the usual two thirds.
   */
  private attemptTimeoutMs(hurryUntil: number | null = null): number {
    // Before a session exists, share the connect budget among the servers (as
    // ZooKeeper's client does), so one that accepts sockets but never answers
    // (a paused process) cannot use all of it up.
    if (this.grantedTimeoutMs === 0) return Math.min(this.requestTimeoutMs, Math.max(MIN_ATTEMPT_MS, this.connectTimeoutMs / this.ring.all().length));
    const hurry = hurryUntil !== null && performance.now() < hurryUntil;
    return Math.min(this.requestTimeoutMs, Math.max(10, hurry ? this.grantedTimeoutMs / 4 : (this.grantedTimeoutMs * 2) / 3));
  }

  /** One connection attempt: open, hello, adopt. Throws what went wrong. */
  private async attempt(url: string, resume: boolean, timeoutMs: number): Promise<void> {
    let conn: Connection | null = null;
    conn = await Connection.open(url, this.encoding, timeoutMs, {
      onEvents: (events) => this.notifications.onEvents(events),
      onResync: (lists, more) => this.notifications.onResync(lists, more),
      onRevoked: (watches, reason) => this.emit('revoked', watches, reason),
      onClose: (reason, code) => {
        if (conn === null || conn !== this.conn) return;
        if (code === CLOSE_SESSION_MOVED) this.fail(new VeraError('UNAVAILABLE', `session ${this.sessionId} was resumed on another connection (${reason}); this client stops`));
        else this.connectionLost(conn, reason, code === CloseCode.leaderUnreachable);
      },
    }, this.options);
    if (this.stop.signal.aborted) {
      conn.terminate('the client was closed');
      throw new VeraError('UNAVAILABLE', 'the client was closed');
    }
    this.notifications.beginConnection();
    const session = this.sessionId ?? undefined;
    const hello: Request = {
      id: this.nextId++,
      op: 'hello',
      ...(this.options.timeoutMs === undefined ? {} : { timeoutMs: this.options.timeoutMs }),
      ...(session === undefined ? {} : { session }),
      ...(session === undefined || this.resumeValue === null ? {} : { resume: this.resumeValue }),
      ...(this.options.token === undefined ? {} : { token: this.options.token }),
      ...(this.options.user === undefined || this.options.password === undefined ? {} : { user: this.options.user, password: this.options.password }),
    };
    let result: HelloResult;
    try {
      result = checkResult('hello', await withTimeout(conn.request(hello), timeoutMs));
    } catch (error) {
      conn.terminate('hello failed');
      throw error;
    }
    if (!conn.isOpen) throw new VeraError('UNAVAILABLE', `connection to ${url} closed right after hello`);
    if (this.stop.signal.aborted) {
      conn.close();
      throw new VeraError('UNAVAILABLE', 'the client was closed');
    }
    if (session !== undefined && result.session !== session) {
      conn.close();
      throw new VeraError('SESSION_EXPIRED', `the server did not resume session ${session} (it offered ${result.session})`);
    }
    this.adopt(conn, url, result, resume || session !== undefined);
  }

  private adopt(conn: Connection, url: string, hello: HelloResult, resumed: boolean): void {
    this.conn = conn;
    this.sessionId = hello.session;
    if (hello.resume !== undefined) this.resumeValue = hello.resume;
    this.grantedTimeoutMs = hello.timeoutMs;
    this.ring.prefer(url);
    // The members that serve sessions (scale-out): somewhere to resume when this one goes.
    if (hello.members !== undefined && this.learnMembers) this.ring.learn(hello.members);
    this.stateValue = 'open';
    this.startHeartbeat();
    for (const call of this.queue.splice(0)) this.dispatch(call);
    this.emit('connected', { url, session: hello.session, resumed, hello });
  }

  /** `hurry`: the member closed with 4009, so about half the session's timeout is left to resume in. */
  private connectionLost(conn: Connection, reason: string, hurry = false): void {
    const hurryUntil = hurry ? performance.now() + this.grantedTimeoutMs / 2 : null;
    if (this.stateValue !== 'open' || this.conn !== conn) return;
    this.conn = null;
    this.stopHeartbeat();
    this.stateValue = 'reconnecting';
    this.emit('disconnected', reason);
    if (this.resumeValue === null) {
      // The server that opened it gave no token (a cluster before command version 6): no server will resume it.
      this.expire(new VeraError('SESSION_EXPIRED', `session ${this.sessionId} cannot be resumed: the server gave no resume token when it opened it; it expires on the server`));
      return;
    }
    const preferred = this.nextPreferredUrl;
    this.nextPreferredUrl = null;
    // The server just lost may be dead or paused: try the others first. Its turn comes again after them.
    if (preferred === null) this.ring.advance();
    this.establish(true, null, preferred, hurryUntil).catch((error: unknown) => {
      if (this.stop.signal.aborted) return;
      const failure = asVeraError(error);
      if (failure.code === 'SESSION_EXPIRED') this.expire(failure);
      else this.fail(failure);
    });
  }

  /** This server is no longer the leader: drop it and resume on the leader it named. */
  private moveToLeader(conn: Connection, error: VeraError): void {
    if (conn !== this.conn) return;
    if (error.hints.leader !== undefined) this.nextPreferredUrl = this.ring.leaderUrl(error.hints.leader);
    conn.terminate(`server is not the leader (${error.message})`);
  }

  private startHeartbeat(): void {
    this.stopHeartbeat();
    const interval = Math.max(10, Math.floor(this.grantedTimeoutMs / 3));
    this.heartbeat = setInterval(() => this.beat(), interval);
  }

  private stopHeartbeat(): void {
    if (this.heartbeat !== null) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  private beat(): void {
    const conn = this.conn;
    if (this.stateValue !== 'open' || conn === null) return;
    const silentMs = performance.now() - conn.lastReceivedAt;
    if (silentMs > (this.grantedTimeoutMs * 2) / 3) {
      conn.terminate(`no frame from the server for ${Math.round(silentMs)} ms`);
      return;
    }
    const ack = this.notifications.ackIndex();
    conn.request({ id: this.nextId++, op: 'ping', ...(ack > 0 ? { ack } : {}) }).catch((error: unknown) => {
      const failure = asVeraError(error);
      if (failure instanceof ConnectionLost) return;
      if (failure.code === 'SESSION_EXPIRED') this.expire(failure);
      else if (failure.code === 'NOT_LEADER') this.moveToLeader(conn, failure);
    });
  }

  // ---------------------------------------------------------------- endings

  private expire(error: VeraError): void {
    if (this.stateValue === 'expired' || this.stateValue === 'closed') return;
    this.shutDown('expired', error);
    this.emit('sessionExpired', error);
  }

  private fail(error: VeraError): void {
    if (this.stateValue === 'expired' || this.stateValue === 'closed') return;
    this.shutDown('closed', error);
    this.emit('failed', error);
  }

  /** Final state: no connection, no timers, every call rejected with `error`. */
  private shutDown(state: 'closed' | 'expired', error: VeraError): void {
    this.stateValue = state;
    this.stop.abort();
    this.stopHeartbeat();
    const conn = this.conn;
    this.conn = null;
    if (conn !== null) {
      if (state === 'closed') conn.close();
      else conn.terminate(error.message);
    }
    for (const call of [...this.calls]) this.settle(call, error);
    this.notifications.end(state === 'expired' ? error : null);
  }
}

function asVeraError(error: unknown): VeraError {
  if (error instanceof VeraError) return error;
  return new VeraError('INTERNAL', error instanceof Error ? error.message : String(error), {}, { cause: error });
}

/** An attempt that failed only because its own time was up (opening the socket, or the hello's reply). */
function ranOutOfTime(error: VeraError): boolean {
  return error.code === 'TIMEOUT' || /handshake has timed out/i.test(error.message);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new VeraError('TIMEOUT', `no reply within ${Math.round(ms)} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}
