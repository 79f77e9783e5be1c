// What a correct member encodes, the other decodes, and client traffic never drops a peer
// link (docs/scale-out.md "Peer messages"): a known kind with fields that do not check is
// answered (a request) or ignored (an answer); an HTTP caller (no session) can be relayed.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, type FamilyRequest, type FamilyResult } from '../../src/protocol/index.js';
import { packFrame } from '../../src/raft/transport/codec.js';
import { decodeServiceMessage } from '../../src/server/peer-service/codec.js';
import { RelayClient, RelayDesk, type RelayableOp, type RelayedCaller } from '../../src/server/peer-service/relay.js';
import { PeerService, type ForwardingNode } from '../../src/server/peer-service/service.js';

const flush = () => new Promise((r) => setImmediate(r));

function service(sent: Array<{ to: string; payload: Uint8Array }>) {
  const node = {
    id: 'n1',
    status: () => ({ role: 'leader', leader: 'n1' }),
    awaitEntry: () => new Promise(() => undefined),
    proposeForwarded: () => {
      throw new Error('unused');
    },
    setForwarder: () => undefined,
    appliedIndex: 4,
    waitApplied: () => Promise.resolve(),
  } as unknown as ForwardingNode;
  return new PeerService({
    node,
    channel: { sendService: (to, payload) => (sent.push({ to, payload }), true) },
    peerVersions: new Map(),
    minLeaderVersion: 9,
    logger: pino({ level: 'silent' }),
  });
}

describe('a known kind whose fields do not check keeps the link', () => {
  it('a request is refused under its id (BAD_REQUEST, not run); an answer is ignored; neither throws', () => {
    const sent: Array<{ to: string; payload: Uint8Array }> = [];
    const s = service(sent);
    expect(() => s.onService('n2', packFrame({ k: 'op', id: 8, session: 's', remote: '', frameBytes: -1, req: new Uint8Array(1) }))).not.toThrow();
    expect(() => s.onService('n2', packFrame({ k: 'fwd', id: 9, rid: '', body: new Uint8Array(1) }))).not.toThrow();
    expect(() => s.onService('n2', packFrame({ k: 'opErr', id: 10, code: 'CONFLICT', message: 'm', notRun: false, index: 1, reason: '' }))).not.toThrow();
    expect(sent.map((x) => [x.to, decodeServiceMessage(x.payload)])).toEqual([
      ['n2', expect.objectContaining({ k: 'opErr', id: 8, code: 'BAD_REQUEST', notRun: true })],
      ['n2', expect.objectContaining({ k: 'fwdErr', id: 9, code: 'BAD_REQUEST', notProposed: true })],
    ]);
    // An unknown kind still drops the link.
    expect(() => s.onService('n2', packFrame({ k: 'nope', id: 1 }))).toThrow();
    s.close();
  });
});

const http: RelayedCaller = { session: '', principal: 'alice', remote: '10.0.0.3:80', frameBytes: 5 };

describe('HTTP relays (no session)', () => {
  const op: RelayableOp = { runsOn: 'leader', build: (fields, id) => ({ ...fields, id }) as unknown as FamilyRequest };

  it('a member relays an HTTP caller, and the leader runs it without a session check', async () => {
    const sent: Uint8Array[] = [];
    const relay = new RelayClient({ send: (_to, p) => (sent.push(p), true), maxPayloadBytes: 1 << 20, currentLeader: () => 'n1', waitApplied: () => Promise.resolve(), maxInFlight: 4, deadlineMs: 1000, after: () => () => undefined });
    const answer = relay.request('n1', { id: 1, op: 'x.get' }, http);
    const relayed = decodeServiceMessage(sent[0]!);
    expect(relayed).toMatchObject({ k: 'op', session: '' });
    const runs: RelayedCaller[] = [];
    const replies: Uint8Array[] = [];
    const desk = new RelayDesk({
      send: (_to, p) => (replies.push(p), true),
      maxPayloadBytes: 1 << 20,
      leading: () => true,
      leaderHint: () => 'n1',
      appliedIndex: () => 2,
      ops: new Map([['x.get', op]]),
      limits: DEFAULT_LIMITS,
      sessionLive: () => false,
      run: (_op, _request, caller) => (runs.push(caller), Promise.resolve<FamilyResult>({ value: 1 })),
      maxPerMember: 4,
    });
    if (relayed.k !== 'op') throw new Error('expected an op');
    desk.onOp('n2', relayed);
    await flush();
    expect(runs).toEqual([http]);
    const reply = decodeServiceMessage(replies[0]!);
    if (reply.k !== 'opOk') throw new Error(`expected opOk, got ${reply.k}`);
    relay.onAnswer('n1', reply);
    await expect(answer).resolves.toEqual({ result: { value: 1 }, index: 2 });
  });

  it('a caller the leader could not decode is refused here, sending nothing', async () => {
    const sent: Uint8Array[] = [];
    const relay = new RelayClient({ send: (_to, p) => (sent.push(p), true), maxPayloadBytes: 1 << 20, currentLeader: () => 'n1', waitApplied: () => Promise.resolve(), maxInFlight: 4, deadlineMs: 1000, after: () => () => undefined });
    await expect(relay.request('n1', { id: 1, op: 'x.get' }, { ...http, principal: '' })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(relay.request('n1', { id: 1, op: 'x.get' }, { ...http, session: 's'.repeat(129) })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    void relay.request('n1', { id: 1, op: 'x.get' }, { ...http, remote: 'r'.repeat(400) }).catch(() => undefined);
    expect(sent).toHaveLength(1);
    expect(decodeServiceMessage(sent[0]!)).toMatchObject({ k: 'op' });
    expect(relay.inFlight).toBe(1);
    relay.close();
  });
});

describe('the relay desk and routes', () => {
  it("runs a family op routed 'anywhere' here (a member of another build may relay it); refuses an op it does not know, not run", async () => {
    const replies: Uint8Array[] = [];
    const runs: string[] = [];
    const anywhere: RelayableOp = { runsOn: 'anywhere', build: (fields, id) => ({ ...fields, id }) as unknown as FamilyRequest };
    const desk = new RelayDesk({
      send: (_to, p) => (replies.push(p), true),
      maxPayloadBytes: 1 << 20,
      leading: () => true,
      leaderHint: () => 'n1',
      appliedIndex: () => 2,
      ops: new Map([['counter.get', anywhere]]),
      limits: DEFAULT_LIMITS,
      sessionLive: () => true,
      run: (op) => (runs.push(op), Promise.resolve<FamilyResult>({ value: 3 })),
      maxPerMember: 4,
    });
    desk.onOp('n2', { k: 'op', id: 1, session: 's1', remote: '', frameBytes: 1, req: packFrame({ op: 'counter.get', name: 'c' }) });
    desk.onOp('n2', { k: 'op', id: 2, session: 's1', remote: '', frameBytes: 1, req: packFrame({ op: 'push', path: '/a' }) });
    await flush();
    expect(runs).toEqual(['counter.get']);
    expect(replies.map((r) => decodeServiceMessage(r))).toEqual([
      expect.objectContaining({ k: 'opErr', id: 2, code: 'BAD_REQUEST', notRun: true }),
      expect.objectContaining({ k: 'opOk', id: 1 }),
    ]);
  });
});

describe('small robustness rules of the relay', () => {
  const op: RelayableOp = { runsOn: 'leader', build: (fields, id) => ({ ...fields, id }) as unknown as FamilyRequest };
  function desk(run: () => Promise<FamilyResult>, sessionMember?: (s: string) => string | undefined) {
    const replies: Uint8Array[] = [];
    const d = new RelayDesk({
      send: (_to, p) => (replies.push(p), true),
      maxPayloadBytes: 1 << 20,
      leading: () => true,
      leaderHint: () => 'n1',
      appliedIndex: () => 2,
      ops: new Map([['x.get', op]]),
      limits: DEFAULT_LIMITS,
      sessionLive: () => true,
      run,
      maxPerMember: 1,
      ...(sessionMember === undefined ? {} : { sessionMember }),
    });
    return { d, replies: () => replies.map((r) => decodeServiceMessage(r)) };
  }
  const opOf = (id: number) => ({ k: 'op', id, session: 's1', remote: '', frameBytes: 1, req: packFrame({ op: 'x.get' }) }) as const;

  it('a runner that throws synchronously gives its slot back and is answered (it may have run)', async () => {
    const { d, replies } = desk(() => {
      throw new Error('boom');
    });
    expect(() => d.onOp('n2', opOf(1))).not.toThrow();
    await flush();
    expect(d.runningFor('n2')).toBe(0);
    expect(replies()).toEqual([expect.objectContaining({ k: 'opErr', id: 1, code: 'INTERNAL', notRun: false })]);
  });

  it('a relay from a member that does not hold the session is refused, not run (retryable); from its holder it runs', async () => {
    const runs: number[] = [];
    const { d, replies } = desk(
      () => (runs.push(1), Promise.resolve({ value: 1 })),
      () => 'n3',
    );
    d.onOp('n2', opOf(1));
    d.onOp('n3', opOf(2));
    await flush();
    expect(runs).toEqual([1]);
    expect(replies()).toEqual([
      expect.objectContaining({ k: 'opErr', id: 1, code: 'UNAVAILABLE', notRun: true, reason: 'not-proposed' }),
      expect.objectContaining({ k: 'opOk', id: 2 }),
    ]);
  });

  it("a refusal is re-relayed to the refuser's hint when this member still takes the refuser for leader", () => {
    const sent: Array<[string, Uint8Array]> = [];
    const relay = new RelayClient({ send: (to, p) => (sent.push([to, p]), true), maxPayloadBytes: 1 << 20, currentLeader: () => 'n2', waitApplied: () => Promise.resolve(), maxInFlight: 4, deadlineMs: 1000, after: () => () => undefined });
    void relay.request('n2', { id: 1, op: 'x.get' }, http).catch(() => undefined);
    const first = decodeServiceMessage(sent[0]![1]);
    relay.onAnswer('n2', { k: 'opErr', id: first.id, code: 'NOT_LEADER', message: 'not me', notRun: true, index: 1, leader: 'n3' });
    expect(sent.map(([to]) => to)).toEqual(['n2', 'n3']);
    relay.close();
  });
});
