// Forwarded writes between real in-process members (docs/scale-out.md, stage 1 step 4):
// three VeraNodes on real LevelDB stores, real peer transports on 127.0.0.1, and the
// peer service (forwarder and desk) on the transports' service channel. A member that
// does not lead forwards its proposals to the leader and answers with its own apply
// outcome; the lost-answer rules settle what the leader never answered.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { AnyCommand } from '../../src/families/core-commands.js';
import { RaftError } from '../../src/raft/driver.js';
import { packFrame } from '../../src/raft/transport/codec.js';
import { PeerTransport } from '../../src/raft/transport/peer-transport.js';
import type { NodeId } from '../../src/raft/types.js';
import { decodeServiceMessage, encodeServiceMessage } from '../../src/server/peer-service/codec.js';
import { PeerService, type RelayRunner } from '../../src/server/peer-service/service.js';
import { DEFAULT_COMPACTION, FORWARDING_SINCE, VeraNode } from '../../src/server/node/vera-node.js';
import { initialMembers } from '../../src/statemachine/index.js';
import type { ApplyOutcome } from '../../src/statemachine/types.js';
import { freePort } from '../support/vera-process.js';
import { withTimeout } from '../support/poll.js';
import { FAMILIES } from '../../src/families/registry.js';
import { DEFAULT_LIMITS, type FamilyRequest } from '../../src/protocol/index.js';
import { loadPlugins } from '../../src/server/front/plugin-part.js';
import type { RelayedCaller } from '../../src/server/peer-service/relay.js';

const IDS = ['n1', 'n2', 'n3'] as const;
const SECRET = 'forwarding-test-secret';
/** The forwarder's deadline where a test waits it out. */
const SHORT_DEADLINE_MS = 2000;

interface Member {
  readonly id: NodeId;
  readonly node: VeraNode;
  readonly transport: PeerTransport;
  readonly service: PeerService;
  /** Service payloads of each kind this member received. */
  readonly received: Map<string, number>;
  /** When set, a `fwd` arriving here is handed to this instead of the desk. */
  interceptForward: ((from: NodeId, payload: Uint8Array) => void) | null;
  /** When set, an `op` (a relayed op) arriving here is handed to this instead of the relay desk. */
  interceptOp: ((from: NodeId, payload: Uint8Array) => void) | null;
  alive: boolean;
  close(): Promise<void>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The relay's settings of a cluster: each member's runner of relayed ops, and the bounds. */
interface RelaySettings {
  readonly runner?: (node: VeraNode) => RelayRunner;
  readonly deadlineMs?: number;
  readonly maxPerMember?: number;
  /** Where the members' warnings go, one JSON line each (naming the member); absent: nowhere. */
  readonly logs?: string[];
}

async function cluster(commandVersion = FORWARDING_SINCE, deadlineMs = 10_000, relay: RelaySettings = {}): Promise<Member[]> {
  const ports = new Map<NodeId, { peer: number; client: number }>();
  for (const id of IDS) ports.set(id, { peer: await freePort(), client: await freePort() });
  const book = initialMembers(IDS.map((id) => ({ id, host: '127.0.0.1', peerPort: ports.get(id)!.peer, clientPort: ports.get(id)!.client })));
  const members: Member[] = [];
  for (const id of IDS) {
    const dir = await mkdtemp(join(tmpdir(), `vera-fwd-${id}-`));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const logs = relay.logs;
    const logger = logs === undefined ? pino({ level: 'silent' }) : pino({ level: 'warn', base: { member: id } }, { write: (line: string) => void logs.push(line) });
    const node = await VeraNode.open(
      { id, dataDir: dir, initialMembers: book, clusterId: 'c-fwd', timing: { tickMs: 50, electionTicks: 20, heartbeatTicks: 1 }, logger, eventLogCapacity: 100, compaction: DEFAULT_COMPACTION },
      { onApplied: () => undefined, onSoftState: () => undefined, onMembersChanged: () => undefined, onFatal: (err) => logger.error({ err }, 'fatal') },
    );
    const versions = new Map<NodeId, number>();
    let service!: PeerService;
    const member: Member = {
      id,
      node,
      transport: null as unknown as PeerTransport,
      service: null as unknown as PeerService,
      received: new Map(),
      interceptForward: null,
      interceptOp: null,
      alive: true,
      async close() {
        if (!member.alive) return;
        member.alive = false;
        service.close();
        await node.close(); // closes the transport too
      },
    };
    const transport = new PeerTransport({
      selfId: id,
      listen: { host: '127.0.0.1', port: ports.get(id)!.peer },
      peers: IDS.filter((p) => p !== id).map((p) => ({ id: p, host: '127.0.0.1', port: ports.get(p)!.peer })),
      secret: SECRET,
      clusterId: node.identity.clusterId,
      incarnation: node.identity.incarnation,
      commandVersion,
      notePeerCommandVersion: (peer, v) => versions.set(peer, v),
      onMessage: (m) => node.step(m),
      currentTerm: () => node.status().term,
      serviceMinCommandVersion: FORWARDING_SINCE,
      onService: (from, payload) => {
        let kind: string;
        try {
          kind = decodeServiceMessage(payload).k;
        } catch {
          kind = 'malformed'; // the service's to judge
        }
        member.received.set(kind, (member.received.get(kind) ?? 0) + 1);
        if (kind === 'fwd' && member.interceptForward !== null) return member.interceptForward(from, payload);
        if (kind === 'op' && member.interceptOp !== null) return member.interceptOp(from, payload);
        service.onService(from, payload);
      },
      onServiceUnsent: (to, payloads) => service.onUnsent(to, payloads),
      logger,
      reconnect: { initialDelayMs: 10, maxDelayMs: 100 },
    });
    service = new PeerService({
      node,
      channel: transport,
      peerVersions: versions,
      minLeaderVersion: FORWARDING_SINCE,
      logger,
      deadlineMs,
      ...(relay.runner === undefined ? {} : { relayRunner: relay.runner(node) }),
      ...(relay.deadlineMs === undefined ? {} : { relayDeadlineMs: relay.deadlineMs }),
      ...(relay.maxPerMember === undefined ? {} : { maxRelaysPerMember: relay.maxPerMember }),
    });
    Object.assign(member, { transport, service });
    await transport.start();
    node.attachTransport(transport);
    cleanups.push(() => member.close());
    members.push(member);
  }
  for (const m of members) m.node.start();
  return members;
}

/** Resolves once `check()` holds, looking again every 20 ms. */
async function until(check: () => boolean, what: string): Promise<void> {
  await withTimeout(
    (async () => {
      while (!check()) await new Promise((r) => setTimeout(r, 20));
    })(),
    20_000,
    what,
  );
}

/** The leader, once the live members agree on one and every follower has a service link to it. */
async function leaderOf(members: Member[], serviceLinks = true): Promise<{ leader: Member; followers: Member[] }> {
  let leader: Member | undefined;
  await until(() => {
    const live = members.filter((m) => m.alive);
    leader = live.find((m) => m.node.status().role === 'leader');
    return leader !== undefined && live.every((m) => m.node.status().leader === leader!.id && (!serviceLinks || m === leader || m.transport.serviceReady(leader!.id)));
  }, 'a leader every live member follows');
  return { leader: leader!, followers: members.filter((m) => m.alive && m !== leader) };
}

const add = (name: string, delta: number): AnyCommand => ({ family: 'counter', op: 'add', name, delta }) as unknown as AnyCommand;
const counterValue = (o: ApplyOutcome): unknown => (o.result.ok && o.result.op === 'family' ? (o.result.value as { value: number }).value : o.result);

describe('forwarded writes between in-process members', () => {
  it("a follower's proposal is applied once, and answered with the follower's own outcome of it", async () => {
    const members = await cluster();
    const { leader, followers } = await leaderOf(members);
    const follower = followers[0]!;
    const outcome = await follower.node.propose(add('c', 1));
    expect(counterValue(outcome)).toBe(1);
    expect(outcome.r).toMatch(new RegExp(`^${follower.id}/`));
    // Answered from the follower's apply: it has applied the entry.
    expect(follower.node.appliedIndex).toBeGreaterThanOrEqual(outcome.index);
    expect(leader.received.get('fwd') ?? 0).toBe(1);
    // Exactly once: the leader's next add sees it.
    expect(counterValue(await leader.node.propose(add('c', 10)))).toBe(11);
    // And the other follower, through the same path, sees both.
    expect(counterValue(await followers[1]!.node.propose(add('c', 100)))).toBe(111);
  });

  it("a proposal as the leader (a duty's) on a follower is refused NOT_LEADER and never forwarded", async () => {
    const members = await cluster();
    const { leader, followers } = await leaderOf(members);
    const follower = followers[0]!;
    const err = await follower.node.proposeAsLeader(add('duty', 1)).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'RaftError', code: 'NOT_LEADER', leader: leader.id });
    expect(leader.received.get('fwd') ?? 0).toBe(0);
    // Nothing was proposed: the counter starts from zero.
    expect(counterValue(await leader.node.proposeAsLeader(add('duty', 5)))).toBe(5);
  });

  it('pipelined forwards from one member are applied in the order they were made', async () => {
    const members = await cluster();
    const { followers } = await leaderOf(members);
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => followers[0]!.node.propose(add('seq', 1))));
    expect(outcomes.map(counterValue)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const indexes = outcomes.map((o) => o.index);
    expect([...indexes].sort((a, b) => a - b)).toEqual(indexes);
  });

  it('a forward the leader received but never answered (it died) is UNAVAILABLE with the outcome unknown, and never applied', async () => {
    const members = await cluster(FORWARDING_SINCE, SHORT_DEADLINE_MS);
    const { leader, followers } = await leaderOf(members);
    const follower = followers[0]!;
    let killed: Promise<void> | null = null;
    leader.interceptForward = () => (killed ??= leader.close());
    const err = await follower.node.propose(add('lost', 1)).catch((e: unknown) => e);
    await killed;
    expect(err).toBeInstanceOf(RaftError);
    expect(err).toMatchObject({ code: 'UNAVAILABLE', notProposed: false });
    expect((err as Error).message).toMatch(/outcome is unknown/);
    // The survivors elect a leader; the command was never proposed, so the counter starts from zero.
    const { leader: next } = await leaderOf(members);
    expect(counterValue(await next.node.propose(add('lost', 5)))).toBe(5);
  });

  it('a forward placed at an index that does not apply by its deadline leaves no wait behind in the driver', async () => {
    const members = await cluster(FORWARDING_SINCE, SHORT_DEADLINE_MS);
    const { leader, followers } = await leaderOf(members);
    const follower = followers[0]!;
    // The leader answers with a place in the log far ahead, proposing nothing: that index does not apply in time.
    leader.interceptForward = (from, payload) => {
      const fwd = decodeServiceMessage(payload);
      if (fwd.k !== 'fwd') return;
      const { lastIndex, term } = leader.node.status();
      leader.transport.sendService(from, encodeServiceMessage({ k: 'fwdOk', id: fwd.id, index: lastIndex + 1000, term }));
    };
    const err = await follower.node.propose(add('far', 1)).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'UNAVAILABLE', notProposed: false });
    expect(follower.node.awaitedEntries).toBe(0);
  });

  it('a forward refused by a leader that stepped down is sent once more, to the new leader, and applied once', async () => {
    const members = await cluster();
    const { leader, followers } = await leaderOf(members);
    const [f, g] = followers as [Member, Member];
    let handed: Promise<void> | null = null;
    leader.interceptForward = (from, payload) => {
      leader.interceptForward = null;
      // Hold the forward until leadership has moved to g, then let the old leader's desk answer it.
      handed = (async () => {
        expect(leader.node.transferLeadership(g.id)).toBe(true);
        await until(() => g.node.status().role === 'leader' && f.node.status().leader === g.id && f.transport.serviceReady(g.id), `${g.id} leading`);
        leader.service.onService(from, payload);
      })();
    };
    const outcome = await f.node.propose(add('moved', 1));
    await handed;
    expect(counterValue(outcome)).toBe(1);
    expect(g.received.get('fwd')).toBe(1);
    expect(counterValue(await g.node.propose(add('moved', 10)))).toBe(11);
  });

  it('a forward still queued when the link to the leader drops is refused as not proposed, and never applied', async () => {
    const members = await cluster();
    const { leader, followers } = await leaderOf(members);
    const follower = followers[0]!;
    const answer = follower.node.propose(add('unsent', 1)).catch((e: unknown) => e);
    // Same tick: the forward is queued for the link, not yet handed to its socket.
    await follower.transport.removePeer(leader.id);
    const err = await answer;
    expect(err).toMatchObject({ name: 'RaftError', code: 'UNAVAILABLE', notProposed: true });
    expect(leader.received.get('fwd') ?? 0).toBe(0);
    expect(counterValue(await leader.node.propose(add('unsent', 5)))).toBe(5);
  });

  it("a forwarded command of the leader's duties is refused at the desk and never proposed; a client's next to it is applied", async () => {
    const members = await cluster();
    const { leader, followers } = await leaderOf(members);
    const follower = followers[0]!;
    const before = leader.node.status().lastIndex;
    const err = await follower.node.propose({ family: 'cluster', op: 'setCommandVersion', version: FORWARDING_SINCE } as unknown as AnyCommand).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'BAD_REQUEST' });
    expect((err as Error).message).toMatch(/cluster\.setCommandVersion is the leader's own to propose/);
    expect(leader.received.get('fwd')).toBe(1);
    expect(leader.node.status().lastIndex).toBe(before);
    expect(counterValue(await follower.node.propose(add('beside', 1)))).toBe(1);
  });

  it('a service payload of a kind the leader does not know drops the link it came on (bad fields of a known kind do not); the link comes back and forwards go on', async () => {
    const logs: string[] = [];
    const members = await cluster(FORWARDING_SINCE, 10_000, { logs });
    const { leader, followers } = await leaderOf(members);
    const follower = followers[0]!;
    expect(follower.transport.sendService(leader.id, packFrame({ k: 'fwd', id: 1 }))).toBe(true);
    expect(follower.transport.sendService(leader.id, packFrame({ k: 'nope', id: 2 }))).toBe(true);
    await until(() => logs.some((l) => l.includes('"peer.protocolError"')), "the leader dropping the follower's link");
    const watched = ['peer.protocolError', 'peer-service.badMessage', 'peer-service.badFields'];
    const dropped = logs.map((l) => JSON.parse(l) as { member: string; event: string; err?: string }).filter((l) => watched.includes(l.event));
    expect(dropped.map((l) => [l.member, l.event])).toEqual([
      [leader.id, 'peer-service.badFields'],
      [leader.id, 'peer-service.badMessage'],
      [leader.id, 'peer.protocolError'],
    ]);
    expect(dropped[0]!.err).toMatch(/fwd\.rid is missing/);
    expect(dropped[2]!.err).toMatch(/unknown service message kind/);
    expect(leader.received.get('malformed')).toBe(2);
    await leaderOf(members);
    expect(counterValue(await follower.node.propose(add('after', 1)))).toBe(1);
  });

  it('a leader that advertised an older command version gets no forward: the follower refuses as before', async () => {
    const members = await cluster(FORWARDING_SINCE - 1);
    // No service link ever comes up towards an old leader: wait for the election alone.
    const { leader, followers } = await leaderOf(members, false);
    expect(followers[0]!.transport.serviceReady(leader.id)).toBe(false);
    const err = await followers[0]!.node.propose(add('old', 1)).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'RaftError', code: 'NOT_LEADER', leader: leader.id });
    expect(leader.received.size).toBe(0);
  });
});

/** The counter family's ops as a member's plugins give them (builders and routes), for the relay desk. */
async function counterOps(): Promise<RelayRunner['ops']> {
  return (await loadPlugins(FAMILIES.filter((f) => f.name === 'counter'))).familyOps;
}

interface RelayedCall {
  readonly at: NodeId;
  readonly op: string;
  readonly request: FamilyRequest;
  readonly caller: RelayedCaller;
}

/** A runner that answers counter.add by proposing it on the member it runs on, as the op's handler would; counts its calls. */
function counterRunner(ops: RelayRunner['ops'], calls: RelayedCall[], hold?: Promise<void>): (node: VeraNode) => RelayRunner {
  return (node) => ({
    ops,
    limits: DEFAULT_LIMITS,
    sessionLive: (session) => session !== 'ended',
    run: async (op, request, caller) => {
      calls.push({ at: node.id, op, request, caller });
      await hold;
      const r = request as unknown as { name: string; delta: number };
      return { value: counterValue(await node.propose(add(r.name, r.delta))) };
    },
  });
}

const addRequest = (name: string, delta: number): FamilyRequest => ({ id: 7, op: 'counter.add', name, delta });
const caller: RelayedCaller = { session: 'sess-1', principal: 'alice', remote: '10.0.0.9:4000', frameBytes: 61 };

describe('relayed ops between in-process members', () => {
  it("a member's leader-only op runs at the leader as its caller, and is answered once the member applied what it wrote", async () => {
    const calls: RelayedCall[] = [];
    const members = await cluster(FORWARDING_SINCE, 10_000, { runner: counterRunner(await counterOps(), calls) });
    const { leader, followers } = await leaderOf(members);
    const follower = followers[0]!;
    const answer = await follower.service.relay.request(leader.id, addRequest('r', 3), caller);
    expect(answer.result).toEqual({ value: 3 });
    // Read-your-writes: the entry the op wrote at the leader is applied here already.
    expect(follower.node.appliedIndex).toBeGreaterThanOrEqual(answer.index);
    expect(counterValue(await follower.node.propose(add('r', 0)))).toBe(3);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ at: leader.id, op: 'counter.add', caller, request: { op: 'counter.add', name: 'r', delta: 3 } });
    expect(leader.received.get('op')).toBe(1);
    expect(follower.service.relay.inFlight).toBe(0);
    expect(leader.service.relayDesk.runningFor(follower.id)).toBe(0);
  });

  it('refuses before running: an op not routed to the leader, a request its builder refuses, an ended session, a member that does not lead', async () => {
    const calls: RelayedCall[] = [];
    const members = await cluster(FORWARDING_SINCE, 10_000, { runner: counterRunner(await counterOps(), calls) });
    const { leader, followers } = await leaderOf(members);
    const [f, g] = followers as [Member, Member];
    const refused = (p: Promise<unknown>): Promise<unknown> => p.then(() => 'answered', (e: unknown) => e);
    expect(await refused(f.service.relay.request(leader.id, { id: 1, op: 'push', path: '/a', data: 1 } as unknown as FamilyRequest, caller))).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringMatching(/not an op the leader runs/) });
    expect(await refused(f.service.relay.request(leader.id, { id: 1, op: 'counter.add', name: 'x', delta: 'one' } as unknown as FamilyRequest, caller))).toMatchObject({ code: 'BAD_REQUEST' });
    expect(await refused(f.service.relay.request(leader.id, addRequest('x', 1), { ...caller, session: 'ended' }))).toMatchObject({ code: 'SESSION_EXPIRED' });
    expect(calls).toEqual([]);
    // Sent to a member that does not lead: refused there before running, and relayed once more, to the leader.
    const answer = await f.service.relay.request(g.id, addRequest('x', 2), caller);
    expect(answer.result).toEqual({ value: 2 });
    expect(g.received.get('op')).toBe(1);
    expect(calls.map((c) => c.at)).toEqual([leader.id]);
  });

  it('past its bound of ops running for one member, the leader refuses the next as not run', async () => {
    const calls: RelayedCall[] = [];
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    const members = await cluster(FORWARDING_SINCE, 10_000, { runner: counterRunner(await counterOps(), calls, hold), maxPerMember: 1 });
    const { leader, followers } = await leaderOf(members);
    const [f, g] = followers as [Member, Member];
    const first = f.service.relay.request(leader.id, addRequest('b', 1), caller);
    await until(() => calls.length === 1, 'the first op running');
    const second = await f.service.relay.request(leader.id, addRequest('b', 1), caller).catch((e: unknown) => e);
    expect(second).toMatchObject({ code: 'UNAVAILABLE', hints: { reason: 'not-proposed' } });
    // Another member's share is its own.
    const other = g.service.relay.request(leader.id, addRequest('b', 10), caller);
    await until(() => calls.length === 2, "the other member's op running");
    release();
    expect((await first).result).toEqual({ value: 1 });
    expect((await other).result.value).toBeGreaterThan(1);
    expect(calls).toHaveLength(2);
  });

  it('an op the leader never answers is UNAVAILABLE with the outcome unknown at the deadline; a cancelled one is let go at once', async () => {
    const members = await cluster(FORWARDING_SINCE, 10_000, { runner: counterRunner(await counterOps(), []), deadlineMs: SHORT_DEADLINE_MS });
    const { leader, followers } = await leaderOf(members);
    const follower = followers[0]!;
    leader.interceptOp = () => undefined; // received, never answered
    const started = Date.now();
    const err = await follower.service.relay.request(leader.id, addRequest('d', 1), caller).catch((e: unknown) => e);
    expect(Date.now() - started).toBeGreaterThanOrEqual(SHORT_DEADLINE_MS - 50);
    expect(err).toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/outcome is unknown/) });
    expect((err as { hints: object }).hints).not.toHaveProperty('reason');
    const cancel = new AbortController();
    const cancelled = follower.service.relay.request(leader.id, addRequest('d', 1), caller, { signal: cancel.signal }).catch((e: unknown) => e);
    await until(() => (leader.received.get('op') ?? 0) === 2, 'the second op at the leader');
    expect(follower.service.relay.inFlight).toBe(1);
    cancel.abort();
    expect(await cancelled).toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/cancelled/) });
    expect(follower.service.relay.inFlight).toBe(0);
  });
});
