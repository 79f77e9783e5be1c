// One client WebSocket: decodes frames, enforces "hello first" and the in-flight
// limit, runs each request and sends its reply in the request's encoding.
// Requests run concurrently; replies may leave out of order, as the protocol allows.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { WebSocket } from 'ws';
import { CloseCode, expectOk, notLeaderError, toVeraError, type AttachedConnection, type FrontEnd } from './context.js';
import { DEFAULT_NOTIFIER_LIMITS, type NotifySink } from './notifier.js';
import * as ops from './ops.js';
import { OutputBudget, type OutputSocket } from './output-budget.js';
import { ReadPauses } from './read-pauses.js';
import { CORE_NEEDS, runFamilyOp, type Need, type Principal } from '../guard/access.js';
import { credentialBasis, credentialProblem, type Credential } from '../guard/credential.js';
import type { CoreOp, CoreOpHandler } from '../../kit/plugin.js';
import type { LiveSession } from './plugin-part.js';
import { accessesOf, guarded } from '../guard/path-guard.js';
import type { Status } from '../../raft/types.js';
import { decodeFrame, encodeError, encodeNotify, encodeReply, VeraError, type AnyResult, type Encoding, type GetRequest, type GetResult, type HelloRequest, type HelloResult, type NotifyFrames, type NotifyPayload, type Request, isCoreRequest, type FamilyRequest, type FamilyResult, type LsResult, type MemberRole } from '../../protocol/index.js';

/** How long a hello on a member that knows no leader waits for an election to end (the shortest election timeout). */
const HELLO_LEADER_WAIT_MS = 1000;

interface Established {
  readonly session: string;
  /** Who the hello authenticated (null: authentication was off); every request is judged as this principal. */
  readonly principal: Principal;
  /** What that authentication rests on (null: authentication was off), judged again on every request (credential.ts). */
  readonly credential: Credential | null;
  /** The encoding of the hello, which notifications use. */
  readonly encoding: Encoding;
  readonly resumed: boolean;
}

/**
 * Bytes of requests a paused connection holds (beyond one frame of the frame limit): what ws
 * had read before the pause took hold, a socket read or two. More is refused (RATE_LIMITED);
 * with the socket paused it cannot come.
 */
const MAX_BACKLOG_BYTES = 4 * 1024 * 1024;

export class ClientConnection implements AttachedConnection, NotifySink {
  private established: Established | null = null;
  /** The hello being served; requests pipelined behind it wait for it. */
  private pendingHello: Promise<unknown> | null = null;
  private inflight = 0;
  private closed = false;
  /** Closes the connection if no hello has succeeded in time; null once one has. */
  private helloTimer: NodeJS.Timeout | null = null;
  /** The socket whose writes are held until the end of this event-loop turn (see corkUntilTurnEnds), if any. */
  private corked: { uncork(): void } | null = null;
  /** Gives back this connection's place in its user's connection count (set by a successful hello). */
  private releasePrincipal: (() => void) | null = null;
  /** Replies and notifications not yet written count here; see output-budget.ts. */
  private readonly output: OutputBudget;
  /** Set once the credential no longer holds: nothing more goes out, and the close follows this turn. */
  private revoked = false;
  /** Reviews the credential when its token expires (requests and notifications check the clock too). */
  private tokenTimer: NodeJS.Timeout | null = null;
  /** What holds the socket unread: its output, its requests in flight, the member's writes waiting to commit. */
  private readonly pauses: ReadPauses;
  /** Requests read after the socket was paused (what ws had already read), waiting for room, in order. */
  private backlog: Array<{ readonly request: Request | FamilyRequest; readonly encoding: Encoding; readonly bytes: number }> = [];
  private backlogBytes = 0;

  constructor(
    private readonly ws: WebSocket,
    private readonly remote: string,
    private readonly fe: FrontEnd,
    /** The user a verified client certificate names, if the connection came with one. */
    private readonly certUser: string | null = null,
  ) {
    // Until the hello, frames are held to the small hello limit and the connection to a deadline:
    // a socket that never says hello costs a descriptor and little else, and not for long.
    this.setFrameLimit(fe.limits.helloFrameBytes);
    this.helloTimer = setTimeout(() => this.close(CloseCode.noHello, `no hello within ${fe.limits.helloTimeoutMs} ms`), fe.limits.helloTimeoutMs);
    // The same marks as the notifier's: events stop at the first, the socket is dropped at the second.
    this.pauses = new ReadPauses(
      () => ws.pause(),
      () => ws.resume(),
    );
    this.output = new OutputBudget(
      wsOutput(ws, this.pauses),
      { pauseBytes: DEFAULT_NOTIFIER_LIMITS.stallBytes, closeBytes: DEFAULT_NOTIFIER_LIMITS.closeBytes },
      (buffered) => this.dropForBacklog(buffered),
      () => {
        if (this.established) fe.expiry.touch(this.established.session);
      },
    );
    ws.on('message', (data, isBinary) => this.onFrame(toBuffer(data), isBinary));
    ws.on('close', () => this.onClosed());
    ws.on('error', (err) => fe.logger.debug({ event: 'client-socket-error', remote, err: err.message }, 'client socket error'));
  }

  // ---------------------------------------------------------------- NotifySink / AttachedConnection

  sendNotify(payload: NotifyPayload, shared?: { readonly frames: NotifyFrames; readonly key: string }): void {
    if (!this.established || this.revoked) return;
    // A watch is only as good as the credential that set it: judged again before every event.
    if (this.fe.guard.enabled && this.reviewCredential()) return;
    if (!this.fe.guard.unrestricted(this.established.principal)) {
      // Each event and resynced list is judged as the watch was: only what the principal may still watch goes out.
      const allowed = visibleTo(this.fe, this.established.principal, payload);
      if (allowed === null) return;
      if (allowed !== payload) shared = undefined;
      payload = allowed;
    }
    if ('events' in payload) this.fe.metrics.notifications.inc(payload.events.length);
    const { encoding } = this.established;
    // Not corked: notifications go out during the notifier's flush, one frame per watcher, and must not wait a loop turn.
    this.sendFrame(shared === undefined ? encodeNotify(payload, encoding) : shared.frames.encode(shared.key, payload, encoding), false);
  }

  bufferedBytes(): number {
    // Held writes would count as backlog: let them go first, so a fast client is not taken for a slow one.
    this.uncorkNow();
    return this.ws.bufferedAmount;
  }

  room(): Promise<void> {
    this.uncorkNow();
    return this.output.room();
  }

  closeSlow(): void {
    this.close(CloseCode.slowConsumer, 'notification backlog too large; resume the session to resync');
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.ws.close(code, reason);
    this.onClosed();
  }

  /** Past the output bound the close frame could not get through either: drop the socket, freeing what it held. */
  private dropForBacklog(buffered: number): void {
    if (this.closed) return;
    this.fe.logger.warn({ event: 'client-output-backlog', remote: this.remote, buffered }, 'client left too much output unread; connection dropped');
    this.close(CloseCode.outputBacklog, 'output backlog too large; read your replies');
    this.ws.terminate();
  }

  /**
   * After an auth change: a connection whose principal can no longer be authenticated is
   * closed; each watch its principal may no longer hold is dropped (on the leader, through
   * the log) and the client told which, in a notify frame, before any other event is withheld.
   */
  reviewAccess(): void {
    const est = this.established;
    if (est === null || this.closed) return;
    const guard = this.fe.guard;
    if (!guard.enabled || this.reviewCredential() || est.principal === null) return;
    const revoked = this.fe.connectionSeam.watchesOf(est.session).filter((w) => !guard.mayWatch(est.principal, w.path));
    if (revoked.length === 0) return;
    const reason = `user ${est.principal} may no longer watch these; they were dropped`;
    this.sendFrame(encodeNotify({ revoked: revoked.map((w) => ({ path: w.path, prefix: w.prefix })), reason }, est.encoding), false);
    if (!this.fe.isLeader()) return;
    for (const w of revoked) {
      this.fe.node.propose({ op: 'unwatch', session: est.session, path: w.path, prefix: w.prefix }).catch((err: unknown) =>
        this.fe.logger.warn({ event: 'revoked-unwatch-failed', session: est.session, path: w.path, err: String(err) }, 'could not drop a revoked watch; its events stay withheld'),
      );
    }
  }

  /**
   * Whether the credential the hello proved no longer holds; if so the connection is
   * closed (after this turn: the reply to the request that ended the grant may be this
   * connection's own) and sends nothing more. Its session lives on until it expires, and
   * only a hello that authenticates again as the same user, with the resume token, resumes it.
   */
  private reviewCredential(): boolean {
    if (this.revoked) return true;
    const est = this.established;
    if (est === null || this.closed) return false;
    const problem = credentialProblem(this.fe.guard.state, est.credential, Date.now());
    if (problem === null) return false;
    this.revoked = true;
    const code = est.credential === null ? CloseCode.unauthenticated : CloseCode.credentialRevoked;
    this.fe.logger.info({ event: 'credential-revoked', remote: this.remote, session: est.session, user: est.principal, reason: problem.message }, 'closing a connection whose credential no longer holds');
    setImmediate(() => this.close(code, problem.closeReason));
    return true;
  }

  /** A token's expiry changes nothing in the log: a timer closes the connection then, even if it sends nothing. */
  private reviewAtTokenExpiry(credential: Credential | null): void {
    if (credential?.expiresAt == null) return;
    // Timers hold at most 2^31-1 ms; a token lives at most seven days, well within it.
    const delayMs = Math.min(2 ** 31 - 1, Math.max(0, credential.expiresAt - Date.now()) + 1);
    this.tokenTimer = setTimeout(() => {
      this.tokenTimer = null;
      if (this.fe.guard.enabled) this.reviewCredential();
    }, delayMs);
  }

  // ---------------------------------------------------------------- frames

  private onFrame(data: Buffer, isBinary: boolean): void {
    this.fe.metrics.bytesIn.inc(data.length);
    // Any frame, even one we reject, proves the client is alive (PROTOCOL.md "Session").
    if (this.established) this.fe.expiry.touch(this.established.session);
    const decoded = decodeFrame(data, isBinary, this.fe.limits, this.fe.extensions);
    if (!decoded.ok) {
      this.fe.metrics.requests.inc({ op: 'invalid', code: decoded.error.code });
      this.sendFrame(encodeError(decoded.id, decoded.error, decoded.encoding));
      return;
    }
    const { request, encoding } = decoded;
    // Reading stops at the limit (pauseIfBusy), but frames ws had already read still arrive: they wait here, in order.
    if (this.inflight >= this.fe.limits.inflightPerConnection || this.backlog.length > 0) {
      if (this.backlogBytes + data.length > MAX_BACKLOG_BYTES + this.fe.limits.frameBytes) {
        this.reply(request, encoding, new VeraError('RATE_LIMITED', `too many requests waiting on this connection: ${this.fe.limits.inflightPerConnection} in flight and ${MAX_BACKLOG_BYTES} bytes read behind them; wait for replies before sending more`, { retryAfterMs: 50 }));
        return;
      }
      this.backlog.push({ request, encoding, bytes: data.length });
      this.backlogBytes += data.length;
      this.pauses.hold('inflight');
      return;
    }
    this.start(request, encoding, data.length);
  }

  private start(request: Request | FamilyRequest, encoding: Encoding, frameBytes: number): void {
    this.inflight++;
    void this.run(request, encoding, frameBytes).finally(() => {
      this.inflight--;
      if (!this.pauses.holds('inflight')) return;
      // The pause is the server's doing: a client waiting on it is not silent.
      if (this.established) this.fe.expiry.touch(this.established.session);
      this.startWaiting();
    });
    this.pauseIfBusy();
  }

  /** Starts the requests that waited for room, in order, and reads the socket again once they all have. */
  private startWaiting(): void {
    while (this.inflight < this.fe.limits.inflightPerConnection && this.backlog.length > 0 && !this.closed) {
      const next = this.backlog.shift()!;
      this.backlogBytes -= next.bytes;
      this.start(next.request, next.encoding, next.bytes);
    }
    if (this.backlog.length === 0 && this.inflight < this.fe.limits.inflightPerConnection) this.pauses.release('inflight');
  }

  /**
   * Backpressure instead of refusals: at its limit of requests in flight, or while the
   * member's writes waiting to commit are past their bound, the connection's socket is
   * not read, so TCP makes the client wait (docs/protocol.md, "Backpressure").
   */
  private pauseIfBusy(): void {
    if (this.closed) return;
    if (this.inflight >= this.fe.limits.inflightPerConnection) this.pauses.hold('inflight');
    const pressure = this.fe.node.pressure;
    if (pressure.over && !this.pauses.holds('writes')) {
      this.pauses.hold('writes');
      pressure.whenBelow(() => {
        if (this.established) this.fe.expiry.touch(this.established.session);
        this.pauses.release('writes');
      });
    }
  }

  private async run(request: Request | FamilyRequest, encoding: Encoding, frameBytes: number): Promise<void> {
    let result: AnyResult | FamilyResult;
    try {
      result = await this.execute(request, encoding, frameBytes);
    } catch (err) {
      this.reply(request, encoding, toVeraError(err, this.fe));
      return;
    }
    this.reply(request, encoding, result);
    if (request.op === 'hello' && this.established) this.startFeed(result as HelloResult);
    if (request.op === 'bye') this.close(1000, 'bye');
  }

  private async execute(request: Request | FamilyRequest, encoding: Encoding, frameBytes: number): Promise<AnyResult | FamilyResult> {
    const fe = this.fe;
    if (isCoreRequest(request) && request.op === 'hello') {
      if (this.established || this.pendingHello) throw new VeraError('BAD_REQUEST', 'hello was already sent on this connection');
      // Requests may be pipelined behind a hello: from here the full frame limit applies.
      this.setFrameLimit(fe.limits.frameBytes);
      const hello = this.hello(request, encoding, frameBytes);
      // Only a barrier for later requests: its outcome is handled by whoever awaits `hello`.
      this.pendingHello = hello.then(
        () => undefined,
        () => undefined,
      );
      void this.pendingHello.then(() => (this.pendingHello = null));
      return hello;
    }
    if (this.established === null && this.pendingHello) await this.pendingHello;
    if (this.established === null) {
      throw new VeraError('BAD_REQUEST', `the first frame on a connection must be a successful hello, not "${request.op}"`);
    }
    const { session, principal } = this.established;
    if (fe.guard.enabled) {
      // The credential is judged on every request: a grant ended since the hello ends the connection.
      const problem = credentialProblem(fe.guard.state, this.established.credential, Date.now());
      if (problem !== null) {
        this.reviewCredential();
        throw new VeraError('UNAUTHORIZED', problem.message);
      }
    }
    if (!fe.isLeader()) throw notLeaderError(fe);
    if (principal !== null && fe.guard.enabled) fe.guard.meter.request(principal);
    if (!isCoreRequest(request)) return this.answerAddedOp(request, session, frameBytes);
    // The one check (access.ts): what the op touches, as this connection's principal (nothing to judge while authentication is off).
    const needs = (CORE_NEEDS[request.op] as (r: Request) => readonly Need[])(request);
    if (fe.guard.enabled) {
      fe.guard.check(principal, needs, this.remote, request.op);
      if (request.op === 'watch') fe.guard.checkWatchBudget(principal);
    }
    // The paths it needs pass every family's path guard (path-guard.ts): a hibernated unit is thawed for a use.
    return guarded(fe, accessesOf(request, needs), () => {
      switch (request.op) {
        case 'ping':
          if (request.ack !== undefined) fe.notifier.acknowledge(session, request.ack);
          return Promise.resolve({ index: fe.node.appliedIndex });
        case 'get':
          return this.get(request, encoding);
        default:
          return this.answerCoreOp(request, session, frameBytes);
      }
    });
  }

  /** An op a command family added to the protocol (the decoder knew it, so a family answers it). */
  private async answerAddedOp(request: FamilyRequest, session: string, frameBytes: number): Promise<FamilyResult> {
    const op = this.fe.familyOps.get(request.op);
    if (op === undefined) throw new VeraError('BAD_REQUEST', `no command family answers "${request.op}"`);
    const result = await runFamilyOp(this.fe, op, request, { principal: this.established!.principal, remote: this.remote, session, frameBytes, what: request.op });
    if ('id' in result || 'ok' in result) throw new VeraError('INTERNAL', `the reply to ${request.op} sets id or ok, which belong to the reply frame`);
    return result;
  }

  /** A core op a command family answers (its paths have passed the path guards). */
  private async answerCoreOp(request: Exclude<Request, { op: 'hello' | 'ping' | 'get' }>, session: string, frameBytes: number): Promise<AnyResult> {
    // The handler registered under an op takes that op's request: the table is keyed so.
    const handler = this.fe.ops[request.op] as CoreOpHandler<CoreOp> | undefined;
    if (handler === undefined) throw new VeraError('BAD_REQUEST', `no command family answers "${request.op}"`);
    const principal = this.established!.principal;
    const result: AnyResult = await handler(request, { session, frameBytes });
    // ls names children: only those the principal may read something in are shown.
    if (request.op !== 'ls' || this.fe.guard.unrestricted(principal)) return result;
    const base = request.path === '/' ? '' : request.path;
    const ls = result as LsResult;
    return { ...ls, children: ls.children.filter((child) => this.fe.guard.maySeeBelow(principal, `${base}/${child}`)) };
  }

  /**
   * Reads run one at a time per connection, each once its output has room, so a
   * client that pipelines gets and reads nothing holds one reply's worth of memory.
   * A streamed get sends every page but the last here; the last is the reply.
   */
  private async get(request: GetRequest, encoding: Encoding): Promise<GetResult> {
    await ops.readBarrier(this.fe, request);
    const read = (): Promise<GetResult> =>
      this.output.exclusive(() =>
        request.stream === true
          ? ops.streamList(this.fe, request.path, async (page) => {
              this.sendFrame(encodeReply(request.id, page, encoding));
              await this.output.room();
              if (this.closed) throw new VeraError('UNAVAILABLE', 'connection closed during a streamed get');
            })
          : ops.readWholeList(this.fe, request.path),
      );
    return read();
  }

  // ---------------------------------------------------------------- sessions

  private async hello(req: HelloRequest, encoding: Encoding, frameBytes: number): Promise<HelloResult> {
    const fe = this.fe;
    // During an election, answer when it is decided (NOT_LEADER naming the winner) rather than
    // NO_LEADER at once: the client then moves in one step instead of polling.
    if (!fe.isLeader() && fe.node.status().leader === null) await fe.awaitLeader(HELLO_LEADER_WAIT_MS);
    if (!fe.isLeader()) throw notLeaderError(fe);
    const proof = { token: req.token, user: req.user, password: req.password, certUser: this.certUser };
    const basis = credentialBasis(fe.guard.state, proof);
    const principal = await fe.guard.authenticate(proof, this.remote, Date.now());
    const credential = principal === null ? null : { ...basis, user: principal };
    const release = principal === null ? null : fe.guard.meter.connect(principal);
    try {
      const result = await this.openOrResume(req, encoding, frameBytes, principal, credential);
      this.releasePrincipal = release;
      if (this.closed) release?.();
      return result;
    } catch (err) {
      release?.();
      throw err;
    }
  }

  private async openOrResume(req: HelloRequest, encoding: Encoding, frameBytes: number, principal: Principal, credential: Credential | null): Promise<HelloResult> {
    const fe = this.fe;
    const seam = fe.connectionSeam;
    let session: string;
    let timeoutMs: number;
    let resume: string | undefined;
    if (req.session !== undefined) {
      // Only a state machine that has applied every committed entry can say a session is gone.
      await fe.node.linearizableBarrier(fe.readTimeoutMs);
      const info = seam.session(req.session);
      if (!info) throw new VeraError('SESSION_EXPIRED', `session ${req.session} has expired or never existed; start a new one`);
      // A session a family holds for its own use (a lease) no connection may hold.
      const held = seam.resumeRefusal(req.session);
      if (held !== null) throw new VeraError('UNAUTHORIZED', held);
      const refused = resumeRefusal(info, req.resume) ?? principalRefusal(info, principal, fe.guard.enabled);
      if (refused !== null) throw new VeraError('UNAUTHORIZED', refused);
      // The log must name the member now holding the connection before it is established here: the
      // leader takes a session's liveness from its recorded holder only (docs/scale-out.md).
      if (seam.activeVersion() >= (seam.holdersSince ?? Number.POSITIVE_INFINITY) && info.member !== fe.node.id) {
        await seam.attach(req.session, fe.node.id);
      }
      session = req.session;
      timeoutMs = info.timeoutMs;
    } else {
      if (seam.sessionCount() >= fe.limits.sessionsMax) {
        throw new VeraError('RATE_LIMITED', `session limit reached (${fe.limits.sessionsMax})`, { retryAfterMs: 1000 });
      }
      const { min, max } = fe.sessionTimeouts;
      timeoutMs = Math.min(max, Math.max(min, req.timeoutMs ?? fe.sessionTimeouts.default));
      session = randomBytes(16).toString('base64url');
      fe.disk.admit(frameBytes);
      const quota = { sessionsPerAddress: fe.limits.sessionsPerAddress };
      // Only the hash goes into the log: the token itself is told to the creator alone. A session opened
      // without one (a cluster not yet at the version that records it) can never be resumed, so a hello
      // in the moment after a new cluster's first election waits for the version its leader is raising.
      await seam.settleVersion(seam.resumeTokensSince, HELLO_LEADER_WAIT_MS);
      resume = seam.activeVersion() >= seam.resumeTokensSince ? randomBytes(24).toString('base64url') : undefined;
      const open = {
        op: 'openSession' as const,
        session,
        timeoutMs,
        remote: this.remote,
        quota,
        ...(resume === undefined ? {} : { resumeHash: hashResume(resume) }),
        ...(principal === null ? {} : { principal, principalSessions: fe.guard.meter.limits.sessions }),
        // The member holding the connection, once every member can apply the field (docs/scale-out.md).
        ...(seam.activeVersion() >= (seam.holdersSince ?? Number.POSITIVE_INFINITY) ? { member: fe.node.id } : {}),
      };
      const r = expectOk(await fe.node.propose(open));
      if (r.op !== 'openSession') throw new VeraError('INTERNAL', `openSession applied as ${r.op}`);
    }
    if (this.closed) throw new VeraError('UNAVAILABLE', 'connection closed during hello');
    const previous = fe.connections.get(session);
    if (previous && previous !== this) previous.close(CloseCode.sessionMoved, 'session resumed on another connection');
    fe.connections.set(session, this);
    fe.expiry.track(session, timeoutMs);
    this.established = { session, principal, credential, encoding, resumed: req.session !== undefined };
    this.clearHelloTimer();
    this.reviewAtTokenExpiry(credential);
    const st = fe.node.status();
    // From the version whose sessions record their holder (V1 of docs/scale-out.md): who answered, and where sessions are served.
    const scaleOut = seam.activeVersion() >= (seam.holdersSince ?? Number.POSITIVE_INFINITY);
    const members = scaleOut ? fe.servingUrls() : [];
    return {
      session,
      timeoutMs,
      node: st.id,
      leader: st.leader,
      term: st.term,
      index: fe.node.appliedIndex,
      ...(resume === undefined ? {} : { resume }),
      ...(principal === null ? {} : { user: principal }),
      // Only the leader opens sessions until followers serve them (step 8b): its role, unless it lost it meanwhile.
      ...(scaleOut ? { role: roleOf(st) } : {}),
      // Left out when no member has an address a client could dial (docs/protocol.md).
      ...(scaleOut && members.length > 0 ? { members } : {}),
    };
  }

  /** After the hello reply: replay what the session missed since its last acknowledgement, then go live. */
  private startFeed(hello: HelloResult): void {
    const { session, resumed } = this.established!;
    // A brand-new session cannot have missed anything; a resumed one gets everything after its last acknowledgement.
    const after = resumed ? Math.max(this.fe.notifier.ackedIndex(session), this.fe.connectionSeam.ackedInLog(session)) : hello.index;
    this.fe.notifier.attach(session, this, after);
  }

  private clearHelloTimer(): void {
    if (this.helloTimer !== null) clearTimeout(this.helloTimer);
    this.helloTimer = null;
  }

  /**
   * The largest frame ws will take from this connection (bigger: close 1009). ws has
   * one maxPayload per server and no public per-connection setter; its receiver
   * reads this field for every frame header.
   */
  private setFrameLimit(bytes: number): void {
    const receiver = (this.ws as unknown as { _receiver?: { _maxPayload: number } })._receiver;
    if (receiver !== undefined) receiver._maxPayload = bytes;
  }

  private onClosed(): void {
    this.closed = true;
    // Requests never started: nobody is left to answer.
    this.backlog = [];
    this.backlogBytes = 0;
    this.clearHelloTimer();
    if (this.tokenTimer !== null) clearTimeout(this.tokenTimer);
    this.tokenTimer = null;
    this.releasePrincipal?.();
    this.releasePrincipal = null;
    const est = this.established;
    if (!est) return;
    if (this.fe.connections.get(est.session) === this) {
      this.fe.connections.delete(est.session);
      this.fe.notifier.detach(est.session);
    }
  }

  // ---------------------------------------------------------------- output

  private reply(request: Request | FamilyRequest, encoding: Encoding, result: AnyResult | FamilyResult | VeraError): void {
    if (result instanceof VeraError) {
      this.fe.metrics.requests.inc({ op: request.op, code: result.code });
      this.sendFrame(encodeError(request.id, result, encoding));
      return;
    }
    const frame = encodeReply(request.id, result, encoding);
    const bytes = typeof frame === 'string' ? Buffer.byteLength(frame) : frame.length;
    // Items are bounded by stored bytes; an encoding that still outgrows the frame limit is refused, not sent.
    if (bytes > this.fe.limits.frameBytes) {
      this.reply(request, encoding, new VeraError('TOO_LARGE', `the reply would be ${bytes} bytes, over the ${this.fe.limits.frameBytes}-byte frame limit; use a streamed get`));
      return;
    }
    this.fe.metrics.requests.inc({ op: request.op, code: 'OK' });
    this.sendFrame(frame);
  }

  private sendFrame(frame: Buffer | string, cork = true): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.fe.metrics.bytesOut.inc(typeof frame === 'string' ? Buffer.byteLength(frame) : frame.length);
    if (cork) this.corkUntilTurnEnds();
    this.ws.send(frame);
    this.output.afterSend();
  }

  /**
   * Holds this connection's socket writes until the current turn of the event loop
   * is over, so the replies of one applied batch leave in one system call instead of
   * one each (socket writes were the largest cost of a busy leader).
   */
  private corkUntilTurnEnds(): void {
    if (this.corked !== null) return;
    // ws keeps its net.Socket here; it has no public way to batch frames.
    const socket = (this.ws as unknown as { _socket?: { cork(): void; uncork(): void } })._socket;
    if (socket === undefined) return;
    this.corked = socket;
    socket.cork();
    setImmediate(() => this.uncorkNow());
  }

  private uncorkNow(): void {
    const socket = this.corked;
    if (socket === null) return;
    this.corked = null;
    socket.uncork();
  }
}

/** The output side of a ws WebSocket, through the net.Socket it keeps (ws has no public drain event). */
function wsOutput(ws: WebSocket, pauses: ReadPauses): OutputSocket {
  const socket = (ws as unknown as { _socket?: import('node:net').Socket })._socket;
  return {
    bufferedBytes: () => ws.bufferedAmount,
    pauseReading: () => pauses.hold('output'),
    resumeReading: () => pauses.release('output'),
    isOpen: () => ws.readyState === ws.OPEN,
    onceDrainedOrClosed: (listener) => {
      if (socket === undefined || socket.destroyed) {
        listener();
        return;
      }
      const once = (): void => {
        socket.off('drain', once);
        socket.off('close', once);
        listener();
      };
      socket.on('drain', once);
      socket.on('close', once);
    },
  };
}

function toBuffer(data: Buffer | ArrayBuffer | Buffer[]): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

function hashResume(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * Why a hello may not resume this session: the session id is public (items show their
 * owner), so the resume token, told only to the creator, is what proves the resumer is
 * it, in every mode (docs/protocol.md "Session"). A session opened before resume tokens
 * has none to prove: nobody can resume it, and it expires on its own.
 */
function resumeRefusal(info: LiveSession, given: string | undefined): string | null {
  if (info.resumeHash === undefined) return 'this session was opened before resume tokens (command version 6) and cannot be resumed; it expires on its own: open a new session';
  if (given === undefined) return 'a session is resumed only with the resume token its first hello answered (resume); without it, open a new session';
  const a = Buffer.from(hashResume(given), 'hex');
  const b = Buffer.from(info.resumeHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b) ? null : 'the resume token does not match this session; a session can be resumed only by the client that opened it';
}

/**
 * With authentication on, a session is resumed only by the user that opened it: a
 * leaked resume token is not enough for another user. A session opened while
 * authentication was off (no user) is resumed by nobody once it is on: it was never
 * judged, and it expires on its own.
 */
function principalRefusal(info: LiveSession, principal: Principal, enabled: boolean): string | null {
  if (!enabled || info.principal === principal) return null;
  if (info.principal === undefined) return 'this session was opened while authentication was off and cannot be resumed now that it is on; open a new session';
  return `session belongs to another user; ${principal ?? 'an unauthenticated client'} cannot resume it`;
}

/** What of a notification `principal` may see: the payload itself, a filtered copy, or null for nothing. */
function visibleTo(fe: FrontEnd, principal: Principal, payload: NotifyPayload): NotifyPayload | null {
  if ('events' in payload) {
    const events = payload.events.filter((e) => fe.guard.mayWatch(principal, e.path));
    if (events.length === 0) return null;
    return events.length === payload.events.length ? payload : { events };
  }
  if ('revoked' in payload) return payload;
  const lists = payload.resync.filter((l) => fe.guard.mayWatch(principal, l.path));
  // A resync's last frame is sent even when empty: it ends the resync the client is gathering.
  if (lists.length === payload.resync.length) return payload;
  return payload.more === true ? (lists.length === 0 ? null : { resync: lists, more: true }) : { resync: lists };
}

/** What this member is, as hello's `role` says it. */
function roleOf(st: Status): MemberRole {
  if (st.role === 'leader') return 'leader';
  return st.config.learners.includes(st.id) ? 'learner' : 'follower';
}
