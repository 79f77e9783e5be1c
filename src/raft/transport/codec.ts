// The wire format of Raft messages between peers: one MessagePack frame carries
// a batch of messages, `{ t: 'msgs', m: [message, ...] }`, each message a map
// with exactly the fields of its type in src/raft/types.ts. A second frame kind,
// `{ t: 'svc', m: [bytes, ...] }`, carries opaque service payloads for the server
// (docs/scale-out.md "Peer messages"); the transport never looks inside them.
//
// Decoding trusts nothing: a frame comes from another process, which may be a
// different version, buggy or hostile. Every field is type-checked, unknown
// fields are refused, and the Raft-level shape of an append (contiguous entries,
// non-decreasing terms) is checked too, because the core assumes it and a bad
// append could corrupt the log. Anything wrong is a PeerProtocolError; nothing
// half-checked is ever returned.

import { Packr } from 'msgpackr';
import type {
  AppendRequest,
  ClusterConfig,
  Entry,
  EntryKind,
  Message,
  MessageType,
  NodeId,
  SnapshotMeta,
} from '../types.js';

/** A peer sent something that is not a valid frame or message. The connection it came on must be dropped. */
export class PeerProtocolError extends Error {
  override readonly name = 'PeerProtocolError';
}

export const MAX_NODE_ID_BYTES = 255;
/** ReadIndex contexts are short tokens made by the driver; a long one is a misbehaving peer. */
export const MAX_CONTEXT_BYTES = 1024;

// Records are off so every frame decodes on its own (no structure state shared between
// frames or connections). 64-bit ints decode as numbers (an unsafe one then fails the
// safe-integer check below rather than arriving as a bigint); bin fields are copied out below, so no decoded entry pins a frame.
const packr = new Packr({ useRecords: false, variableMapSize: true, int64AsType: 'number' });

/** MessagePack-encodes any frame value (handshake frames use this too). */
export function packFrame(value: unknown): Buffer {
  return packr.pack(value);
}

/** Decodes one MessagePack value; undecodable or trailing bytes are a PeerProtocolError. */
export function unpackFrame(bytes: Uint8Array): unknown {
  try {
    return packr.unpack(bytes);
  } catch (err) {
    throw new PeerProtocolError(`frame is not valid MessagePack: ${err instanceof Error ? err.message : String(err)}`);
  }
}

// ------------------------------------------------------------------ encoding

function entryToWire(e: Entry): Record<string, unknown> {
  return { index: e.index, term: e.term, kind: e.kind, data: e.data };
}

function configToWire(c: ClusterConfig): Record<string, unknown> {
  return { voters: [...c.voters], learners: [...c.learners] };
}

/**
 * Copies exactly the fields of the message's type, so stray properties never leave the node.
 * Written out field by field rather than spread: this runs for every message a leader sends.
 */
function messageToWire(m: Message): Record<string, unknown> {
  switch (m.type) {
    case 'vote':
    case 'preVote':
      return { type: m.type, from: m.from, to: m.to, term: m.term, lastLogIndex: m.lastLogIndex, lastLogTerm: m.lastLogTerm, transfer: m.transfer };
    case 'voteResp':
    case 'preVoteResp':
      return { type: m.type, from: m.from, to: m.to, term: m.term, reject: m.reject };
    case 'app': {
      const entries = new Array<Record<string, unknown>>(m.entries.length);
      for (let i = 0; i < entries.length; i++) entries[i] = entryToWire(m.entries[i]!);
      return { type: m.type, from: m.from, to: m.to, term: m.term, prevIndex: m.prevIndex, prevTerm: m.prevTerm, entries, commit: m.commit };
    }
    case 'appResp':
      return { type: m.type, from: m.from, to: m.to, term: m.term, index: m.index, reject: m.reject, hintIndex: m.hintIndex, hintTerm: m.hintTerm };
    case 'heartbeat':
      return { type: m.type, from: m.from, to: m.to, term: m.term, commit: m.commit, context: m.context };
    case 'heartbeatResp':
      return { type: m.type, from: m.from, to: m.to, term: m.term, context: m.context };
    case 'snapshot':
      return {
        type: m.type,
        from: m.from,
        to: m.to,
        term: m.term,
        meta: { index: m.meta.index, term: m.meta.term, config: configToWire(m.meta.config) },
        offset: m.offset,
        chunk: m.chunk,
        done: m.done,
        checksum: m.checksum,
      };
    case 'timeoutNow':
      return { type: m.type, from: m.from, to: m.to, term: m.term };
    case 'readIndex':
      return { type: m.type, from: m.from, to: m.to, term: m.term, context: m.context };
    case 'readIndexResp':
      return { type: m.type, from: m.from, to: m.to, term: m.term, context: m.context, index: m.index };
  }
}

/** One frame carrying `messages` in order. */
export function encodeMessages(messages: readonly Message[]): Buffer {
  return packFrame({ t: 'msgs', m: messages.map(messageToWire) });
}

/**
 * The most service payloads one frame may carry: decoding a frame is one synchronous step,
 * and a frame of millions of tiny payloads would hold the event loop (and heartbeats) for it.
 */
export const MAX_SERVICE_PAYLOADS_PER_FRAME = 16_384;

/** One frame carrying service `payloads` in order. */
export function encodeServicePayloads(payloads: readonly Uint8Array[]): Buffer {
  return packFrame({ t: 'svc', m: payloads });
}

/** A decoded frame: Raft messages, or service payloads. */
export type DecodedFrame = { readonly kind: 'msgs'; readonly messages: Message[] } | { readonly kind: 'svc'; readonly payloads: Uint8Array[] };

/**
 * Decodes and validates a frame of either kind (see decodeMessages for `currentTerm`).
 * A service frame is `{t: 'svc', m}` with `m` a non-empty array of binary payloads,
 * nothing else; anything else is a PeerProtocolError.
 */
export function decodeFrame(frame: Uint8Array, currentTerm?: number): DecodedFrame {
  const value = unpackFrame(frame);
  if (isPlainObject(value) && value.t === 'svc') {
    const f = record(value, 'frame', ['t', 'm']);
    if (!Array.isArray(f.m)) throw new PeerProtocolError(`frame.m must be an array, got ${describe(f.m)}`);
    if (f.m.length === 0) throw new PeerProtocolError('frame.m must not be empty');
    if (f.m.length > MAX_SERVICE_PAYLOADS_PER_FRAME) throw new PeerProtocolError(`frame.m holds ${f.m.length} service payloads, more than ${MAX_SERVICE_PAYLOADS_PER_FRAME}`);
    return {
      kind: 'svc',
      payloads: f.m.map((p: unknown, i: number) => {
        const payload = bytes(p, `frame.m[${i}]`);
        if (payload.byteLength === 0) throw new PeerProtocolError(`frame.m[${i}] is an empty service payload`);
        return payload;
      }),
    };
  }
  return { kind: 'msgs', messages: messagesOf(value, currentTerm) };
}

/**
 * How far above the receiver's own term a message's term may be. Terms grow by one
 * per election that got past pre-vote, so a real cluster does not get this far
 * ahead of one of its members (16.7 million elections: half a year of one a second).
 * Without a bound, one message from a member that knows the secret could set the
 * term to 2^53-1, after which term + 1 is no longer a safe integer and no election
 * can ever succeed; with it, that takes hundreds of millions of messages.
 */
export const MAX_TERM_JUMP = 2 ** 24;

/**
 * Decodes and validates a frame. `currentTerm` is the receiver's term: a message
 * more than MAX_TERM_JUMP above it is refused like any other malformed message.
 */
export function decodeMessages(frame: Uint8Array, currentTerm?: number): Message[] {
  return messagesOf(unpackFrame(frame), currentTerm);
}

function messagesOf(value: unknown, currentTerm: number | undefined): Message[] {
  const f = record(value, 'frame', ['t', 'm']);
  if (f.t !== 'msgs') throw new PeerProtocolError(`frame.t must be 'msgs', got ${describe(f.t)}`);
  if (!Array.isArray(f.m)) throw new PeerProtocolError(`frame.m must be an array, got ${describe(f.m)}`);
  if (f.m.length === 0) throw new PeerProtocolError('frame.m must not be empty');
  const messages = f.m.map((m: unknown, i: number) => validateMessage(m, `frame.m[${i}]`));
  if (currentTerm !== undefined) {
    for (const [i, m] of messages.entries()) {
      if (m.term - currentTerm > MAX_TERM_JUMP) {
        throw new PeerProtocolError(`frame.m[${i}].term ${m.term} is more than ${MAX_TERM_JUMP} above this member's term ${currentTerm}`);
      }
    }
  }
  return messages;
}

// ------------------------------------------------------------------ size estimates

// Upper bounds on MessagePack overhead (field names, headers, 9-byte numbers); a
// property test checks that the estimate is never below the real encoded size.
const FRAME_OVERHEAD = 32;
const MESSAGE_OVERHEAD = 256;
const ENTRY_OVERHEAD = 64;
const NODE_ID_OVERHEAD = 8;

/** Bytes a frame adds around its messages (upper bound). */
export function frameOverheadBytes(): number {
  return FRAME_OVERHEAD;
}

/** Upper bound on one entry's encoded size inside an append. */
export function estimateEntryBytes(e: Entry): number {
  return ENTRY_OVERHEAD + e.data.byteLength;
}

/** Upper bound on one message's encoded size, without its entries. */
export function estimateMessageBaseBytes(m: Message): number {
  let bytes = MESSAGE_OVERHEAD + utf8Bytes(m.from) + utf8Bytes(m.to);
  if ('context' in m) bytes += utf8Bytes(m.context);
  if (m.type === 'snapshot') {
    bytes += m.chunk.byteLength + m.checksum.length;
    for (const id of [...m.meta.config.voters, ...m.meta.config.learners]) bytes += NODE_ID_OVERHEAD + utf8Bytes(id);
  }
  return bytes;
}

/** Upper bound on one service payload's encoded size inside a frame (a bin header of at most 5 bytes). */
export function estimateServicePayloadBytes(payload: Uint8Array): number {
  return payload.byteLength + 8;
}

/** The largest service payload a frame of `maxFrameBytes` carries (sendService throws past it). */
export function maxServicePayloadBytes(maxFrameBytes: number): number {
  return maxFrameBytes - frameOverheadBytes() - 8;
}

/** Upper bound on one message's encoded size inside a frame. */
export function estimateMessageBytes(m: Message): number {
  let bytes = estimateMessageBaseBytes(m);
  if (m.type === 'app') for (const e of m.entries) bytes += estimateEntryBytes(e);
  return bytes;
}

// ------------------------------------------------------------------ validation

const MESSAGE_FIELDS: Readonly<Record<MessageType, readonly string[]>> = {
  vote: ['lastLogIndex', 'lastLogTerm', 'transfer'],
  preVote: ['lastLogIndex', 'lastLogTerm', 'transfer'],
  voteResp: ['reject'],
  preVoteResp: ['reject'],
  app: ['prevIndex', 'prevTerm', 'entries', 'commit'],
  appResp: ['index', 'reject', 'hintIndex', 'hintTerm'],
  heartbeat: ['commit', 'context'],
  heartbeatResp: ['context'],
  snapshot: ['meta', 'offset', 'chunk', 'done', 'checksum'],
  timeoutNow: [],
  readIndex: ['context'],
  readIndexResp: ['context', 'index'],
};
const BASE_FIELDS = ['type', 'from', 'to', 'term'];
const ENTRY_KINDS: readonly EntryKind[] = ['noop', 'command', 'config'];

function isMessageType(v: unknown): v is MessageType {
  return typeof v === 'string' && Object.prototype.hasOwnProperty.call(MESSAGE_FIELDS, v);
}

/** Checks an untrusted decoded value and returns a fresh, well-formed Message built from it. */
export function validateMessage(value: unknown, where = 'message'): Message {
  if (!isPlainObject(value)) throw new PeerProtocolError(`${where} must be a map, got ${describe(value)}`);
  const type = value.type;
  if (!isMessageType(type)) throw new PeerProtocolError(`${where}.type is not a known message type: ${describe(type)}`);
  const v = record(value, where, [...BASE_FIELDS, ...MESSAGE_FIELDS[type]]);
  const from = nodeId(v.from, `${where}.from`);
  const to = nodeId(v.to, `${where}.to`);
  const term = uint(v.term, `${where}.term`);
  const base = { from, to, term };
  const at = (field: string): string => `${where}.${field}`;
  switch (type) {
    case 'vote':
    case 'preVote':
      return {
        type,
        ...base,
        lastLogIndex: uint(v.lastLogIndex, at('lastLogIndex')),
        lastLogTerm: uint(v.lastLogTerm, at('lastLogTerm')),
        transfer: bool(v.transfer, at('transfer')),
      };
    case 'voteResp':
    case 'preVoteResp':
      return { type, ...base, reject: bool(v.reject, at('reject')) };
    case 'app':
      return validateAppend(v, base, where);
    case 'appResp':
      return {
        type,
        ...base,
        index: uint(v.index, at('index')),
        reject: bool(v.reject, at('reject')),
        hintIndex: uint(v.hintIndex, at('hintIndex')),
        hintTerm: uint(v.hintTerm, at('hintTerm')),
      };
    case 'heartbeat':
      return { type, ...base, commit: uint(v.commit, at('commit')), context: context(v.context, at('context')) };
    case 'heartbeatResp':
      return { type, ...base, context: context(v.context, at('context')) };
    case 'snapshot':
      return {
        type,
        ...base,
        meta: snapshotMeta(v.meta, at('meta')),
        offset: uint(v.offset, at('offset')),
        chunk: bytes(v.chunk, at('chunk')),
        done: bool(v.done, at('done')),
        checksum: checksum(v.checksum, at('checksum')),
      };
    case 'timeoutNow':
      return { type, ...base };
    case 'readIndex':
      return { type, ...base, context: context(v.context, at('context')) };
    case 'readIndexResp':
      return { type, ...base, context: context(v.context, at('context')), index: uint(v.index, at('index')) };
  }
}

function validateAppend(
  v: Record<string, unknown>,
  base: { from: NodeId; to: NodeId; term: number },
  where: string,
): AppendRequest {
  const prevIndex = uint(v.prevIndex, `${where}.prevIndex`);
  const prevTerm = uint(v.prevTerm, `${where}.prevTerm`);
  const commit = uint(v.commit, `${where}.commit`);
  if (!Array.isArray(v.entries)) throw new PeerProtocolError(`${where}.entries must be an array, got ${describe(v.entries)}`);
  // Index 0 is the empty log's origin, whose term is 0 on every node.
  if (prevIndex === 0 && prevTerm !== 0) throw new PeerProtocolError(`${where}.prevTerm must be 0 when prevIndex is 0`);
  if (prevTerm > base.term) throw new PeerProtocolError(`${where}.prevTerm ${prevTerm} is above the message term ${base.term}`);
  const entries: Entry[] = [];
  let lastTerm = prevTerm;
  v.entries.forEach((raw: unknown, i: number) => {
    const e = entry(raw, `${where}.entries[${i}]`);
    // A leader sends a contiguous slice of its log, and log terms never decrease (Raft §5.3).
    if (e.index !== prevIndex + 1 + i) {
      throw new PeerProtocolError(`${where}.entries[${i}].index is ${e.index}, expected ${prevIndex + 1 + i} (entries must follow prevIndex contiguously)`);
    }
    if (e.term < lastTerm) throw new PeerProtocolError(`${where}.entries[${i}].term ${e.term} is below the term before it (${lastTerm})`);
    if (e.term > base.term) throw new PeerProtocolError(`${where}.entries[${i}].term ${e.term} is above the message term ${base.term}`);
    lastTerm = e.term;
    entries.push(e);
  });
  return { type: 'app', ...base, prevIndex, prevTerm, entries, commit };
}

function entry(value: unknown, where: string): Entry {
  const v = record(value, where, ['index', 'term', 'kind', 'data']);
  const kind = v.kind;
  if (typeof kind !== 'string' || !(ENTRY_KINDS as readonly string[]).includes(kind)) {
    throw new PeerProtocolError(`${where}.kind must be one of ${ENTRY_KINDS.join('|')}, got ${describe(kind)}`);
  }
  const index = uint(v.index, `${where}.index`);
  if (index === 0) throw new PeerProtocolError(`${where}.index must be at least 1`);
  return { index, term: uint(v.term, `${where}.term`), kind: kind as EntryKind, data: bytes(v.data, `${where}.data`) };
}

function snapshotMeta(value: unknown, where: string): SnapshotMeta {
  const v = record(value, where, ['index', 'term', 'config']);
  const c = record(v.config, `${where}.config`, ['voters', 'learners']);
  return {
    index: uint(v.index, `${where}.index`),
    term: uint(v.term, `${where}.term`),
    config: { voters: nodeIds(c.voters, `${where}.config.voters`), learners: nodeIds(c.learners, `${where}.config.learners`) },
  };
}

function nodeIds(value: unknown, where: string): NodeId[] {
  if (!Array.isArray(value)) throw new PeerProtocolError(`${where} must be an array, got ${describe(value)}`);
  return value.map((id: unknown, i: number) => nodeId(id, `${where}[${i}]`));
}

// ------------------------------------------------------------------ field checks (shared with auth.ts)

/** A map with only the allowed keys (all of which must be present). */
export function record(value: unknown, where: string, fields: readonly string[]): Record<string, unknown> {
  if (!isPlainObject(value)) throw new PeerProtocolError(`${where} must be a map, got ${describe(value)}`);
  for (const key of Object.keys(value)) {
    if (!fields.includes(key)) throw new PeerProtocolError(`${where} has an unexpected field ${JSON.stringify(key)}`);
  }
  for (const key of fields) {
    if (!Object.prototype.hasOwnProperty.call(value, key)) throw new PeerProtocolError(`${where}.${key} is missing`);
  }
  return value;
}

/** A non-negative safe integer (indexes, terms, offsets). */
export function uint(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new PeerProtocolError(`${where} must be a non-negative safe integer, got ${describe(value)}`);
  }
  return value;
}

export function bool(value: unknown, where: string): boolean {
  if (typeof value !== 'boolean') throw new PeerProtocolError(`${where} must be a boolean, got ${describe(value)}`);
  return value;
}

/** A node id: a non-empty string of at most MAX_NODE_ID_BYTES UTF-8 bytes. */
export function nodeId(value: unknown, where: string): NodeId {
  if (typeof value !== 'string' || value.length === 0) {
    throw new PeerProtocolError(`${where} must be a non-empty string node id, got ${describe(value)}`);
  }
  if (utf8Bytes(value) > MAX_NODE_ID_BYTES) throw new PeerProtocolError(`${where} is longer than ${MAX_NODE_ID_BYTES} bytes`);
  return value;
}

function context(value: unknown, where: string): string {
  if (typeof value !== 'string') throw new PeerProtocolError(`${where} must be a string, got ${describe(value)}`);
  if (utf8Bytes(value) > MAX_CONTEXT_BYTES) throw new PeerProtocolError(`${where} is longer than ${MAX_CONTEXT_BYTES} bytes`);
  return value;
}

/** A snapshot checksum: empty, or 64 lowercase hex digits (sha256). */
function checksum(value: unknown, where: string): string {
  if (typeof value !== 'string' || !(value === '' || /^[0-9a-f]{64}$/.test(value))) {
    throw new PeerProtocolError(`${where} must be empty or a sha256 hex digest, got ${describe(value)}`);
  }
  return value;
}

/** Binary data, copied into a plain Uint8Array that owns its memory. */
export function bytes(value: unknown, where: string): Uint8Array {
  if (!(value instanceof Uint8Array)) throw new PeerProtocolError(`${where} must be binary data, got ${describe(value)}`);
  return new Uint8Array(value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** A short, safe description of an unexpected value for an error message. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Uint8Array) return `${value.byteLength} bytes of binary`;
  switch (typeof value) {
    case 'string':
      return value.length > 40 ? `a ${value.length}-char string` : JSON.stringify(value);
    case 'number':
    case 'boolean':
    case 'bigint':
      return `${typeof value} ${String(value)}`;
    case 'undefined':
      return 'undefined';
    case 'object':
      return `an object (${(value as object).constructor?.name ?? 'no prototype'})`;
    default:
      return typeof value;
  }
}
