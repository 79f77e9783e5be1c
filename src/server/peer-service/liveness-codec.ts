// The liveness messages of the peer service (docs/scale-out.md "Peer messages": `live`
// and `liveAck`), on the same service channel as the forwards and relayed ops and in
// the same shape (a MessagePack map with a kind `k`), decoded as strictly. Kept apart
// from codec.ts only so that the two can change independently; PeerService asks this
// module first and hands any other kind to codec.ts.
import { MAX_SESSION_ID_BYTES } from '../../protocol/session-id.js';
import { bool, describe, packFrame, PeerProtocolError, uint, unpackFrame } from '../../raft/transport/codec.js';
import { MAX_SESSIONS_PER_BATCH, type LiveAck, type LiveBatch } from './liveness.js';

export type LivenessMessage = ({ readonly k: 'live' } & LiveBatch) | ({ readonly k: 'liveAck' } & LiveAck);

/** The epoch is a random 48-bit number: within MessagePack's and JavaScript's safe integers. */
const MAX_EPOCH = 2 ** 48;

export function encodeLivenessMessage(m: LivenessMessage): Buffer {
  if (m.k === 'live') {
    return packFrame({ k: 'live', epoch: m.epoch, seq: m.seq, term: m.term, full: m.full, touched: [...m.touched], acks: m.acks.map(([s, i]) => [s, i]), held: m.held });
  }
  return packFrame({ k: 'liveAck', epoch: m.epoch, seq: m.seq, term: m.term, ignored: [...m.ignored], busy: m.busy });
}

function isLivenessKind(k: unknown): k is 'live' | 'liveAck' {
  return k === 'live' || k === 'liveAck';
}

const LIVE_PREFIX = Buffer.from([0xa1, 0x6b, 0xa4, ...Buffer.from('live')]);
const LIVE_ACK_PREFIX = Buffer.from([0xa1, 0x6b, 0xa7, ...Buffer.from('liveAck')]);

/**
 * Whether a payload is a liveness message, without decoding it: encodeLivenessMessage writes a
 * small map whose first key is `k` (one header byte, then `k` and its kind), so the forwards'
 * large bodies are never unpacked twice. A liveness map that names its kind later is not taken
 * for one, and codec.ts refuses it as an unknown kind.
 */
export function looksLikeLiveness(payload: Uint8Array): boolean {
  if (payload.length < 1 + LIVE_ACK_PREFIX.length || (payload[0]! & 0xf0) !== 0x80) return false;
  const after = Buffer.from(payload.buffer, payload.byteOffset + 1, LIVE_ACK_PREFIX.length);
  return after.equals(LIVE_ACK_PREFIX) || after.subarray(0, LIVE_PREFIX.length).equals(LIVE_PREFIX);
}

/** Decodes a liveness payload (one looksLikeLiveness accepted); throws PeerProtocolError when malformed. */
export function decodeLivenessMessage(payload: Uint8Array): LivenessMessage {
  const value = unpackFrame(payload);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new PeerProtocolError(`a liveness message must be a map, got ${describe(value)}`);
  const v = value as Record<string, unknown>;
  if (!isLivenessKind(v.k)) throw new PeerProtocolError(`not a liveness message: ${describe(v.k)}`);
  if (v.k === 'live') {
    exactly(v, 'live', ['k', 'epoch', 'seq', 'term', 'full', 'touched', 'acks', 'held']);
    const acks = list(v.acks, 'live.acks').map((pair, n) => {
      if (!Array.isArray(pair) || pair.length !== 2) throw new PeerProtocolError(`live.acks[${n}] must be [session, index], got ${describe(pair)}`);
      return [session(pair[0], `live.acks[${n}][0]`), uint(pair[1], `live.acks[${n}][1]`)] as const;
    });
    return {
      k: 'live',
      epoch: epoch(v.epoch, 'live.epoch'),
      seq: uint(v.seq, 'live.seq'),
      term: uint(v.term, 'live.term'),
      full: bool(v.full, 'live.full'),
      touched: list(v.touched, 'live.touched').map((s, n) => session(s, `live.touched[${n}]`)),
      acks,
      held: uint(v.held, 'live.held'),
    };
  }
  exactly(v, 'liveAck', ['k', 'epoch', 'seq', 'term', 'ignored', 'busy']);
  return {
    k: 'liveAck',
    epoch: epoch(v.epoch, 'liveAck.epoch'),
    seq: uint(v.seq, 'liveAck.seq'),
    term: uint(v.term, 'liveAck.term'),
    ignored: list(v.ignored, 'liveAck.ignored').map((s, n) => session(s, `liveAck.ignored[${n}]`)),
    busy: bool(v.busy, 'liveAck.busy'),
  };
}

function exactly(v: Record<string, unknown>, where: string, keys: readonly string[]): void {
  for (const key of Object.keys(v)) if (!keys.includes(key)) throw new PeerProtocolError(`${where} has an unexpected field ${JSON.stringify(key)}`);
  for (const key of keys) if (!Object.hasOwn(v, key)) throw new PeerProtocolError(`${where}.${key} is missing`);
}

/** An array of at most MAX_SESSIONS_PER_BATCH entries (what one batch names). */
function list(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) throw new PeerProtocolError(`${where} must be an array, got ${describe(value)}`);
  if (value.length > MAX_SESSIONS_PER_BATCH) throw new PeerProtocolError(`${where} names ${value.length} entries, more than ${MAX_SESSIONS_PER_BATCH}`);
  return value;
}

function session(value: unknown, where: string): string {
  if (typeof value !== 'string' || value.length === 0) throw new PeerProtocolError(`${where} must be a non-empty string, got ${describe(value)}`);
  if (Buffer.byteLength(value, 'utf8') > MAX_SESSION_ID_BYTES) throw new PeerProtocolError(`${where} is longer than ${MAX_SESSION_ID_BYTES} bytes`);
  return value;
}

function epoch(value: unknown, where: string): number {
  const n = uint(value, where);
  if (n >= MAX_EPOCH) throw new PeerProtocolError(`${where} must be below 2^48`);
  return n;
}
