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
//   dialer   -> hello     { cluster, from, to, nonce: Nd, inc?: Id }
//   listener -> challenge { cluster, from, nonce: Nl, inc?: Il }
//   dialer   -> proof     { proof: HMAC(.., 'dialer', dialerId, Nl, Nd[, Id]) }
//   listener -> welcome   { proof: HMAC(.., 'listener', listenerId, Nd, Nl[, Il]) }
// The listener proves itself only after the dialer has, so an unauthenticated
// stranger who connects learns nothing derived from the secret.
//
// `inc` is the sender's store incarnation (a random id drawn when its data
// directory was created), bound into its own proof. Once a peer has proven
// itself, each side checks the peer's incarnation against the one it first saw
// for that member (IncarnationGuard): a member restarted with a wiped data
// directory has lost its votes and log, so it is refused until an operator
// removes it and adds it again, and can never vote with an empty log.
//
// A member joining an existing cluster may not know the cluster id yet; its
// listener then takes the id from the first member that proves the secret
// (ListenerHandshake with clusterId null).
//
// The two classes below are pure state machines over frames (no sockets), so the
// protocol is unit-testable; PeerTransport drives them over WebSocket.

import { createHmac, randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import { bytes, describe, nodeId, packFrame, PeerProtocolError, record, unpackFrame } from './codec.js';
import type { NodeId } from '../types.js';

/** The peer failed to prove membership (wrong secret, wrong cluster, unknown id, replay). */
export class PeerAuthError extends Error {
  override readonly name: string = 'PeerAuthError';
}

/**
 * 2: heartbeat rounds back a leader lease (a node that heard a leader grants no vote for a while); 1 did not.
 * 3: command entries carry an envelope ({v, family, op, t}); a version-2 member would apply every one of them
 * as a malformed no-op while the others applied it, so the two must not mix.
 */
export const PEER_PROTOCOL_VERSION = 3;
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
  /** The prover's store incarnation, when it sent one. */
  readonly ownIncarnation?: string;
  /** The command version the prover advertised, when it sent one. */
  readonly ownCommandVersion?: number;
}

/** A member showed an incarnation other than the one first seen for it: its data directory was replaced. */
export class PeerIncarnationError extends PeerAuthError {
  override readonly name: string = 'PeerIncarnationError';
  constructor(readonly peer: NodeId) {
    super(`member ${peer} came back with a new data directory; remove it and add it again`);
  }
}

/** Longest incarnation id accepted on the wire. */
export const MAX_INCARNATION_BYTES = 64;

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
  const fields: Array<string | Uint8Array> = [DOMAIN, input.clusterId, input.role, input.ownId, input.peerNonce, input.ownNonce];
  // Appended only when present, so proofs without an incarnation stay what they were.
  // Each tagged, so that one optional field can never be read as the other.
  if (input.ownIncarnation !== undefined) fields.push(`inc=${input.ownIncarnation}`);
  if (input.ownCommandVersion !== undefined) fields.push(`cv=${input.ownCommandVersion}`);
  for (const field of fields) {
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
  /** This node's store incarnation, sent to the peer and bound into our proof. */
  readonly incarnation?: string;
  /**
   * Called once the peer has proven the secret, with the incarnation it sent (null
   * if none); throws (PeerIncarnationError) to refuse the peer. Absent: no check.
   */
  readonly checkPeerIncarnation?: (peer: NodeId, incarnation: string | null) => void;
  /**
   * The command version this member's state machine applies, advertised to the peer
   * and bound into our proof. The transport does not interpret it.
   */
  readonly commandVersion?: number;
  /** Called once the peer has proven the secret, with the command version it advertised (1 if none). */
  readonly notePeerCommandVersion?: (peer: NodeId, version: number) => void;
}

/** What a member says about itself in every handshake and learns about its peer: one object, so a link cannot forget a field. */
export type PeerIdentityOptions = Pick<HandshakeOptions, 'incarnation' | 'checkPeerIncarnation' | 'commandVersion' | 'notePeerCommandVersion'>;

/** A listener may not know its cluster id yet (a joining member): null takes the dialer's. */
export type ListenerHandshakeOptions = Omit<HandshakeOptions, 'clusterId'> & { readonly clusterId: string | null };

export function checkHandshakeOptions(o: HandshakeOptions | ListenerHandshakeOptions): void {
  if (o.secret.length === 0) throw new PeerAuthError('the cluster secret must not be empty');
  if (o.clusterId !== null && !validClusterId(o.clusterId)) throw new PeerAuthError(`the cluster id must be 1..${MAX_CLUSTER_ID_BYTES} bytes`);
  if (o.nonce !== undefined && o.nonce.byteLength !== NONCE_BYTES) throw new PeerAuthError(`a nonce must be ${NONCE_BYTES} bytes`);
  if (o.incarnation !== undefined && !validIncarnation(o.incarnation)) {
    throw new PeerAuthError(`an incarnation must be 1..${MAX_INCARNATION_BYTES} bytes`);
  }
  if (o.commandVersion !== undefined && !validCommandVersion(o.commandVersion)) throw new PeerAuthError('a command version must be a positive integer');
}

function validCommandVersion(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
}

/** What this side adds to its proof and its first frame. */
function ownIdentity(o: HandshakeOptions | ListenerHandshakeOptions): { proof: Pick<ProofInput, 'ownIncarnation' | 'ownCommandVersion'>; frame: Record<string, unknown> } {
  return {
    proof: { ...(o.incarnation === undefined ? {} : { ownIncarnation: o.incarnation }), ...(o.commandVersion === undefined ? {} : { ownCommandVersion: o.commandVersion }) },
    frame: { ...(o.incarnation === undefined ? {} : { inc: o.incarnation }), ...(o.commandVersion === undefined ? {} : { cv: o.commandVersion }) },
  };
}

/** What the peer added to its first frame, to check its proof with and to report once it is proven. */
interface PeerIdentity {
  readonly incarnation: string | null;
  readonly commandVersion: number | null;
}

function peerProofFields(peer: PeerIdentity): Pick<ProofInput, 'ownIncarnation' | 'ownCommandVersion'> {
  return { ...(peer.incarnation === null ? {} : { ownIncarnation: peer.incarnation }), ...(peer.commandVersion === null ? {} : { ownCommandVersion: peer.commandVersion }) };
}

function validClusterId(id: string): boolean {
  return id.length > 0 && Buffer.byteLength(id) <= MAX_CLUSTER_ID_BYTES;
}

function validIncarnation(inc: string): boolean {
  return inc.length > 0 && Buffer.byteLength(inc) <= MAX_INCARNATION_BYTES;
}

/** The dialing side: sends hello, answers the challenge, verifies the welcome. */
export class DialerHandshake {
  private readonly nonce: Uint8Array;
  private peerNonce: Uint8Array | null = null;
  private peer: PeerIdentity = { incarnation: null, commandVersion: null };
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

  /** The command version the listener advertised (1 when it sent none), once authenticated; null before. */
  get peerCommandVersion(): number | null {
    return this.state === 'done' ? (this.peer.commandVersion ?? 1) : null;
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
      ...ownIdentity(this.opts).frame,
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
    const { fields: f, peer } = withIdentity(value, 'challenge', ['t', 'cluster', 'from', 'nonce']);
    expectType(f.t, 'challenge');
    checkCluster(f.cluster, this.opts.clusterId);
    const from = nodeId(f.from, 'challenge.from');
    if (from !== this.peerId) throw new PeerAuthError(`dialed ${this.peerId} but the listener says it is ${from}`);
    this.peerNonce = nonce(f.nonce, 'challenge.nonce');
    this.peer = peer;
    this.state = 'sentProof';
    const proof = computeProof(this.opts.secret, {
      clusterId: this.opts.clusterId,
      role: 'dialer',
      ownId: this.opts.selfId,
      peerNonce: this.peerNonce,
      ownNonce: this.nonce,
      ...ownIdentity(this.opts).proof,
    });
    return packFrame({ t: 'proof', proof });
  }

  private onWelcome(value: unknown): null {
    const f = record(value, 'welcome', ['t', 'proof']);
    expectType(f.t, 'welcome');
    const proof = bytes(f.proof, 'welcome.proof');
    const ok = verifyProof(
      this.opts.secret,
      {
        clusterId: this.opts.clusterId,
        role: 'listener',
        ownId: this.peerId,
        peerNonce: this.nonce,
        ownNonce: this.peerNonce!,
        ...peerProofFields(this.peer),
      },
      proof,
    );
    if (!ok) throw new PeerAuthError(`${this.peerId} failed to prove the cluster secret (different secret?)`);
    // Only a peer that proved the secret may be remembered (or refused) by its incarnation.
    this.opts.checkPeerIncarnation?.(this.peerId, this.peer.incarnation);
    this.opts.notePeerCommandVersion?.(this.peerId, this.peer.commandVersion ?? 1);
    this.state = 'done';
    return null;
  }

  private expect(state: typeof this.state, what: string): void {
    if (this.state !== state) throw new PeerProtocolError(`${what} is not allowed in handshake state ${this.state}`);
  }
}

/** The accepting side: answers hello with a challenge, verifies the proof, then proves itself. */
export class ListenerHandshake {
  /** The command version the dialer advertised in its proven hello (1 when it sent none), once authenticated; null before. */
  get peerCommandVersion(): number | null {
    return this.state === 'done' ? (this.peer.commandVersion ?? 1) : null;
  }

  private readonly nonce: Uint8Array;
  private peerNonce: Uint8Array | null = null;
  private claimedPeer: NodeId | null = null;
  private peer: PeerIdentity = { incarnation: null, commandVersion: null };
  /** Ours, or (for a joining member) the one the dialer claimed. */
  private cluster: string | null;
  private state: 'awaitHello' | 'awaitProof' | 'done' | 'failed' = 'awaitHello';

  constructor(
    private readonly opts: ListenerHandshakeOptions,
    /** Whether `id` is a member allowed to connect. */
    private readonly isKnownPeer: (id: NodeId) => boolean,
  ) {
    checkHandshakeOptions(opts);
    this.nonce = opts.nonce ?? newNonce();
    this.cluster = opts.clusterId;
  }

  /** The authenticated peer id once the handshake completed, else null. */
  get peerId(): NodeId | null {
    return this.state === 'done' ? this.claimedPeer : null;
  }

  /** The cluster id the authenticated peer proved (ours, unless we were started without one). */
  get clusterId(): string | null {
    return this.state === 'done' ? this.cluster : null;
  }

  /** A well-formed hello from a known member arrived (the proof may still be missing). */
  get heardHello(): boolean {
    return this.state === 'awaitProof' || this.state === 'done';
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
    const { fields: f, peer } = withIdentity(value, 'hello', ['t', 'v', 'cluster', 'from', 'to', 'nonce']);
    expectType(f.t, 'hello');
    if (f.v !== PEER_PROTOCOL_VERSION) {
      throw new PeerProtocolError(`unsupported peer protocol version ${describe(f.v)} (this node speaks ${PEER_PROTOCOL_VERSION})`);
    }
    if (this.cluster === null) {
      // A joining member: the claim is only believed once the dialer proves the secret over it.
      if (typeof f.cluster !== 'string' || !validClusterId(f.cluster)) throw new PeerProtocolError(`cluster id must be 1..${MAX_CLUSTER_ID_BYTES} bytes`);
      this.cluster = f.cluster;
    } else {
      checkCluster(f.cluster, this.cluster);
    }
    const from = nodeId(f.from, 'hello.from');
    const to = nodeId(f.to, 'hello.to');
    if (to !== this.opts.selfId) throw new PeerAuthError(`connection meant for ${to} reached ${this.opts.selfId}`);
    if (from === this.opts.selfId || !this.isKnownPeer(from)) throw new PeerAuthError(`${from} is not a known member`);
    this.claimedPeer = from;
    this.peerNonce = nonce(f.nonce, 'hello.nonce');
    this.peer = peer;
    this.state = 'awaitProof';
    return packFrame({
      t: 'challenge',
      cluster: this.cluster,
      from: this.opts.selfId,
      nonce: this.nonce,
      ...ownIdentity(this.opts).frame,
    });
  }

  private onProof(value: unknown): Buffer {
    const f = record(value, 'proof', ['t', 'proof']);
    expectType(f.t, 'proof');
    const peer = this.claimedPeer!;
    const cluster = this.cluster!;
    const ok = verifyProof(
      this.opts.secret,
      {
        clusterId: cluster,
        role: 'dialer',
        ownId: peer,
        peerNonce: this.nonce,
        ownNonce: this.peerNonce!,
        ...peerProofFields(this.peer),
      },
      bytes(f.proof, 'proof.proof'),
    );
    if (!ok) throw new PeerAuthError(`${peer} failed to prove the cluster secret (different secret?)`);
    this.opts.checkPeerIncarnation?.(peer, this.peer.incarnation);
    this.opts.notePeerCommandVersion?.(peer, this.peer.commandVersion ?? 1);
    this.state = 'done';
    const proof = computeProof(this.opts.secret, {
      clusterId: cluster,
      role: 'listener',
      ownId: this.opts.selfId,
      peerNonce: this.peerNonce!,
      ownNonce: this.nonce,
      ...ownIdentity(this.opts).proof,
    });
    return packFrame({ t: 'welcome', proof });
  }
}

/** A handshake frame's fields plus the optional identity a peer adds: its incarnation and its command version. */
function withIdentity(value: unknown, where: string, fields: readonly string[]): { fields: Record<string, unknown>; peer: PeerIdentity } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { fields: record(value, where, fields), peer: { incarnation: null, commandVersion: null } };
  const { inc, cv, ...rest } = value as Record<string, unknown>;
  if (inc !== undefined && (typeof inc !== 'string' || !validIncarnation(inc))) throw new PeerProtocolError(`${where}.inc must be 1..${MAX_INCARNATION_BYTES} bytes of text`);
  if (cv !== undefined && !validCommandVersion(cv)) throw new PeerProtocolError(`${where}.cv must be a positive integer, got ${describe(cv)}`);
  return {
    fields: record(rest, where, fields),
    peer: { incarnation: inc === undefined ? null : (inc as string), commandVersion: cv === undefined ? null : (cv as number) },
  };
}

/**
 * Trust on first use for member incarnations: the first incarnation a member
 * proves is remembered (persisted by `save`), and a different one later is
 * refused. Forgetting a member (it was removed) lets it be added again with a
 * new data directory. Checks are synchronous (they run inside the handshake);
 * saving is asynchronous and serialized, so a crash in the few milliseconds
 * before a first sighting is synced only means that sighting is learned again.
 *
 * A removed member's process may still be running and dialing for a moment
 * after this member forgot it (its old one, or a wiped copy started before the
 * removal): no incarnation is learned for a forgotten member while it is not a
 * member again (`isMember`), or the member added again with a new data
 * directory would be refused as a stranger to its own id.
 */
export class IncarnationGuard {
  private saving: Promise<void> = Promise.resolve();
  /** Members forgotten (removed), until one is learned again once it is a member. */
  private readonly forgotten = new Set<NodeId>();

  constructor(
    private readonly known: Map<NodeId, string>,
    private readonly save: (known: ReadonlyMap<NodeId, string>) => Promise<void>,
    private readonly onSaveError: (err: unknown) => void,
    /** Whether `peer` is in the configuration this member has applied. */
    private readonly isMember: (peer: NodeId) => boolean = () => true,
  ) {}

  /** Throws PeerIncarnationError when `peer` shows an incarnation other than the one first seen. */
  check(peer: NodeId, incarnation: string | null): void {
    const first = this.known.get(peer);
    if (first === undefined) {
      if (incarnation === null) return; // nothing to remember from a peer that sends none
      // A removed member, not added again yet: whatever runs under its id now (its old process, still
      // dialing, or a wiped copy) is not the member to come, so nothing is learned from it.
      if (this.forgotten.has(peer) && !this.isMember(peer)) return;
      this.forgotten.delete(peer);
      this.known.set(peer, incarnation);
      this.persist();
      return;
    }
    if (incarnation !== first) throw new PeerIncarnationError(peer);
  }

  forget(peer: NodeId): void {
    if (!this.known.delete(peer)) return;
    this.forgotten.add(peer);
    this.persist();
  }

  /** The incarnation first seen for `peer`, if any. */
  incarnationOf(peer: NodeId): string | undefined {
    return this.known.get(peer);
  }

  /** Resolves once every change so far is saved. */
  flushed(): Promise<void> {
    return this.saving;
  }

  private persist(): void {
    const copy = new Map(this.known);
    this.saving = this.saving.then(() => this.save(copy)).catch((err: unknown) => this.onSaveError(err));
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
