// Store incarnations in the peer handshake (a member with a wiped data directory
// is refused by everyone who knew it), trust on first use, and a joining member
// that learns its cluster id from the first member that proves the secret.
import { afterEach, describe, expect, it } from 'vitest';
import {
  computeProof,
  DialerHandshake,
  IncarnationGuard,
  ListenerHandshake,
  PeerAuthError,
  PeerIncarnationError,
  type HandshakeOptions,
  type ListenerHandshakeOptions,
} from '../../src/raft/transport/auth.js';
import type { NodeId } from '../../src/raft/types.js';
import { CLUSTER, freePort, heartbeat, makeNode, SECRET, withDeadline, type TestNode } from '../transport/helpers.js';

function guard(initial: Record<string, string> = {}): { guard: IncarnationGuard; saved: Array<Record<string, string>> } {
  const saved: Array<Record<string, string>> = [];
  const g = new IncarnationGuard(new Map(Object.entries(initial)), async (known) => void saved.push(Object.fromEntries(known)), (err) => {
    throw err;
  });
  return { guard: g, saved };
}

function dialer(options: Partial<HandshakeOptions> = {}): DialerHandshake {
  return new DialerHandshake({ secret: SECRET, clusterId: CLUSTER, selfId: 'n1', ...options }, 'n2');
}

function listener(options: Partial<ListenerHandshakeOptions> = {}): ListenerHandshake {
  return new ListenerHandshake({ secret: SECRET, clusterId: CLUSTER, selfId: 'n2', ...options }, (id) => id === 'n1');
}

/** Runs the exchange; returns the error the first side to refuse threw, or null. */
function exchange(d: DialerHandshake, l: ListenerHandshake): unknown {
  try {
    const proof = d.receive(l.receive(d.hello()))!;
    d.receive(l.receive(proof));
    return null;
  } catch (err) {
    return err;
  }
}

describe('IncarnationGuard (trust on first use)', () => {
  it('remembers the first incarnation, accepts it again, refuses another, and forgets a removed member', async () => {
    const { guard: g, saved } = guard();
    g.check('n2', 'aaa');
    g.check('n2', 'aaa');
    expect(() => g.check('n2', 'bbb')).toThrow(PeerIncarnationError);
    expect(() => g.check('n2', 'bbb')).toThrow('member n2 came back with a new data directory; remove it and add it again');
    expect(() => g.check('n2', null)).toThrow(PeerIncarnationError);
    g.forget('n2');
    g.check('n2', 'bbb');
    await g.flushed();
    expect(saved).toEqual([{ n2: 'aaa' }, {}, { n2: 'bbb' }]);
  });

  it('learns no incarnation for a removed member while it is not a member (its old process, a wiped copy), so it can come back wiped', async () => {
    const members = new Set(['n2']);
    const saved: Array<Record<string, string>> = [];
    const g = new IncarnationGuard(new Map([['n2', 'old']]), async (known) => void saved.push(Object.fromEntries(known)), (err) => {
      throw err;
    }, (peer) => members.has(peer));
    members.delete('n2');
    g.forget('n2');
    g.check('n2', 'old'); // the removed process, still dialing before it is stopped: let through, not remembered
    g.check('n2', 'wiped'); // a wiped copy started before the removal: the same
    expect(g.incarnationOf('n2')).toBeUndefined();
    members.add('n2'); // added again, with a new data directory
    g.check('n2', 'new');
    expect(g.incarnationOf('n2')).toBe('new');
    expect(() => g.check('n2', 'old')).toThrow(PeerIncarnationError);
    // Removed and added again with the same data directory: once it is a member its incarnation is learned as before.
    members.delete('n2');
    g.forget('n2');
    members.add('n2');
    g.check('n2', 'new');
    expect(g.incarnationOf('n2')).toBe('new');
    await g.flushed();
    expect(saved).toEqual([{}, { n2: 'new' }, {}, { n2: 'new' }]);
  });

  it('starts from what was saved before a restart', () => {
    const { guard: g } = guard({ n3: 'old' });
    expect(() => g.check('n3', 'new')).toThrow(PeerIncarnationError);
    expect(g.incarnationOf('n3')).toBe('old');
  });
});

describe('incarnations in the handshake', () => {
  it('each side learns the other\'s incarnation once the other has proven the secret', () => {
    const seen: Array<[NodeId, string | null]> = [];
    const record = (peer: NodeId, inc: string | null): void => void seen.push([peer, inc]);
    const d = dialer({ incarnation: 'inc-n1', checkPeerIncarnation: record });
    const l = listener({ incarnation: 'inc-n2', checkPeerIncarnation: record });
    expect(exchange(d, l)).toBeNull();
    expect(seen).toEqual([['n1', 'inc-n1'], ['n2', 'inc-n2']]);
  });

  it('the listener refuses a dialer whose data directory was replaced, before proving anything itself', () => {
    const { guard: g } = guard({ n1: 'inc-before-wipe' });
    const d = dialer({ incarnation: 'inc-after-wipe' });
    const l = listener({ incarnation: 'inc-n2', checkPeerIncarnation: (p, i) => g.check(p, i) });
    const proof = d.receive(l.receive(d.hello()))!;
    expect(() => l.receive(proof)).toThrow(PeerIncarnationError);
    expect(l.peerId).toBeNull();
  });

  it('the dialer refuses a listener whose data directory was replaced', () => {
    const { guard: g } = guard({ n2: 'inc-before-wipe' });
    const d = dialer({ incarnation: 'inc-n1', checkPeerIncarnation: (p, i) => g.check(p, i) });
    const l = listener({ incarnation: 'inc-after-wipe' });
    expect(exchange(d, l)).toBeInstanceOf(PeerIncarnationError);
    expect(d.authenticated).toBe(false);
  });

  it('the incarnation is bound into the proof: one swapped on the wire fails authentication', () => {
    const d = dialer({ incarnation: 'real' });
    const l = listener({ incarnation: 'inc-n2' });
    const hello = d.hello();
    const forged = Buffer.from(hello.toString('latin1').replace('real', 'fake'), 'latin1');
    const proof = d.receive(l.receive(forged))!;
    expect(() => l.receive(proof)).toThrow(/failed to prove the cluster secret/);
  });

  it('peers that send no incarnation still authenticate exactly as before', () => {
    const a = new Uint8Array(32).fill(1);
    const b = new Uint8Array(32).fill(2);
    const base = { clusterId: CLUSTER, role: 'dialer' as const, ownId: 'n1', peerNonce: a, ownNonce: b };
    expect(computeProof(SECRET, base).equals(computeProof(SECRET, { ...base, ownIncarnation: 'x' }))).toBe(false);
    expect(exchange(dialer(), listener())).toBeNull();
  });

  it('a listener without a cluster id (joining) takes the one the dialer proves', () => {
    const l = listener({ clusterId: null });
    expect(exchange(dialer({ clusterId: 'the-real-cluster' }), l)).toBeNull();
    expect(l.clusterId).toBe('the-real-cluster');
    // The claim alone is not enough: a dialer without the secret is refused.
    const stranger = listener({ clusterId: null });
    expect(exchange(dialer({ clusterId: 'x', secret: 'wrong' }), stranger)).toBeInstanceOf(PeerAuthError);
    expect(stranger.clusterId).toBeNull();
  });
});

describe('a joining transport', () => {
  const nodes: TestNode[] = [];
  afterEach(async () => {
    await Promise.all(nodes.splice(0).map((n) => n.transport.close()));
  });

  it('dials nobody until a member introduces the cluster, then talks both ways', async () => {
    const ports = { n1: await freePort(), n4: await freePort() };
    const learned: string[] = [];
    const member = makeNode('n1', ports, { incarnation: 'inc-n1' });
    const joiner = makeNode('n4', ports, { clusterId: null, incarnation: 'inc-n4', onClusterIdLearned: (id) => learned.push(id) });
    nodes.push(member, joiner);
    await joiner.transport.start();
    expect(joiner.transport.clusterId).toBeNull();
    await joiner.logger.waitFor('peer.awaitingCluster');
    expect(joiner.transport.status().peers.n1?.connected).toBe(false);
    await member.transport.start();
    member.transport.send(heartbeat('n1', 'n4', 1));
    await withDeadline(joiner.sink.waitForCount(1), 'the member reaching the joiner');
    await joiner.logger.waitFor('peer.clusterLearned', { clusterId: CLUSTER, from: 'n1' });
    expect(learned).toEqual([CLUSTER]);
    joiner.transport.send(heartbeat('n4', 'n1', 1));
    const [back] = await withDeadline(member.sink.waitForCount(1), 'the joiner answering');
    expect(back?.from).toBe('n4');
  });

  it('a member refuses a peer that comes back with another incarnation, in both directions, and logs why', async () => {
    const ports = { n1: await freePort(), n2: await freePort() };
    const { guard: g } = guard({ n2: 'inc-before-wipe' });
    const member = makeNode('n1', ports, { incarnation: 'inc-n1', checkPeerIncarnation: (p, i) => g.check(p, i) });
    const wiped = makeNode('n2', ports, { incarnation: 'inc-after-wipe' });
    nodes.push(member, wiped);
    await Promise.all([member.transport.start(), wiped.transport.start()]);
    const inbound = await member.logger.waitFor('peer.incarnationMismatch', { direction: 'inbound' });
    const outbound = await member.logger.waitFor('peer.incarnationMismatch', { direction: 'outbound', peer: 'n2' });
    expect(inbound.level).toBe('error');
    for (const line of [inbound, outbound]) expect(String(line.obj.err)).toBe('member n2 came back with a new data directory; remove it and add it again');
    await wiped.logger.waitFor('peer.refused', { peer: 'n1' });
    expect(member.transport.status().inbound).toEqual([]);
    expect(member.transport.status().peers.n2?.connected).toBe(false);
  });
});

describe('command versions over real peer links', () => {
  const nodes: TestNode[] = [];
  afterEach(async () => {
    await Promise.all(nodes.splice(0).map((n) => n.transport.close()));
  });

  it('each member learns the version the other advertises, whichever side dialed', async () => {
    const ports = { n1: await freePort(), n2: await freePort() };
    const heard = { n1: new Map<NodeId, number>(), n2: new Map<NodeId, number>() };
    const bothHeard = new Promise<void>((resolve) => {
      const note = (self: 'n1' | 'n2') => (peer: NodeId, version: number) => {
        heard[self].set(peer, version);
        if (heard.n1.size > 0 && heard.n2.size > 0) resolve();
      };
      nodes.push(
        makeNode('n1', ports, { commandVersion: 3, notePeerCommandVersion: note('n1') }),
        makeNode('n2', ports, { commandVersion: 5, notePeerCommandVersion: note('n2') }),
      );
    });
    await Promise.all(nodes.map((n) => n.transport.start()));
    await withDeadline(bothHeard, 'both members hearing the other\u2019s command version');
    expect(heard.n1.get('n2')).toBe(5);
    expect(heard.n2.get('n1')).toBe(3);
  });
});
