import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import {
  computeProof,
  deriveClusterId,
  DialerHandshake,
  ListenerHandshake,
  NONCE_BYTES,
  PeerAuthError,
  PEER_PROTOCOL_VERSION,
  type HandshakeOptions,
} from '../../src/raft/transport/auth.js';
import { PeerProtocolError } from '../../src/raft/transport/codec.js';

const CLUSTER = 'vera-test-cluster';
const SECRET = 'correct horse battery staple';
const packr = new Packr({ useRecords: false, variableMapSize: true });

function dialer(overrides: Partial<HandshakeOptions> = {}, peerId = 'n2'): DialerHandshake {
  return new DialerHandshake({ secret: SECRET, clusterId: CLUSTER, selfId: 'n1', ...overrides }, peerId);
}

function listener(overrides: Partial<HandshakeOptions> = {}, known = ['n1', 'n3']): ListenerHandshake {
  return new ListenerHandshake({ secret: SECRET, clusterId: CLUSTER, selfId: 'n2', ...overrides }, (id) => known.includes(id));
}

/** Runs the four-frame exchange and returns its transcript. */
function runHandshake(d: DialerHandshake, l: ListenerHandshake): { hello: Buffer; challenge: Buffer; proof: Buffer; welcome: Buffer } {
  const hello = d.hello();
  const challenge = l.receive(hello);
  const proof = d.receive(challenge)!;
  const welcome = l.receive(proof);
  expect(d.receive(welcome)).toBeNull();
  return { hello, challenge, proof, welcome };
}

describe('peer handshake', () => {
  it('authenticates both sides when they share the secret and cluster', () => {
    const d = dialer();
    const l = listener();
    expect(d.authenticated).toBe(false);
    expect(l.peerId).toBeNull();
    runHandshake(d, l);
    expect(d.authenticated).toBe(true);
    expect(l.peerId).toBe('n1');
  });

  it('never puts the secret on the wire', () => {
    const t = runHandshake(dialer(), listener());
    for (const frame of Object.values(t)) expect(frame.includes(Buffer.from(SECRET))).toBe(false);
  });

  it('listener rejects a dialer with the wrong secret', () => {
    const d = dialer({ secret: 'wrong' });
    const l = listener();
    const proof = d.receive(l.receive(d.hello()))!;
    expect(() => l.receive(proof)).toThrow(PeerAuthError);
    expect(l.peerId).toBeNull();
  });

  it('dialer rejects a listener with the wrong secret', () => {
    // A listener that knows a different secret cannot produce the welcome proof: forge what it would send.
    const d = dialer();
    const listenerNonce = Buffer.alloc(NONCE_BYTES, 7);
    const hello = packr.unpack(d.hello()) as { nonce: Uint8Array };
    const proofFrame = d.receive(packr.pack({ t: 'challenge', cluster: CLUSTER, from: 'n2', nonce: listenerNonce }));
    expect(proofFrame).not.toBeNull();
    const forged = computeProof('wrong', { clusterId: CLUSTER, role: 'listener', ownId: 'n2', peerNonce: hello.nonce, ownNonce: listenerNonce });
    expect(() => d.receive(packr.pack({ t: 'welcome', proof: forged }))).toThrow(PeerAuthError);
    expect(d.authenticated).toBe(false);
  });

  it('listener rejects a replayed dialer transcript', () => {
    const recorded = runHandshake(dialer(), listener());
    // An eavesdropper replays hello and proof to a fresh listener, which picks a fresh nonce.
    const l = listener();
    l.receive(recorded.hello);
    expect(() => l.receive(recorded.proof)).toThrow(PeerAuthError);
    expect(l.peerId).toBeNull();
  });

  it('dialer rejects a replayed listener transcript', () => {
    const recorded = runHandshake(dialer(), listener());
    const d = dialer();
    d.hello();
    d.receive(recorded.challenge);
    expect(() => d.receive(recorded.welcome)).toThrow(PeerAuthError);
    expect(d.authenticated).toBe(false);
  });

  it('the same nonces give the same proof only for the same role (no reflection)', () => {
    const a = Buffer.alloc(NONCE_BYTES, 1);
    const b = Buffer.alloc(NONCE_BYTES, 2);
    const asDialer = computeProof(SECRET, { clusterId: CLUSTER, role: 'dialer', ownId: 'n1', peerNonce: a, ownNonce: b });
    const asListener = computeProof(SECRET, { clusterId: CLUSTER, role: 'listener', ownId: 'n1', peerNonce: a, ownNonce: b });
    expect(asDialer.equals(asListener)).toBe(false);
    expect(asDialer.equals(computeProof(SECRET, { clusterId: CLUSTER, role: 'dialer', ownId: 'n1', peerNonce: a, ownNonce: b }))).toBe(true);
  });

  it('listener refuses a dialer from another cluster before any proof', () => {
    const d = dialer({ clusterId: 'other-cluster' });
    expect(() => listener().receive(d.hello())).toThrow(/cluster id mismatch/);
  });

  it('dialer refuses a listener from another cluster', () => {
    const d = dialer();
    const hello = d.hello();
    const challenge = listener({ clusterId: 'other-cluster' }, ['n1']);
    // The other cluster's listener would refuse the hello; build its challenge directly.
    expect(() => challenge.receive(hello)).toThrow(PeerAuthError);
    const foreign = packr.pack({ t: 'challenge', cluster: 'other-cluster', from: 'n2', nonce: Buffer.alloc(NONCE_BYTES) });
    expect(() => d.receive(foreign)).toThrow(/cluster id mismatch/);
  });

  it('binds the cluster id into the proof, not only the clear-text check', () => {
    // Same secret, same nonces, different cluster id: different proof.
    const n = Buffer.alloc(NONCE_BYTES, 3);
    const p1 = computeProof(SECRET, { clusterId: 'c1', role: 'dialer', ownId: 'n1', peerNonce: n, ownNonce: n });
    const p2 = computeProof(SECRET, { clusterId: 'c2', role: 'dialer', ownId: 'n1', peerNonce: n, ownNonce: n });
    expect(p1.equals(p2)).toBe(false);
  });

  it('refuses an unknown member, a connection meant for someone else, and a dialer claiming our id', () => {
    expect(() => listener({}, ['n3']).receive(dialer().hello())).toThrow(/n1 is not a known member/);
    expect(() => listener().receive(dialer({}, 'n9').hello())).toThrow(/meant for n9 reached n2/);
    expect(() => listener({}, ['n2']).receive(dialer({ selfId: 'n2' }).hello())).toThrow(/not a known member/);
  });

  it('dialer refuses a listener that is not the member it dialed', () => {
    const d = dialer();
    d.hello();
    const impostor = packr.pack({ t: 'challenge', cluster: CLUSTER, from: 'n3', nonce: Buffer.alloc(NONCE_BYTES) });
    expect(() => d.receive(impostor)).toThrow(/dialed n2 but the listener says it is n3/);
  });

  it('rejects frames out of order or malformed with a PeerProtocolError', () => {
    const l = listener();
    expect(() => l.receive(packr.pack({ t: 'proof', proof: Buffer.alloc(32) }))).toThrow(PeerProtocolError);
    const l2 = listener();
    expect(() => l2.receive(packr.pack({ t: 'msgs', m: [] }))).toThrow(PeerProtocolError);
    const l3 = listener();
    const badNonce = packr.pack({ t: 'hello', v: PEER_PROTOCOL_VERSION, cluster: CLUSTER, from: 'n1', to: 'n2', nonce: Buffer.alloc(8) });
    expect(() => l3.receive(badNonce)).toThrow(/nonce must be 32 bytes/);
    const l4 = listener();
    const badVersion = packr.pack({ t: 'hello', v: PEER_PROTOCOL_VERSION - 1, cluster: CLUSTER, from: 'n1', to: 'n2', nonce: Buffer.alloc(32) });
    expect(() => l4.receive(badVersion)).toThrow(/unsupported peer protocol version/);
    // After a failure a handshake stays failed, even for a frame that would have been fine.
    const d = dialer();
    const hello = d.hello();
    const challenge = listener().receive(hello);
    expect(() => l.receive(hello)).toThrow(/unexpected handshake frame in state failed/);
    expect(d.receive(challenge)).not.toBeNull();
  });

  it('refuses an empty secret or cluster id', () => {
    expect(() => dialer({ secret: '' })).toThrow(PeerAuthError);
    expect(() => listener({ clusterId: '' })).toThrow(PeerAuthError);
  });
});

describe('deriveClusterId', () => {
  const members = ['n1=10.0.0.1:2919/1919', 'n2=10.0.0.2:2919/1919', 'n3=10.0.0.3:2919/1919'];

  it('ignores the order of the members list', () => {
    expect(deriveClusterId(members)).toBe(deriveClusterId([...members].reverse()));
  });

  it('differs for a different members list', () => {
    const other = ['n1=10.0.1.1:2919/1919', 'n2=10.0.0.2:2919/1919', 'n3=10.0.0.3:2919/1919'];
    expect(deriveClusterId(members)).not.toBe(deriveClusterId(other));
    expect(deriveClusterId(['ab', 'c'])).not.toBe(deriveClusterId(['a', 'bc']));
  });

  it('refuses an empty list', () => {
    expect(() => deriveClusterId([])).toThrow(PeerAuthError);
  });
});
