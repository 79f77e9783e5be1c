// The member side of relayed ops (src/server/peer-service/relay.ts) on its own: its
// bounds (requests in flight, request size), a request never handed to a socket, and
// an answer whose index this member has not applied by the deadline.
import { describe, expect, it } from 'vitest';
import { packFrame } from '../../src/raft/transport/codec.js';
import { decodeServiceMessage, MAX_RELAYED_BYTES } from '../../src/server/peer-service/codec.js';
import { RelayClient } from '../../src/server/peer-service/relay.js';

const caller = { session: 's1', principal: null, remote: '10.0.0.2:1', frameBytes: 10 } as const;

function client(opts: { maxInFlight?: number; send?: boolean; applied?: Promise<void> } = {}) {
  const sent: Uint8Array[] = [];
  const timers: Array<() => void> = [];
  const relay = new RelayClient({
    send: (_to, payload) => (sent.push(payload), opts.send ?? true),
    maxPayloadBytes: 1 << 20,
    currentLeader: () => 'n1',
    waitApplied: () => opts.applied ?? Promise.resolve(),
    maxInFlight: opts.maxInFlight ?? 10,
    deadlineMs: 1000,
    after: (_ms, run) => (timers.push(run), () => undefined),
  });
  const idOf = (n: number): number => {
    const m = decodeServiceMessage(sent[n]!);
    if (m.k !== 'op') throw new Error('expected an op');
    return m.id;
  };
  return { relay, sent, timers, idOf };
}

describe('relayed ops, member side', () => {
  it('refuses past its bound of requests in flight, and a request too large to relay, without sending either', async () => {
    const { relay, sent } = client({ maxInFlight: 1 });
    void relay.request('n1', { id: 1, op: 'journal.claim', name: 'j' }, caller).catch(() => undefined);
    await expect(relay.request('n1', { id: 2, op: 'journal.claim', name: 'j' }, caller)).rejects.toMatchObject({ code: 'UNAVAILABLE', hints: { reason: 'not-proposed' } });
    const { relay: other, sent: none } = client();
    await expect(other.request('n1', { id: 3, op: 'x.y', blob: new Uint8Array(MAX_RELAYED_BYTES) }, caller)).rejects.toMatchObject({ code: 'TOO_LARGE' });
    expect(sent).toHaveLength(1);
    expect(none).toHaveLength(0);
  });

  it('a request the transport would not take, or handed back unsent, did not run (not-proposed)', async () => {
    const refused = client({ send: false });
    await expect(refused.relay.request('n1', { id: 1, op: 'x.y' }, caller)).rejects.toMatchObject({ code: 'UNAVAILABLE', hints: { reason: 'not-proposed' } });
    const { relay, sent } = client();
    const answer = relay.request('n1', { id: 1, op: 'x.y' }, caller);
    relay.onUnsent('n1', sent);
    await expect(answer).rejects.toMatchObject({ code: 'UNAVAILABLE', hints: { reason: 'not-proposed' } });
    expect(relay.inFlight).toBe(0);
  });

  it('an answer waits for its index to apply here, and is given as it is at the deadline if the index has not', async () => {
    const { relay, timers, idOf } = client({ applied: new Promise<void>(() => undefined) });
    let settled: unknown = null;
    let failed: unknown = null;
    void relay.request('n1', { id: 1, op: 'x.y' }, caller).then(
      (a) => (settled = a),
      (e: unknown) => (failed = e),
    );
    // An answer from another member than the one asked settles nothing.
    relay.onAnswer('n2', { k: 'opOk', id: idOf(0), result: packFrame({ value: 666 }), index: 1 });
    relay.onAnswer('n1', { k: 'opOk', id: idOf(0), result: packFrame({ value: 4 }), index: 99 });
    await new Promise((r) => setImmediate(r));
    expect(settled).toBeNull();
    timers[0]!();
    await new Promise((r) => setImmediate(r));
    expect(settled).toEqual({ result: { value: 4 }, index: 99 });
    // A second answer for the same id changes nothing.
    relay.onAnswer('n1', { k: 'opErr', id: idOf(0), code: 'INTERNAL', message: 'late', notRun: false, index: 1 });
    await new Promise((r) => setImmediate(r));
    expect(settled).toEqual({ result: { value: 4 }, index: 99 });
    expect(failed).toBeNull();
    expect(relay.inFlight).toBe(0);
  });

  it('an error from the handler keeps its code and hints; one from a member that did not lead, after the one re-relay, is NO_LEADER', async () => {
    const { relay, sent, idOf } = client();
    const failed = relay.request('n1', { id: 1, op: 'x.y' }, caller);
    relay.onAnswer('n1', { k: 'opErr', id: idOf(0), code: 'RATE_LIMITED', message: 'slow down', notRun: false, index: 3, retryAfterMs: 50 });
    await expect(failed).rejects.toMatchObject({ code: 'RATE_LIMITED', hints: { retryAfterMs: 50 } });
    const moved = relay.request('n2', { id: 2, op: 'x.y' }, caller);
    relay.onAnswer('n2', { k: 'opErr', id: idOf(1), code: 'NOT_LEADER', message: 'not me', notRun: true, index: 3, leader: 'n1' });
    expect(sent).toHaveLength(3); // sent again, to n1
    relay.onAnswer('n1', { k: 'opErr', id: idOf(2), code: 'NOT_LEADER', message: 'not me either', notRun: true, index: 3 });
    await expect(moved).rejects.toMatchObject({ code: 'NO_LEADER' });
    expect(sent).toHaveLength(3);
  });
});
