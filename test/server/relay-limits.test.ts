// A relayed request, a relayed answer or a forward larger than the peer transport carries
// (its maxFrameBytes, 4 MiB by default) is answered TOO_LARGE, never thrown out of the
// peer service: the transport's sendService throws for such a payload (outbound-link.ts).
import { describe, expect, it } from 'vitest';
import { encodeForwardBody } from '../../src/families/commands.js';
import type { Command } from '../../src/families/core-commands.js';
import type { FamilyRequest, FamilyResult } from '../../src/protocol/index.js';
import { DEFAULT_LIMITS } from '../../src/protocol/index.js';
import { maxServicePayloadBytes } from '../../src/raft/transport/codec.js';
import { packFrame } from '../../src/raft/transport/codec.js';
import { decodeServiceMessage, encodeServiceMessage, type ServiceMessage } from '../../src/server/peer-service/codec.js';
import { Desk } from '../../src/server/peer-service/desk.js';
import { Forwarder } from '../../src/server/peer-service/forwarder.js';
import { RelayClient, RelayDesk, type RelayableOp } from '../../src/server/peer-service/relay.js';

const LIMIT = maxServicePayloadBytes(64 * 1024);
const caller = { session: 's1', principal: null, remote: '10.0.0.2:1', frameBytes: 10 } as const;

/** Like OutboundLink.enqueueService: a payload too large for a frame throws. */
function throwingSend(sent: Uint8Array[]) {
  return (_to: string, payload: Uint8Array): boolean => {
    if (payload.byteLength > LIMIT) throw new RangeError(`a ${payload.byteLength}-byte service payload cannot fit`);
    sent.push(payload);
    return true;
  };
}

function relayClient(send: (to: string, payload: Uint8Array) => boolean) {
  return new RelayClient({ send, maxPayloadBytes: LIMIT, currentLeader: () => 'n1', waitApplied: () => Promise.resolve(), maxInFlight: 10, deadlineMs: 1000, after: () => () => undefined });
}

const echoOp: RelayableOp = { runsOn: 'leader', build: (fields, id) => ({ ...fields, id }) as unknown as FamilyRequest };

function relayDesk(run: () => Promise<FamilyResult>, send: (to: string, payload: Uint8Array) => boolean, unanswered: unknown[] = []) {
  return new RelayDesk({
    send,
    maxPayloadBytes: LIMIT,
    leading: () => true,
    leaderHint: () => 'n1',
    appliedIndex: () => 7,
    ops: new Map([['x.get', echoOp]]),
    limits: DEFAULT_LIMITS,
    sessionLive: () => true,
    run,
    maxPerMember: 4,
    onUnanswerable: (_to, kind, err) => unanswered.push([kind, err]),
  });
}

const opMessage = (id: number) => ({ k: 'op', id, session: 's1', remote: 'r', frameBytes: 1, req: packFrame({ op: 'x.get' }) }) as const;
const flush = () => new Promise((r) => setImmediate(r));

describe('payloads larger than the transport carries', () => {
  it('member side: a request over the limit is TOO_LARGE and never registered; a send that throws is not-sent', async () => {
    const sent: Uint8Array[] = [];
    const relay = relayClient(throwingSend(sent));
    await expect(relay.request('n1', { id: 1, op: 'x.y', blob: new Uint8Array(LIMIT) }, caller)).rejects.toMatchObject({ code: 'TOO_LARGE' });
    expect(relay.inFlight).toBe(0);
    const throwing = relayClient(() => {
      throw new RangeError('cannot fit');
    });
    await expect(throwing.request('n1', { id: 2, op: 'x.y' }, caller)).rejects.toMatchObject({ code: 'UNAVAILABLE', hints: { reason: 'not-proposed' } });
    expect(throwing.inFlight).toBe(0);
    expect(sent).toHaveLength(0);
  });

  it('leader side: an oversize result is answered opErr TOO_LARGE (it ran), and a send that throws is no unhandled rejection', async () => {
    const sent: Uint8Array[] = [];
    const desk = relayDesk(() => Promise.resolve({ blob: new Uint8Array(LIMIT) }), throwingSend(sent));
    desk.onOp('n2', opMessage(5));
    await flush();
    expect(sent).toHaveLength(1);
    expect(decodeServiceMessage(sent[0]!)).toMatchObject({ k: 'opErr', id: 5, code: 'TOO_LARGE', notRun: false });
    expect(desk.runningFor('n2')).toBe(0);

    const unanswered: unknown[] = [];
    const rejections: unknown[] = [];
    const onRejection = (err: unknown): void => void rejections.push(err);
    process.on('unhandledRejection', onRejection);
    try {
      const failing = relayDesk(
        () => Promise.resolve({ value: 1 }),
        () => {
          throw new RangeError('cannot fit');
        },
        unanswered,
      );
      failing.onOp('n2', opMessage(6));
      await flush();
      await flush();
    } finally {
      process.off('unhandledRejection', onRejection);
    }
    expect(rejections).toEqual([]);
    expect(unanswered).toEqual([['opOk', expect.any(RangeError)]]);
  });

  it('forwards: a body over the limit is TOO_LARGE and never registered; the desk survives a send that throws', async () => {
    const sent: Uint8Array[] = [];
    const f = new Forwarder({
      selfId: 'n2',
      processTag: 'tag',
      send: throwingSend(sent),
      maxPayloadBytes: LIMIT,
      peerVersion: () => 9,
      minLeaderVersion: 9,
      awaitEntry: () => new Promise(() => undefined),
      currentLeader: () => 'n1',
      deadlineMs: 5000,
      after: () => () => undefined,
    });
    const big: Command = { op: 'push', session: 's1', path: '/jobs', data: 'x'.repeat(LIMIT), persistent: true, watch: false };
    await expect(f.forward('n1', encodeForwardBody(big).bytes)).rejects.toMatchObject({ code: 'TOO_LARGE' });
    expect(f.pending).toBe(0);
    expect(sent).toHaveLength(0);

    const unanswered: unknown[] = [];
    const desk = new Desk({
      send: () => {
        throw new RangeError('cannot fit');
      },
      propose: () => {
        throw new Error('not proposed');
      },
      maxInFlight: 4,
      onUnanswerable: (_to, kind, err) => unanswered.push([kind, err]),
    });
    const fwd: ServiceMessage = { k: 'fwd', id: 1, rid: 'n2/t/1', body: new Uint8Array([1]) };
    expect(() => desk.onForward('n2', fwd)).not.toThrow();
    expect(unanswered).toEqual([['fwdErr', expect.any(RangeError)]]);
    expect(encodeServiceMessage(fwd).byteLength).toBeLessThan(LIMIT);
  });
});

describe("a relayed op's deadline", () => {
  it('is 5 s for an op that does not wait, and its wait plus 5 s for one that does', () => {
    const deadlines: number[] = [];
    const relay = new RelayClient({ send: () => true, maxPayloadBytes: LIMIT, currentLeader: () => 'n1', waitApplied: () => Promise.resolve(), maxInFlight: 10, deadlineMs: 5000, after: (ms) => (deadlines.push(ms), () => undefined) });
    void relay.request('n1', { id: 1, op: 'counter.add', name: 'c', delta: 1 }, caller).catch(() => undefined);
    void relay.request('n1', { id: 2, op: 'journal.claim', name: 'j', waitMs: 60_000 }, caller).catch(() => undefined);
    void relay.request('n1', { id: 3, op: 'journal.doneMany', name: 'j', holdMs: 2_000 }, caller).catch(() => undefined);
    void relay.request('n1', { id: 4, op: 'journal.claim', name: 'j' }, caller, { deadlineMs: 123 }).catch(() => undefined);
    expect(deadlines).toEqual([5000, 65_000, 7000, 123]);
    relay.close();
  });
});

describe('an answer waiting for this member to apply its index', () => {
  it('gives the wait up when the request settles at its deadline (nothing left waiting in the driver)', async () => {
    const timers: Array<() => void> = [];
    const signals: AbortSignal[] = [];
    const sent: Uint8Array[] = [];
    const relay = new RelayClient({
      send: (_to, p) => (sent.push(p), true),
      maxPayloadBytes: LIMIT,
      currentLeader: () => 'n1',
      waitApplied: (_index, cancel) => (signals.push(cancel), new Promise<void>(() => undefined)),
      maxInFlight: 10,
      deadlineMs: 5000,
      after: (_ms, run) => (timers.push(run), () => undefined),
    });
    const answer = relay.request('n1', { id: 1, op: 'x.y' }, caller);
    const m = decodeServiceMessage(sent[0]!);
    relay.onAnswer('n1', { k: 'opOk', id: m.k === 'op' ? m.id : -1, result: packFrame({ value: 1 }), index: 50 });
    expect(signals).toHaveLength(1);
    expect(signals[0]!.aborted).toBe(false);
    timers[0]!();
    await expect(answer).resolves.toEqual({ result: { value: 1 }, index: 50 });
    expect(signals[0]!.aborted).toBe(true);
  });
});
