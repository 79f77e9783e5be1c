// Mutual authentication of two cluster members when a peer connection opens.
// The shared secret never crosses the wire: each side sends a fresh random nonce
// and proves it knows the secret with
//   HMAC-SHA256(secret, clusterId | role | own id | peer's nonce | own nonce).
// Fresh nonces on both sides make a recorded transcript useless later (replay), the
// role label stops a proof made as one side from being reflected as the other, and
// the cluster id (checked in the clear and bound into every proof) keeps members
// of two different clusters from ever talking even if they share a secret.
//
// The exchange, started by the side that dials:
//   dialer   -> hello     { cluster, from, to, nonce: Nd }
//   listener -> challenge { cluster, from, nonce: Nl }
//   dialer   -> proof     { proof: HMAC(.., 'dialer', dialerId, Nl, Nd) }
//   listener -> welcome   { proof: HMAC(.., 'listener', listenerId, Nd, Nl) }
// The listener proves itself only after the dialer has, so an unauthenticated
// stranger who connects learns nothing derived from the secret.
//
// The two classes below are pure state machines over frames (no sockets), so the
// protocol is unit-testable; PeerTransport drives them over WebSocket.

import { createHmac, randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import { bytes, describe, nodeId, packFrame, PeerProtocolError, record, unpackFrame } from './codec.js';
import type { NodeId } from '../types.js';

/** The peer failed to prove membership (wrong secret, wrong cluster, unknown id, replay). */
export class PeerAuthError extends Error {
  override readonly name = 'PeerAuthError';
}

export const PEER_PROTOCOL_VERSION = 1;
export const NONCE_BYTES = 32;
const MAX_CLUSTER_ID_BYTES = 255;
const DOMAIN = 'vera-peer-auth-v1';

export type HandshakeRole = 'dialer' | 'listener';

export interface ProofInput {
  readonly clusterId: string;
  readonly role: HandshakeRole;
  readonly ownId: NodeId;
  readonly peerNonce: Uint8Array;
  readonly ownNonce: Uint8Array;
}

/**
 * A cluster id derived from the initial members list (`ID=HOST:PEERPORT/CLIENTPORT`
 * items): the same list in any order gives the same id, a different list a different one.
 */
export function deriveClusterId(members: readonly string[]): string {
  if (members.length === 0) throw new PeerAuthError('cannot derive a cluster id from an empty members list');
  const canonical = members.map((m) => m.trim()).sort();
  // Length-prefix each item so that no two different lists hash the same bytes.
  const hash = createHash('sha256');
  for (const m of canonical) hash.update(`${Buffer.byteLength(m)}:${m};`);
  return `vera-${hash.digest('hex').slice(0, 32)}`;
}

/** A fresh random nonce. */
export function newNonce(): Buffer {
  return randomBytes(NONCE_BYTES);
}

/** The proof one side sends: HMAC-SHA256 over length-prefixed fields so that field boundaries are unambiguous. */
export function computeProof(secret: string | Uint8Array, input: ProofInput): Buffer {
  const hmac = createHmac('sha256', secret);
  for (const field of [DOMAIN, input.clusterId, input.role, input.ownId, input.peerNonce, input.ownNonce]) {
    const b = typeof field === 'string' ? Buffer.from(field, 'utf8') : field;
    const len = Buffer.alloc(4);
    len.writeUInt32BE(b.byteLength);
    hmac.update(len);
    hmac.update(b);
  }
  return hmac.digest();
}

/** Constant-time check of a proof received from the peer. */
export function verifyProof(secret: string | Uint8Array, input: ProofInput, proof: Uint8Array): boolean {
  const expected = computeProof(secret, input);
  return proof.byteLength === expected.byteLength && timingSafeEqual(expected, proof);
}

export interface HandshakeOptions {
  readonly secret: string | Uint8Array;
  readonly clusterId: string;
  readonly selfId: NodeId;
  /** Injected for tests; a fresh random nonce by default. */
  readonly nonce?: Uint8Array;
}

export function checkHandshakeOptions(o: HandshakeOptions): void {
  if (o.secret.length === 0) throw new PeerAuthError('the cluster secret must not be empty');
  if (o.clusterId.length === 0 || Buffer.byteLength(o.clusterId) > MAX_CLUSTER_ID_BYTES) {
    throw new PeerAuthError(`the cluster id must be 1..${MAX_CLUSTER_ID_BYTES} bytes`);
  }
  if (o.nonce !== undefined && o.nonce.byteLength !== NONCE_BYTES) throw new PeerAuthError(`a nonce must be ${NONCE_BYTES} bytes`);
}

/** The dialing side: sends hello, answers the challenge, verifies the welcome. */
export class DialerHandshake {
  private readonly nonce: Uint8Array;
  private peerNonce: Uint8Array | null = null;
  private state: 'new' | 'sentHello' | 'sentProof' | 'done' | 'failed' = 'new';

  constructor(
    private readonly opts: HandshakeOptions,
    /** The member this connection is meant to reach. */
    readonly peerId: NodeId,
  ) {
    checkHandshakeOptions(opts);
    this.nonce = opts.nonce ?? newNonce();
  }

  get authenticated(): boolean {
    return this.state === 'done';
  }

  /** The first frame to send once the socket is open. */
  hello(): Buffer {
    this.expect('new', 'hello');
    this.state = 'sentHello';
    return packFrame({
      t: 'hello',
      v: PEER_PROTOCOL_VERSION,
      cluster: this.opts.clusterId,
      from: this.opts.selfId,
      to: this.peerId,
      nonce: this.nonce,
    });
  }

  /**
   * Handles a frame from the listener. Returns the frame to send back, or null
   * when the handshake has just completed. Throws PeerAuthError/PeerProtocolError.
   */
  receive(frame: Uint8Array): Buffer | null {
    try {
      const value = unpackFrame(frame);
      if (this.state === 'sentHello') return this.onChallenge(value);
      if (this.state === 'sentProof') return this.onWelcome(value);
      throw new PeerProtocolError(`unexpected handshake frame in state ${this.state}`);
    } catch (err) {
      this.state = 'failed';
      throw err;
    }
  }

  private onChallenge(value: unknown): Buffer {
    const f = record(value, 'challenge', ['t', 'cluster', 'from', 'nonce']);
    expectType(f.t, 'challenge');
    checkCluster(f.cluster, this.opts.clusterId);
    const from = nodeId(f.from, 'challenge.from');
    if (from !== this.peerId) throw new PeerAuthError(`dialed ${this.peerId} but the listener says it is ${from}`);
    this.peerNonce = nonce(f.nonce, 'challenge.nonce');
    this.state = 'sentProof';
    const proof = computeProof(this.opts.secret, {
      clusterId: this.opts.clusterId,
      role: 'dialer',
      ownId: this.opts.selfId,
      peerNonce: this.peerNonce,
      ownNonce: this.nonce,
    });
    return packFrame({ t: 'proof', proof });
  }

  private onWelcome(value: unknown): null {
    const f = record(value, 'welcome', ['t', 'proof']);
    expectType(f.t, 'welcome');
    const proof = bytes(f.proof, 'welcome.proof');
    const ok = verifyProof(
      this.opts.secret,
      { clusterId: this.opts.clusterId, role: 'listener', ownId: this.peerId, peerNonce: this.nonce, ownNonce: this.peerNonce! },
      proof,
    );
    if (!ok) throw new PeerAuthError(`${this.peerId} failed to prove the cluster secret (different secret?)`);
    this.state = 'done';
    return null;
  }

  private expect(state: typeof this.state, what: string): void {
    if (this.state !== state) throw new PeerProtocolError(`${what} is not allowed in handshake state ${this.state}`);
  }
}

/** The accepting side: answers hello with a challenge, verifies the proof, then proves itself. */
export class ListenerHandshake {
  private readonly nonce: Uint8Array;
  private peerNonce: Uint8Array | null = null;
  private claimedPeer: NodeId | null = null;
  private state: 'awaitHello' | 'awaitProof' | 'done' | 'failed' = 'awaitHello';

  constructor(
    private readonly opts: HandshakeOptions,
    /** Whether `id` is a member allowed to connect. */
    private readonly isKnownPeer: (id: NodeId) => boolean,
  ) {
    checkHandshakeOptions(opts);
    this.nonce = opts.nonce ?? newNonce();
  }

  /** The authenticated peer id once the handshake completed, else null. */
  get peerId(): NodeId | null {
    return this.state === 'done' ? this.claimedPeer : null;
  }

  /** Handles a frame from the dialer and returns the reply to send. Throws PeerAuthError/PeerProtocolError. */
  receive(frame: Uint8Array): Buffer {
    try {
      const value = unpackFrame(frame);
      if (this.state === 'awaitHello') return this.onHello(value);
      if (this.state === 'awaitProof') return this.onProof(value);
      throw new PeerProtocolError(`unexpected handshake frame in state ${this.state}`);
    } catch (err) {
      this.state = 'failed';
      throw err;
    }
  }

  private onHello(value: unknown): Buffer {
    const f = record(value, 'hello', ['t', 'v', 'cluster', 'from', 'to', 'nonce']);
    expectType(f.t, 'hello');
    if (f.v !== PEER_PROTOCOL_VERSION) {
      throw new PeerProtocolError(`unsupported peer protocol version ${describe(f.v)} (this node speaks ${PEER_PROTOCOL_VERSION})`);
    }
    checkCluster(f.cluster, this.opts.clusterId);
    const from = nodeId(f.from, 'hello.from');
    const to = nodeId(f.to, 'hello.to');
    if (to !== this.opts.selfId) throw new PeerAuthError(`connection meant for ${to} reached ${this.opts.selfId}`);
    if (from === this.opts.selfId || !this.isKnownPeer(from)) throw new PeerAuthError(`${from} is not a known member`);
    this.claimedPeer = from;
    this.peerNonce = nonce(f.nonce, 'hello.nonce');
    this.state = 'awaitProof';
    return packFrame({ t: 'challenge', cluster: this.opts.clusterId, from: this.opts.selfId, nonce: this.nonce });
  }

  private onProof(value: unknown): Buffer {
    const f = record(value, 'proof', ['t', 'proof']);
    expectType(f.t, 'proof');
    const peer = this.claimedPeer!;
    const ok = verifyProof(
      this.opts.secret,
      { clusterId: this.opts.clusterId, role: 'dialer', ownId: peer, peerNonce: this.nonce, ownNonce: this.peerNonce! },
      bytes(f.proof, 'proof.proof'),
    );
    if (!ok) throw new PeerAuthError(`${peer} failed to prove the cluster secret (different secret?)`);
    this.state = 'done';
    const proof = computeProof(this.opts.secret, {
      clusterId: this.opts.clusterId,
      role: 'listener',
      ownId: this.opts.selfId,
      peerNonce: this.peerNonce!,
      ownNonce: this.nonce,
    });
    return packFrame({ t: 'welcome', proof });
  }
}

function expectType(t: unknown, expected: string): void {
  if (t !== expected) throw new PeerProtocolError(`expected a '${expected}' handshake frame, got t=${describe(t)}`);
}

function checkCluster(value: unknown, own: string): void {
  if (typeof value !== 'string') throw new PeerProtocolError(`cluster id must be a string, got ${describe(value)}`);
  if (value !== own) throw new PeerAuthError(`cluster id mismatch: peer is in ${JSON.stringify(value.slice(0, 64))}, this node in ${JSON.stringify(own)}`);
}

function nonce(value: unknown, where: string): Uint8Array {
  const b = bytes(value, where);
  if (b.byteLength !== NONCE_BYTES) throw new PeerProtocolError(`${where} must be ${NONCE_BYTES} bytes, got ${b.byteLength}`);
  return b;
}
