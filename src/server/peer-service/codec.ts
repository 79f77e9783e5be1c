// The peer service's messages (docs/scale-out.md "Peer messages"), each one opaque
// service payload of the peer transport: a MessagePack map with a kind `k` and
// exactly the fields of that kind. Decoded strictly, and nothing half-checked is
// returned: a payload that is not a map or names an unknown kind is a
// PeerProtocolError (the transport drops the link); a known kind with a missing,
// unknown or mistyped field is a BadServiceFields (answered or ignored, the link
// stays). The encoder brings every field within the decoder's bounds, so what one
// member encodes the other decodes. A field, kind or error code added later must be
// gated by command version, or an older member refuses it.
import { ERROR_CODES, type ErrorCode } from '../../protocol/errors.js';
import { MAX_SESSION_ID_BYTES } from '../../protocol/session-id.js';
import { bool, bytes, describe, nodeId, packFrame, PeerProtocolError, uint, unpackFrame } from '../../raft/transport/codec.js';
import type { NodeId } from '../../raft/types.js';

/** Propose this command (a body made by encodeForwardBody) with request id `rid`. */
export interface ForwardMessage {
  readonly k: 'fwd';
  /** The forwarding member's id for this request; the answer names it. */
  readonly id: number;
  readonly rid: string;
  readonly body: Uint8Array;
}

/** Proposed at (index, term): the answer comes from the member's own apply. */
export interface ForwardedMessage {
  readonly k: 'fwdOk';
  readonly id: number;
  readonly index: number;
  readonly term: number;
}

/** Refused before proposing: never in the log. */
export interface ForwardRefusedMessage {
  readonly k: 'fwdErr';
  readonly id: number;
  readonly code: ErrorCode;
  readonly message: string;
  readonly notProposed: boolean;
  readonly retryAfterMs?: number;
  /** The member the refusing one takes for leader, when it knows one. */
  readonly leader?: NodeId;
}

/** Run this leader-only op here, as this session (relay.ts): a relayed request. */
export interface RelayedOpMessage {
  readonly k: 'op';
  /** The relaying member's id for this request; the answer names it. */
  readonly id: number;
  readonly session: string;
  /** The user the member's connection authenticated; absent with authentication off. */
  readonly principal?: string;
  /** The client's address as the member saw it (the audit log and per-address limits name it). */
  readonly remote: string;
  /** The client frame's size: what a write is charged against the leader's disk reserve. */
  readonly frameBytes: number;
  /** The request's fields (op included, id not) as MessagePack: the leader checks them again with the op's own builder. */
  readonly req: Uint8Array;
}

/** The op's answer: its result (MessagePack) and the leader's applied index when it answered. */
export interface RelayedOkMessage {
  readonly k: 'opOk';
  readonly id: number;
  readonly result: Uint8Array;
  readonly index: number;
}

/** The op failed (`notRun`: refused before its handler ran, so nothing changed), with the leader's applied index then. */
export interface RelayedErrMessage {
  readonly k: 'opErr';
  readonly id: number;
  readonly code: ErrorCode;
  readonly message: string;
  readonly notRun: boolean;
  readonly index: number;
  readonly retryAfterMs?: number;
  /** The error's machine-readable reason (not-proposed, a family's own). */
  readonly reason?: string;
  /** The member the refusing one takes for leader, when it knows one. */
  readonly leader?: NodeId;
}

/** A payload of a known kind whose fields do not check: answered (a request) or ignored (an answer); the link stays. */
export class BadServiceFields extends Error {
  override readonly name = 'BadServiceFields';
  constructor(
    readonly kind: ServiceMessage['k'],
    /** The message's id, when that much was readable: a request is answered under it. */
    readonly id: number | null,
    message: string,
  ) {
    super(message);
  }
}

export type ServiceMessage = ForwardMessage | ForwardedMessage | ForwardRefusedMessage | RelayedOpMessage | RelayedOkMessage | RelayedErrMessage;

/**
 * A relayed request's fields, and an answer's result, at most: a client frame's limit
 * (16 MiB by default, docs/protocol.md) and room for the rest of the message.
 */
export const MAX_RELAYED_BYTES = 16 * 1024 * 1024 + 64 * 1024;
export const MAX_PRINCIPAL_BYTES = 256;
export const MAX_REMOTE_BYTES = 256;
const MAX_REASON_BYTES = 64;

/** A request id: the forwarding member's id, its process tag and a counter (commands.ts MAX_REQUEST_ID_BYTES). */
const MAX_RID_BYTES = 320;
const MAX_MESSAGE_BYTES = 1024;
const CODES: ReadonlySet<string> = new Set(ERROR_CODES);

export function encodeServiceMessage(m: ServiceMessage): Buffer {
  switch (m.k) {
    case 'fwd':
      return packFrame({ k: m.k, id: m.id, rid: m.rid, body: m.body });
    case 'fwdOk':
      return packFrame({ k: m.k, id: m.id, index: m.index, term: m.term });
    case 'fwdErr':
      return packFrame({
        k: m.k,
        id: m.id,
        code: m.code,
        message: shortMessage(m.message),
        notProposed: m.notProposed,
        ...retryAfterField(m.retryAfterMs),
        ...(m.leader === undefined ? {} : { leader: m.leader }),
      });
    case 'op':
      return packFrame({
        k: m.k,
        id: m.id,
        session: m.session,
        ...(m.principal === undefined ? {} : { principal: m.principal }),
        remote: m.remote,
        frameBytes: m.frameBytes,
        req: m.req,
      });
    case 'opOk':
      return packFrame({ k: m.k, id: m.id, result: m.result, index: m.index });
    case 'opErr':
      return packFrame({
        k: m.k,
        id: m.id,
        code: m.code,
        message: shortMessage(m.message),
        notRun: m.notRun,
        index: m.index,
        ...retryAfterField(m.retryAfterMs),
        ...reasonField(m.reason),
        ...(m.leader === undefined ? {} : { leader: m.leader }),
      });
  }
}

/** A handler's message, cut to what the decoder takes (256 UTF-16 units are at most 1,024 UTF-8 bytes). */
function shortMessage(message: string): string {
  return message.length > MAX_MESSAGE_BYTES / 4 ? `${message.slice(0, MAX_MESSAGE_BYTES / 4 - 3)}...` : message;
}

/** A retry hint as a whole, non-negative number of ms (a plugin's may be computed); dropped when not a finite number. */
function retryAfterField(ms: number | undefined): { retryAfterMs?: number } {
  if (ms === undefined || !Number.isFinite(ms)) return {};
  return { retryAfterMs: Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.ceil(ms))) };
}

/** A reason is a short machine-readable token: an empty one, or one past the bound (no token then), is left out. */
function reasonField(reason: string | undefined): { reason?: string } {
  if (reason === undefined || reason.length === 0 || Buffer.byteLength(reason, 'utf8') > MAX_REASON_BYTES) return {};
  return { reason };
}

const KINDS: ReadonlySet<string> = new Set<ServiceMessage['k']>(['fwd', 'fwdOk', 'fwdErr', 'op', 'opOk', 'opErr']);

/**
 * The ids of the requests of kind `k` among payloads the transport never sent (onServiceUnsent):
 * the forwarder's and the relay's own payloads, so one that does not decode is skipped.
 */
export function unsentIds(payloads: readonly Uint8Array[], k: 'fwd' | 'op'): number[] {
  const ids: number[] = [];
  for (const payload of payloads) {
    try {
      const m = decodeServiceMessage(payload);
      if (m.k === k) ids.push(m.id);
    } catch {
      // not one of ours to settle
    }
  }
  return ids;
}

/**
 * Decodes and validates one payload. Throws PeerProtocolError for one that is not a map
 * of a known kind, BadServiceFields for a known kind whose fields do not check.
 */
export function decodeServiceMessage(payload: Uint8Array): ServiceMessage {
  const value = unpackFrame(payload);
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.getPrototypeOf(value) !== Object.prototype) {
    throw new PeerProtocolError(`a service message must be a map, got ${describe(value)}`);
  }
  const v = value as Record<string, unknown>;
  if (typeof v.k !== 'string' || !KINDS.has(v.k)) throw new PeerProtocolError(`unknown service message kind ${describe(v.k)}`);
  try {
    return decodeFields(v);
  } catch (err) {
    if (!(err instanceof PeerProtocolError)) throw err;
    const id = typeof v.id === 'number' && Number.isSafeInteger(v.id) && v.id >= 0 ? v.id : null;
    throw new BadServiceFields(v.k as ServiceMessage['k'], id, err.message);
  }
}

function decodeFields(v: Record<string, unknown>): ServiceMessage {
  switch (v.k) {
    case 'fwd': {
      fields(v, 'fwd', ['k', 'id', 'rid', 'body'], []);
      return { k: 'fwd', id: uint(v.id, 'fwd.id'), rid: text(v.rid, 'fwd.rid', MAX_RID_BYTES), body: bytes(v.body, 'fwd.body') };
    }
    case 'fwdOk': {
      fields(v, 'fwdOk', ['k', 'id', 'index', 'term'], []);
      const index = uint(v.index, 'fwdOk.index');
      if (index === 0) throw new PeerProtocolError('fwdOk.index must be at least 1');
      return { k: 'fwdOk', id: uint(v.id, 'fwdOk.id'), index, term: uint(v.term, 'fwdOk.term') };
    }
    case 'fwdErr': {
      fields(v, 'fwdErr', ['k', 'id', 'code', 'message', 'notProposed'], ['retryAfterMs', 'leader']);
      if (typeof v.code !== 'string' || !CODES.has(v.code)) throw new PeerProtocolError(`fwdErr.code is not an error code: ${describe(v.code)}`);
      return {
        k: 'fwdErr',
        id: uint(v.id, 'fwdErr.id'),
        code: v.code as ErrorCode,
        message: text(v.message, 'fwdErr.message', MAX_MESSAGE_BYTES, true),
        notProposed: bool(v.notProposed, 'fwdErr.notProposed'),
        ...(v.retryAfterMs === undefined ? {} : { retryAfterMs: uint(v.retryAfterMs, 'fwdErr.retryAfterMs') }),
        ...(v.leader === undefined ? {} : { leader: nodeId(v.leader, 'fwdErr.leader') }),
      };
    }
    case 'op': {
      fields(v, 'op', ['k', 'id', 'session', 'remote', 'frameBytes', 'req'], ['principal']);
      return {
        k: 'op',
        id: uint(v.id, 'op.id'),
        // Empty for an HTTP caller, which has no session (docs/scale-out.md "Relayed ops").
        session: text(v.session, 'op.session', MAX_SESSION_ID_BYTES, true),
        ...(v.principal === undefined ? {} : { principal: text(v.principal, 'op.principal', MAX_PRINCIPAL_BYTES) }),
        remote: text(v.remote, 'op.remote', MAX_REMOTE_BYTES, true),
        frameBytes: uint(v.frameBytes, 'op.frameBytes'),
        req: sized(v.req, 'op.req'),
      };
    }
    case 'opOk': {
      fields(v, 'opOk', ['k', 'id', 'result', 'index'], []);
      return { k: 'opOk', id: uint(v.id, 'opOk.id'), result: sized(v.result, 'opOk.result'), index: uint(v.index, 'opOk.index') };
    }
    case 'opErr': {
      fields(v, 'opErr', ['k', 'id', 'code', 'message', 'notRun', 'index'], ['retryAfterMs', 'reason', 'leader']);
      if (typeof v.code !== 'string' || !CODES.has(v.code)) throw new PeerProtocolError(`opErr.code is not an error code: ${describe(v.code)}`);
      return {
        k: 'opErr',
        id: uint(v.id, 'opErr.id'),
        code: v.code as ErrorCode,
        message: text(v.message, 'opErr.message', MAX_MESSAGE_BYTES, true),
        notRun: bool(v.notRun, 'opErr.notRun'),
        index: uint(v.index, 'opErr.index'),
        ...(v.retryAfterMs === undefined ? {} : { retryAfterMs: uint(v.retryAfterMs, 'opErr.retryAfterMs') }),
        ...(v.reason === undefined ? {} : { reason: text(v.reason, 'opErr.reason', MAX_REASON_BYTES) }),
        ...(v.leader === undefined ? {} : { leader: nodeId(v.leader, 'opErr.leader') }),
      };
    }
    default:
      throw new PeerProtocolError(`unknown service message kind ${describe(v.k)}`);
  }
}

/** Exactly the `required` keys, and any of the `optional` ones. */
function fields(v: Record<string, unknown>, where: string, required: readonly string[], optional: readonly string[]): void {
  for (const key of Object.keys(v)) {
    if (!required.includes(key) && !optional.includes(key)) throw new PeerProtocolError(`${where} has an unexpected field ${JSON.stringify(key)}`);
  }
  for (const key of required) if (!Object.hasOwn(v, key)) throw new PeerProtocolError(`${where}.${key} is missing`);
  for (const key of optional) if (Object.hasOwn(v, key) && v[key] === undefined) throw new PeerProtocolError(`${where}.${key} is undefined`);
}

function text(value: unknown, where: string, maxBytes: number, mayBeEmpty = false): string {
  if (typeof value !== 'string' || (!mayBeEmpty && value.length === 0)) throw new PeerProtocolError(`${where} must be a ${mayBeEmpty ? '' : 'non-empty '}string, got ${describe(value)}`);
  if (Buffer.byteLength(value, 'utf8') > maxBytes) throw new PeerProtocolError(`${where} is longer than ${maxBytes} bytes`);
  return value;
}

/** Binary data of at most MAX_RELAYED_BYTES. */
function sized(value: unknown, where: string): Uint8Array {
  const b = bytes(value, where);
  if (b.byteLength > MAX_RELAYED_BYTES) throw new PeerProtocolError(`${where} is ${b.byteLength} bytes, more than ${MAX_RELAYED_BYTES}`);
  return b;
}
