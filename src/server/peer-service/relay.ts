// Relayed ops (docs/scale-out.md "Relayed ops"): an op that runs at the leader
// (routes.ts) asked of another member goes to the leader as `op {id, session,
// principal, remote, frameBytes, req}`; the leader checks the request again with the
// op's own builder, runs the same handler as the caller, and answers `opOk {result,
// index}` or `opErr`. The member answers its client once it has applied `index`
// (read-your-writes on the connection), or at its deadline, whichever comes first.
//
// Member side (RelayClient): ids, one re-relay when the leader turned out not to
// lead before running it, a deadline, cancel, and a bound on requests in flight.
// Leader side (RelayDesk): a bound per member, the route check, the builder, the run.
// Both are pure: sending, time, the applied index and the handler are injected.
//
// How a relayed request ends, member side:
// - opOk: its result, once this member applied `index` (or its deadline came first);
// - opErr: its error (after `index` applied, likewise); a NOT_LEADER / NO_LEADER
//   refusal made before the handler ran goes once more to the leader known now;
// - never handed to a socket, refused here for load or size: UNAVAILABLE not-proposed
//   (the op did not run; resending is safe);
// - nothing by the deadline, or cancelled, or this member closing: UNAVAILABLE with
//   the outcome unknown (the op may have run). Nobody resends it.
import { randomInt } from 'node:crypto';
import { NOT_PROPOSED, VeraError, type ErrorCode, type FamilyRequest, type FamilyResult, type ProtocolLimits, type RequestBuilder } from '../../protocol/index.js';
import { packFrame, unpackFrame } from '../../raft/transport/codec.js';
import { RaftError } from '../../raft/driver.js';
import type { NodeId } from '../../raft/types.js';
import { MAX_SESSION_ID_BYTES } from '../../protocol/session-id.js';
import { encodeServiceMessage, unsentIds, MAX_PRINCIPAL_BYTES, MAX_RELAYED_BYTES, MAX_REMOTE_BYTES, type RelayedErrMessage, type RelayedOkMessage, type RelayedOpMessage } from './codec.js';
import type { RoutedOp } from './routes.js';

/** Who asks for a relayed op, as the member's connection established it. */
export interface RelayedCaller {
  readonly session: string;
  /** The authenticated user; null with authentication off. */
  readonly principal: string | null;
  readonly remote: string;
  readonly frameBytes: number;
}

/** What a relayed op answered: the handler's result, and the leader's applied index when it answered. */
export interface RelayedAnswer {
  readonly result: FamilyResult;
  readonly index: number;
}

/** How long to wait before retrying a request refused for load (ms). */
const RETRY_AFTER_MS = 200;

/** An id as wide as any this member sends (MessagePack uint32): what a payload is sized with. */
const LARGEST_ID = 2 ** 32 - 1;

/**
 * A relayed op's deadline beyond the time it waits on purpose (ms): the read timeout of
 * docs/scale-out.md's failure case 2. An op that waits (a `waitMs` or `holdMs` field,
 * journal.claim's up to 60 s) gets that wait on top (relayDeadlineOf).
 */
export const DEFAULT_RELAY_DEADLINE_MS = 5_000;

/** How long a relayed `request` may take: `baseMs` plus the longest wait it asks for. */
export function relayDeadlineOf(request: FamilyRequest, baseMs: number): number {
  let waits = 0;
  for (const field of ['waitMs', 'holdMs'] as const) {
    const ms = (request as Readonly<Record<string, unknown>>)[field];
    if (typeof ms === 'number' && Number.isFinite(ms) && ms > waits) waits = ms;
  }
  return baseMs + waits;
}

export interface RelayClientOptions {
  /** The peer transport's sendService: false when the payload was not queued (it may throw, for one too large). */
  readonly send: (to: NodeId, payload: Uint8Array) => boolean;
  /** The largest service payload the transport carries (maxServicePayloadBytes of its maxFrameBytes). */
  readonly maxPayloadBytes: number;
  /** The leader this member knows now, for the one re-relay after a refusal. */
  readonly currentLeader: () => NodeId | null;
  /** Resolves once this member has applied `index` (RaftDriver.waitApplied through the node); `cancel` gives the wait up. */
  readonly waitApplied: (index: number, cancel: AbortSignal) => Promise<void>;
  /** Requests waiting for an answer, at most; past it a request is refused (not run). */
  readonly maxInFlight: number;
  /** A request's deadline beyond the wait it asks for, unless the caller gives one (ms; relayDeadlineOf). */
  readonly deadlineMs: number;
  readonly after: (ms: number, run: () => void) => () => void;
}

interface PendingRelay {
  readonly payloadOf: (id: number) => Uint8Array;
  to: NodeId;
  id: number;
  rerelayed: boolean;
  /** An answer came: the request settles when its index is applied here, or at its deadline with that answer. */
  answer: { readonly settle: () => void } | null;
  readonly resolve: (answer: RelayedAnswer) => void;
  readonly reject: (err: Error) => void;
  readonly cancelDeadline: () => void;
  readonly stopListening: () => void;
  /** Gives up the driver's wait for the answer's index, so a settled request leaves nothing waiting there. */
  readonly giveUp: AbortController;
}

/** Not run: nothing changed, and the client library may send it again. */
function notRun(message: string): VeraError {
  return new VeraError('UNAVAILABLE', message, { retryAfterMs: RETRY_AFTER_MS, reason: NOT_PROPOSED });
}

/** May have run: the outcome is unknown (docs/protocol.md, UNAVAILABLE without not-proposed). */
function unknownOutcome(message: string): VeraError {
  return new VeraError('UNAVAILABLE', message, { retryAfterMs: RETRY_AFTER_MS });
}

export class RelayClient {
  /** Random start: an answer meant for an earlier process of this member matches no request of this one. */
  private nextId = randomInt(1, 2 ** 30);
  private readonly byId = new Map<number, PendingRelay>();
  private readonly all = new Set<PendingRelay>();
  private closed = false;

  constructor(private readonly opts: RelayClientOptions) {}

  /** Requests waiting for their answer. */
  get inFlight(): number {
    return this.all.size;
  }

  /**
   * Runs `request` (a leader op, checked by its builder here) at `leader` as `caller`. Resolves with
   * its answer once this member has applied the index it came with; `signal` cancels the wait (the
   * client went away): the op may still run at the leader, and its answer is dropped.
   */
  request(leader: NodeId, request: FamilyRequest, caller: RelayedCaller, options: { readonly deadlineMs?: number; readonly signal?: AbortSignal } = {}): Promise<RelayedAnswer> {
    if (this.closed) return Promise.reject(unknownOutcome('server is shutting down'));
    if (this.all.size >= this.opts.maxInFlight) return Promise.reject(notRun(`too many requests are waiting on the leader (${this.opts.maxInFlight}); retry shortly`));
    if (options.signal?.aborted === true) return Promise.reject(notRun('the request was cancelled before it was relayed'));
    const problem = callerProblem(caller);
    if (problem !== null) return Promise.reject(new VeraError('BAD_REQUEST', `cannot relay ${request.op} to the leader: ${problem}`));
    const { id: _id, ...fields } = request;
    const req = packFrame(fields);
    const payloadOf = (id: number): Uint8Array =>
      encodeServiceMessage({ k: 'op', id, session: caller.session, ...(caller.principal === null ? {} : { principal: caller.principal }), remote: shortRemote(caller.remote), frameBytes: caller.frameBytes, req });
    // Sized with the widest id (ids stay below 2^32): a request that fits here fits with any id. Refused before it is registered.
    const size = req.byteLength > MAX_RELAYED_BYTES ? req.byteLength : payloadOf(LARGEST_ID).byteLength;
    if (size > Math.min(MAX_RELAYED_BYTES, this.opts.maxPayloadBytes)) {
      return Promise.reject(new VeraError('TOO_LARGE', `the request would be a ${size}-byte peer message, more than the ${this.opts.maxPayloadBytes} a member relays to the leader`));
    }
    const deadlineMs = options.deadlineMs ?? relayDeadlineOf(request, this.opts.deadlineMs);
    return new Promise<RelayedAnswer>((resolve, reject) => {
      const onAbort = (): void => {
        if (this.settle(p)) reject(unknownOutcome('the relayed request was cancelled; the leader may still run it'));
      };
      const cancelDeadline = this.opts.after(deadlineMs, () => {
        if (p.answer !== null) return p.answer.settle();
        if (this.settle(p)) reject(unknownOutcome(`the leader did not answer a relayed ${request.op} within ${deadlineMs} ms; the outcome is unknown`));
      });
      options.signal?.addEventListener('abort', onAbort, { once: true });
      const p: PendingRelay = {
        payloadOf,
        to: leader,
        id: 0,
        rerelayed: false,
        answer: null,
        resolve,
        reject,
        cancelDeadline,
        stopListening: () => options.signal?.removeEventListener('abort', onAbort),
        giveUp: new AbortController(),
      };
      this.all.add(p);
      if (!this.send(p, leader)) {
        this.settle(p);
        reject(notRun(`cannot reach the leader ${leader} to relay ${request.op} now`));
      }
    });
  }

  /** An opOk or opErr from `from` (decoded by the service). */
  onAnswer(from: NodeId, m: RelayedOkMessage | RelayedErrMessage): void {
    const p = this.byId.get(m.id);
    if (p === undefined || p.to !== from || p.answer !== null) return; // settled already, or an answer for another link
    this.byId.delete(m.id);
    if (m.k === 'opErr' && m.notRun && (m.code === 'NOT_LEADER' || m.code === 'NO_LEADER') && !p.rerelayed) {
      const leader = nextLeader(this.opts.currentLeader(), from, m.leader);
      if (leader !== null) {
        p.rerelayed = true;
        if (this.send(p, leader)) return;
      }
    }
    let outcome: { ok: true; value: RelayedAnswer } | { ok: false; err: Error };
    if (m.k === 'opOk') {
      try {
        outcome = { ok: true, value: { result: resultOf(m.result), index: m.index } };
      } catch (err) {
        outcome = { ok: false, err: err instanceof Error ? err : new Error(String(err)) };
      }
    } else {
      outcome = { ok: false, err: errorOf(m) };
    }
    const settle = (): void => {
      if (!this.settle(p)) return;
      if (outcome.ok) p.resolve(outcome.value);
      else p.reject(outcome.err);
    };
    p.answer = { settle };
    // Read-your-writes: what the op wrote at the leader is applied here before the client hears of it.
    this.opts.waitApplied(m.index, p.giveUp.signal).then(settle, settle);
  }

  /** Payloads the transport accepted for `to` but never handed to a socket: those requests never reached the leader. */
  onUnsent(to: NodeId, payloads: readonly Uint8Array[]): void {
    for (const id of unsentIds(payloads, 'op')) {
      const p = this.byId.get(id);
      if (p !== undefined && p.to === to && this.settle(p)) p.reject(notRun(`the link to the leader ${to} dropped before the request was sent`));
    }
  }

  /** Stops: every request still waiting is answered UNAVAILABLE (its outcome unknown). */
  close(): void {
    this.closed = true;
    for (const p of [...this.all]) if (this.settle(p)) p.reject(unknownOutcome('server is shutting down; the outcome of a relayed request is unknown'));
  }

  private send(p: PendingRelay, to: NodeId): boolean {
    const id = this.nextId++;
    p.to = to;
    p.id = id;
    this.byId.set(id, p);
    let sent: boolean;
    try {
      sent = this.opts.send(to, p.payloadOf(id));
    } catch {
      sent = false; // the transport refused it outright (too large for a frame): it was not sent
    }
    if (!sent) this.byId.delete(id);
    return sent;
  }

  /** Forgets `p`; true the first time (only its first settlement answers). */
  private settle(p: PendingRelay): boolean {
    if (!this.all.delete(p)) return false;
    if (this.byId.get(p.id) === p) this.byId.delete(p.id);
    p.cancelDeadline();
    p.stopListening();
    p.giveUp.abort();
    return true;
  }
}

/**
 * Where a request refused by `from` (not leading) goes once more: the leader known here,
 * unless that is `from` itself or unknown, in which case the one `from` named; null when neither.
 */
export function nextLeader(known: NodeId | null, from: NodeId, hint: NodeId | undefined): NodeId | null {
  if (known !== null && known !== from) return known;
  return hint !== undefined && hint !== from ? hint : null;
}

/** Why the leader's decoder would refuse this caller (the bounds of codec.ts), or null: refused here instead of dropping the link. */
function callerProblem(caller: RelayedCaller): string | null {
  if (Buffer.byteLength(caller.session, 'utf8') > MAX_SESSION_ID_BYTES) return `a session id is at most ${MAX_SESSION_ID_BYTES} bytes`;
  if (caller.principal !== null && (caller.principal.length === 0 || Buffer.byteLength(caller.principal, 'utf8') > MAX_PRINCIPAL_BYTES)) {
    return `a principal is 1 to ${MAX_PRINCIPAL_BYTES} bytes`;
  }
  if (!Number.isSafeInteger(caller.frameBytes) || caller.frameBytes < 0) return 'the frame size is not a whole number of bytes';
  return null;
}

/** The client's address only names it in logs and limits: one past the bound is cut (by characters, 4 bytes each at most). */
function shortRemote(remote: string): string {
  return Buffer.byteLength(remote, 'utf8') <= MAX_REMOTE_BYTES ? remote : remote.slice(0, MAX_REMOTE_BYTES / 4);
}

function resultOf(bytes: Uint8Array): FamilyResult {
  const value = unpackFrame(bytes);
  if (typeof value !== 'object' || value === null || Array.isArray(value) || 'id' in value || 'ok' in value) {
    throw new VeraError('INTERNAL', 'the leader answered a relayed op with a result that is not a map of reply fields');
  }
  return value as FamilyResult;
}

/** The error a relayed op's failure becomes here: what the leader's own client would have got. */
function errorOf(m: RelayedErrMessage): VeraError {
  // No leader ran it, even after one re-relay: to this member's client, there is no leader now.
  if (m.code === 'NOT_LEADER' || m.code === 'NO_LEADER') return new VeraError('NO_LEADER', m.message, { retryAfterMs: RETRY_AFTER_MS });
  const hints = { ...(m.retryAfterMs === undefined ? {} : { retryAfterMs: m.retryAfterMs }), ...(m.reason === undefined ? {} : { reason: m.reason }) };
  return new VeraError(m.code, m.message, hints);
}

/** A family op as the leader's desk runs it: its route, and its builder (plugin-part.ts FamilyOp). */
export interface RelayableOp extends RoutedOp {
  readonly build: RequestBuilder;
}

export interface RelayDeskOptions {
  /** The peer transport's sendService (it may throw, for a payload too large). */
  readonly send: (to: NodeId, payload: Uint8Array) => boolean;
  /** The largest service payload the transport carries: a larger answer is sent as TOO_LARGE instead. */
  readonly maxPayloadBytes: number;
  /** Whether this member leads now, and whom it takes for leader when it does not. */
  readonly leading: () => boolean;
  readonly leaderHint: () => NodeId | null;
  readonly appliedIndex: () => number;
  /** The family ops of this member (loadPlugins' familyOps). */
  readonly ops: ReadonlyMap<string, RelayableOp>;
  readonly limits: ProtocolLimits;
  /** Whether `session` is live (the replicated sessions): an op of an ended session is not run. */
  readonly sessionLive: (session: string) => boolean;
  /**
   * The member the replicated sessions record as holding `session` (undefined: none recorded).
   * A relay from another member is refused, not run (retryable: the session may be moving to it).
   */
  readonly sessionMember?: (session: string) => NodeId | undefined;
  /**
   * Runs the op's handler as `caller`, judging its permissions and path guards as for a
   * connection of this member's own (runFamilyOp, wired in step 8 of docs/scale-out.md).
   */
  readonly run: (op: string, request: FamilyRequest, caller: RelayedCaller) => Promise<FamilyResult>;
  /** Relayed ops one member may have running here at once; past it the next is refused (not run). */
  readonly maxPerMember: number;
  /** An answer that could not be sent (`err`: the send threw). */
  readonly onUnanswerable?: (to: NodeId, kind: string, err?: unknown) => void;
}

export class RelayDesk {
  private readonly running = new Map<NodeId, number>();

  constructor(private readonly opts: RelayDeskOptions) {}

  /** Relayed ops running here for `member`. */
  runningFor(member: NodeId): number {
    return this.running.get(member) ?? 0;
  }

  onOp(from: NodeId, m: RelayedOpMessage): void {
    const refuse = (code: ErrorCode, message: string, extra: Partial<RelayedErrMessage> = {}): void =>
      this.reply(from, { k: 'opErr', id: m.id, code, message, notRun: true, index: this.opts.appliedIndex(), ...extra });
    if (!this.opts.leading()) {
      const leader = this.opts.leaderHint();
      return refuse(leader === null ? 'NO_LEADER' : 'NOT_LEADER', 'this member does not lead; the relayed op was not run', leader === null ? {} : { leader });
    }
    if (this.runningFor(from) >= this.opts.maxPerMember) {
      return refuse('UNAVAILABLE', `${from} has ${this.opts.maxPerMember} relayed ops running at the leader already; retry shortly`, { retryAfterMs: RETRY_AFTER_MS, reason: NOT_PROPOSED });
    }
    let request: FamilyRequest;
    try {
      request = this.requestOf(m);
    } catch (err) {
      const e = err instanceof VeraError ? err : new VeraError('BAD_REQUEST', String(err));
      return refuse(e.code, e.message);
    }
    // An HTTP caller has no session (''): the handler judges it as it judges an HTTP call made at the leader.
    if (m.session !== '' && !this.opts.sessionLive(m.session)) return refuse('SESSION_EXPIRED', `session ${m.session} is unknown or has expired`);
    const holder = m.session === '' ? undefined : this.opts.sessionMember?.(m.session);
    if (holder !== undefined && holder !== from) {
      return refuse('UNAVAILABLE', `session ${m.session} is held by ${holder}, not ${from}; retry shortly`, { retryAfterMs: RETRY_AFTER_MS, reason: NOT_PROPOSED });
    }
    const caller: RelayedCaller = { session: m.session, principal: m.principal ?? null, remote: m.remote, frameBytes: m.frameBytes };
    // Its own method: the callbacks that wait for the handler keep the id, not the message (whose bytes may be a frame's worth).
    this.start(from, m.id, request, caller);
  }

  private start(from: NodeId, id: number, request: FamilyRequest, caller: RelayedCaller): void {
    this.running.set(from, this.runningFor(from) + 1);
    const done = (): void => {
      const left = this.runningFor(from) - 1;
      if (left > 0) this.running.set(from, left);
      else this.running.delete(from);
    };
    let running: Promise<FamilyResult>;
    try {
      running = this.opts.run(request.op, request, caller);
    } catch (err) {
      running = Promise.reject(err); // a runner that throws instead of rejecting still gives its slot back
    }
    running
      .then(
        (result) => {
          done();
          if ('id' in result || 'ok' in result) return this.failed(from, id, new VeraError('INTERNAL', `the reply to ${request.op} sets id or ok, which belong to the reply frame`));
          const bytes = packFrame(result);
          const payload = bytes.byteLength > MAX_RELAYED_BYTES ? null : encodeServiceMessage({ k: 'opOk', id, result: bytes, index: this.opts.appliedIndex() });
          if (payload === null || payload.byteLength > this.opts.maxPayloadBytes) {
            // It ran (and may have changed state): the member learns that, not the reply.
            return this.failed(from, id, new VeraError('TOO_LARGE', `the reply to ${request.op} would be ${bytes.byteLength} bytes, more than the ${this.opts.maxPayloadBytes} a peer message carries; ask for less`));
          }
          this.send(from, payload, 'opOk');
        },
        (err: unknown) => {
          done();
          this.failed(from, id, err);
        },
      )
      // Nothing above should throw; if it does, it must not become an unhandled rejection.
      .catch((err: unknown) => this.opts.onUnanswerable?.(from, 'opOk', err));
  }

  /** The request the member relayed, checked as this member's own decoder checks a client's frame. */
  private requestOf(m: RelayedOpMessage): FamilyRequest {
    let fields: unknown;
    try {
      fields = unpackFrame(m.req);
    } catch {
      throw new VeraError('BAD_REQUEST', 'a relayed request is not valid MessagePack');
    }
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields) || 'id' in fields) throw new VeraError('BAD_REQUEST', 'a relayed request is a map of its fields, without id');
    const op = (fields as { op?: unknown }).op;
    if (typeof op !== 'string') throw new VeraError('BAD_REQUEST', 'a relayed request names its op');
    const spec = this.opts.ops.get(op);
    // Core ops are served where the client is, never relayed. A family op routed `anywhere`
    // here still runs (it may run on any member, this one included): a member of another
    // build, mid rolling upgrade, may route it to the leader.
    if (spec === undefined) throw new VeraError('BAD_REQUEST', `${op} is not an op the leader runs for another member`);
    return spec.build(fields as Readonly<Record<string, unknown>>, m.id, this.opts.limits);
  }

  private failed(to: NodeId, id: number, err: unknown): void {
    const index = this.opts.appliedIndex();
    if (err instanceof VeraError) {
      const { retryAfterMs, reason } = err.hints;
      return this.reply(to, { k: 'opErr', id, code: err.code, message: err.message, notRun: false, index, ...(retryAfterMs === undefined ? {} : { retryAfterMs }), ...(reason === undefined ? {} : { reason }) });
    }
    if (err instanceof RaftError) {
      // Leadership moved while the handler ran: it ran, so it is not re-relayed, and the member answers NO_LEADER.
      const reason = err.code === 'UNAVAILABLE' && err.notProposed ? { reason: NOT_PROPOSED } : {};
      return this.reply(to, { k: 'opErr', id, code: err.code, message: err.message, notRun: false, index, retryAfterMs: RETRY_AFTER_MS, ...reason });
    }
    this.reply(to, { k: 'opErr', id, code: 'INTERNAL', message: `the leader failed to run a relayed op: ${err instanceof Error ? err.message : String(err)}`, notRun: false, index });
  }

  private reply(to: NodeId, m: RelayedOkMessage | RelayedErrMessage): void {
    this.send(to, encodeServiceMessage(m), m.k);
  }

  /** Never throws: a lost answer is the member's deadline's to settle (outcome unknown). */
  private send(to: NodeId, payload: Uint8Array, kind: string): void {
    try {
      if (!this.opts.send(to, payload)) this.opts.onUnanswerable?.(to, kind);
    } catch (err) {
      this.opts.onUnanswerable?.(to, kind, err);
    }
  }
}
