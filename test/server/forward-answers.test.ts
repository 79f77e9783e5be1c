// What the peer service trusts of an answer or a forward (docs/scale-out.md, "Writes:
// forwarding to the leader"): a forward is answered only by the entry carrying its own
// request id, and the leader's desk takes a forward only under the sender's own id.
import { describe, expect, it } from 'vitest';
import { encodeForwardBody } from '../../src/families/commands.js';
import type { Command } from '../../src/families/core-commands.js';
import { decodeServiceMessage } from '../../src/server/peer-service/codec.js';
import { CONTENDING_MS, Desk } from '../../src/server/peer-service/desk.js';
import { Forwarder } from '../../src/server/peer-service/forwarder.js';
import type { ApplyOutcome } from '../../src/statemachine/types.js';

const push: Command = { op: 'push', session: 's1', path: '/jobs', data: { n: 1 }, persistent: true, watch: false };

function outcome(index: number, r: string | undefined): ApplyOutcome {
  return { index, result: { ok: true, op: 'push', item: { index, owner: 's1', data: null } }, events: [], ...(r === undefined ? {} : { r }) } as unknown as ApplyOutcome;
}

describe('a forward is answered by its own entry only', () => {
  it('a fwdOk whose index holds another request id (an answer meant for an earlier process) settles nothing', async () => {
    const sent: Uint8Array[] = [];
    let awaited: ((o: ApplyOutcome) => void) | null = null;
    let expire: (() => void) | null = null;
    const f = new Forwarder({
      selfId: 'n2',
      processTag: 'tag',
      send: (_to, payload) => (sent.push(payload), true),
      maxPayloadBytes: 1 << 20,
      peerVersion: () => 9,
      minLeaderVersion: 9,
      awaitEntry: () => new Promise<ApplyOutcome>((resolve) => (awaited = resolve)),
      currentLeader: () => 'n1',
      deadlineMs: 5000,
      after: (_ms, run) => ((expire = run), () => undefined),
    });
    let settled: string | null = null;
    f.forward('n1', encodeForwardBody(push).bytes).then(
      (o) => (settled = `ok ${o.r}`),
      (e: Error) => (settled = `err ${e.message}`),
    );
    const fwd = decodeServiceMessage(sent[0]!);
    if (fwd.k !== 'fwd') throw new Error('expected a fwd');
    f.onAnswer('n1', { k: 'fwdOk', id: fwd.id, index: 40, term: 3 });
    awaited!(outcome(40, 'n2/other-process/1'));
    await new Promise((r) => setImmediate(r));
    expect(settled).toBeNull();
    // Its own entry answers it.
    f.onApplied(outcome(41, fwd.rid));
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(`ok ${fwd.rid}`);
    expect(expire).not.toBeNull();
  });
});

describe("the leader's desk", () => {
  it("refuses a forward whose request id is another member's, proposing nothing", () => {
    const replies: Uint8Array[] = [];
    let proposed = 0;
    const desk = new Desk({
      send: (_to, payload) => (replies.push(payload), true),
      propose: () => {
        proposed++;
        return { place: { index: 1, term: 1 }, result: new Promise<ApplyOutcome>(() => undefined) };
      },
      maxInFlight: 10,
    });
    desk.onForward('n3', { k: 'fwd', id: 5, rid: 'n2/tag/1', body: encodeForwardBody(push).bytes });
    expect(proposed).toBe(0);
    expect(decodeServiceMessage(replies[0]!)).toMatchObject({ k: 'fwdErr', id: 5, code: 'BAD_REQUEST', notProposed: true });
    desk.onForward('n3', { k: 'fwd', id: 6, rid: 'n3/tag/1', body: encodeForwardBody(push).bytes });
    expect(proposed).toBe(1);
    expect(decodeServiceMessage(replies[1]!)).toMatchObject({ k: 'fwdOk', id: 6, index: 1, term: 1 });
  });
});

describe("the desk's share of forwards in flight", () => {
  /** A desk of `max` whose proposals apply when the test says; `codes` lists each forward's answer kind. */
  function deskOf(max: number) {
    const replies: Array<{ readonly to: string; readonly k: string; readonly id: number }> = [];
    const applied: Array<() => void> = [];
    let now = 0;
    const desk = new Desk({
      send: (to, payload) => {
        const m = decodeServiceMessage(payload);
        replies.push({ to, k: m.k, id: m.id });
        return true;
      },
      propose: () => {
        let apply!: () => void;
        const result = new Promise<ApplyOutcome>((resolve) => (apply = () => resolve(outcome(1, undefined))));
        applied.push(apply);
        return { place: { index: applied.length, term: 1 }, result };
      },
      maxInFlight: max,
      now: () => now,
    });
    let id = 0;
    const forward = (from: string): string => {
      id++;
      desk.onForward(from, { k: 'fwd', id, rid: `${from}/t/${id}`, body: encodeForwardBody(push).bytes });
      return replies.find((r) => r.id === id)!.k;
    };
    return { desk, applied, forward, advance: (ms: number) => (now += ms) };
  }
  const settle = () => new Promise((r) => setImmediate(r));

  it('one member flooding it cannot keep another out: a refused member gets the next free places', async () => {
    const { desk, applied, forward } = deskOf(4);
    // Alone, n2 may use it all.
    expect(['n2', 'n2', 'n2', 'n2'].map(forward)).toEqual(['fwdOk', 'fwdOk', 'fwdOk', 'fwdOk']);
    expect(forward('n3')).toBe('fwdErr');
    // Two of n2's apply: n2 keeps sending, but n3 wants its share now, and gets the places.
    applied[0]!();
    applied[1]!();
    await settle();
    expect(forward('n2')).toBe('fwdErr');
    expect(forward('n3')).toBe('fwdOk');
    expect(forward('n2')).toBe('fwdErr');
    expect(forward('n3')).toBe('fwdOk');
    expect(desk.heldBy('n2')).toBe(2);
    expect(desk.heldBy('n3')).toBe(2);
    // Never more than the bound in all.
    expect(desk.forwardsInFlight).toBe(4);
    expect(forward('n3')).toBe('fwdErr');
  });

  it("a member whose client retries every 1.5 s (the client library's backoff) still gets its share from a flooder", async () => {
    const { applied, forward, advance } = deskOf(4);
    expect(['n2', 'n2', 'n2', 'n2', 'n3'].map(forward)).toEqual(['fwdOk', 'fwdOk', 'fwdOk', 'fwdOk', 'fwdErr']);
    for (let round = 0; round < 3; round++) {
      advance(1500);
      applied.shift()!();
      applied.shift()!();
      await settle();
      // n2 refills at once; n3's retry comes 1.5 s after its refusal and still counts as wanting its share.
      forward('n2');
      forward('n2');
      if (forward('n3') === 'fwdOk') return;
    }
    throw new Error('n3 was refused on every retry');
  });

  it('a member that stopped asking gives its share back', async () => {
    const { desk, applied, forward, advance } = deskOf(4);
    expect(['n2', 'n2', 'n2', 'n2', 'n3'].map(forward)).toEqual(['fwdOk', 'fwdOk', 'fwdOk', 'fwdOk', 'fwdErr']);
    for (const apply of applied) apply();
    await settle();
    expect(['n2', 'n2', 'n2'].map(forward)).toEqual(['fwdOk', 'fwdOk', 'fwdErr']);
    // n3 has not asked again for a while: n2 is alone again, and may fill the desk.
    advance(CONTENDING_MS + 1);
    expect(['n2', 'n2'].map(forward)).toEqual(['fwdOk', 'fwdOk']);
    expect(desk.heldBy('n2')).toBe(4);
  });
});

describe('a refused forward', () => {
  it("goes once more to the refuser's hint when this member still takes the refuser for leader", () => {
    const sent: string[] = [];
    const f = new Forwarder({
      selfId: 'n4',
      processTag: 'tag',
      send: (to) => (sent.push(to), true),
      maxPayloadBytes: 1 << 20,
      peerVersion: () => 9,
      minLeaderVersion: 9,
      awaitEntry: () => new Promise<ApplyOutcome>(() => undefined),
      currentLeader: () => 'n2',
      deadlineMs: 5000,
      after: () => () => undefined,
    });
    void f.forward('n2', encodeForwardBody(push).bytes).catch(() => undefined);
    f.onAnswer('n2', { k: 'fwdErr', id: (f as unknown as { nextId: number }).nextId - 1, code: 'NOT_LEADER', message: 'not me', notProposed: true, leader: 'n3' });
    expect(sent).toEqual(['n2', 'n3']);
    f.close();
  });
});
