// The switch of step 8b (docs/scale-out.md): a member serves sessions itself only from
// command version 9 and with a peer service; below it the leader-only contract holds
// (followers refuse hello, and a leader that steps down sends every client on with
// 4003). At 9, a step-down keeps the connections whose sessions this member reports to
// the leader, and sends on only those it does not (opened before the switch). Also the
// liveness messages' codec: round trips, a strict decoder, and the cheap kind test that
// keeps a forward's body from being unpacked twice.
import { describe, expect, it } from 'vitest';
import { servesAnywhere, type FrontEnd } from '../../src/server/front/context.js';
import { LeaderDuties } from '../../src/server/front/leader-duties.js';
import { decodeLivenessMessage, encodeLivenessMessage, looksLikeLiveness } from '../../src/server/peer-service/liveness-codec.js';
import { encodeServiceMessage } from '../../src/server/peer-service/codec.js';
import { packFrame, PeerProtocolError } from '../../src/raft/transport/codec.js';

const HELD = { hold: () => undefined, release: () => undefined, touch: () => undefined, ack: () => undefined };

function frontEnd(active: number, held: readonly string[], withPeer = true) {
  const closed: Array<[string, number]> = [];
  const detached: string[] = [];
  let notifierClosed = false;
  const connections = new Map<string, { close(code: number): void }>();
  for (const session of ['held', 'old']) connections.set(session, { close: (code) => closed.push([session, code]) });
  const fe = {
    connections,
    notifier: {
      detach: (s: string) => detached.push(s),
      close: () => {
        notifierClosed = true;
      },
    },
    connectionSeam: { activeVersion: () => active, holdersSince: 9 },
    peer: withPeer ? { relay: { request: () => Promise.reject(new Error('unused')) }, liveness: { ...HELD, confirmedAt: (s: string) => (held.includes(s) ? 0 : undefined) } } : null,
  } as unknown as FrontEnd;
  return { fe, closed, detached, notifierClosed: () => notifierClosed };
}

describe('the switch', () => {
  it('is on from command version 9, on a member with a peer service', () => {
    expect(servesAnywhere(frontEnd(8, []).fe)).toBe(false);
    expect(servesAnywhere(frontEnd(9, []).fe)).toBe(true);
    expect(servesAnywhere(frontEnd(9, [], false).fe)).toBe(false);
  });

  it('below version 9 a leader that steps down closes every connection with 4003 and the notifier', () => {
    const t = frontEnd(8, ['held']);
    const duties = new LeaderDuties(t.fe, [], {});
    duties.setLeading(true);
    duties.setLeading(false);
    expect(t.closed.sort()).toEqual([
      ['held', 4003],
      ['old', 4003],
    ]);
    expect(t.fe.connections.size).toBe(0);
    expect(t.notifierClosed()).toBe(true);
  });

  it('at version 9 connections and feeds stay, but for a session this member does not report (4003)', () => {
    const t = frontEnd(9, ['held']);
    const duties = new LeaderDuties(t.fe, [], {});
    duties.setLeading(true);
    duties.setLeading(false);
    expect(t.closed).toEqual([['old', 4003]]);
    expect([...t.fe.connections.keys()]).toEqual(['held']);
    expect(t.detached).toEqual(['old']);
    expect(t.notifierClosed()).toBe(false);
  });
});

describe('the liveness messages', () => {
  it('round-trip, and are told from the other service messages without decoding them', () => {
    const live = { k: 'live', epoch: 2 ** 47 + 5, seq: 3, term: 7, full: true, touched: ['s1', 's2'], acks: [['s1', 40]], held: 2 } as const;
    const ack = { k: 'liveAck', epoch: 9, seq: 3, term: 7, ignored: ['s2'], busy: false } as const;
    for (const m of [live, ack]) {
      const bytes = encodeLivenessMessage(m);
      expect(looksLikeLiveness(bytes)).toBe(true);
      expect(decodeLivenessMessage(bytes)).toEqual(m);
    }
    expect(looksLikeLiveness(encodeServiceMessage({ k: 'fwd', id: 1, rid: 'n2:x:1', body: new Uint8Array([1, 2]) }))).toBe(false);
    expect(looksLikeLiveness(encodeServiceMessage({ k: 'fwdOk', id: 1, index: 4, term: 2 }))).toBe(false);
  });

  it('refuses a malformed one', () => {
    const bad = [
      { k: 'live', epoch: 1, seq: 1, term: 1, full: false, touched: [''], acks: [], held: 0 },
      { k: 'live', epoch: 1, seq: 1, term: 1, full: false, touched: [], acks: [['s', -1]], held: 0 },
      { k: 'live', epoch: 2 ** 48, seq: 1, term: 1, full: false, touched: [], acks: [], held: 0 },
      { k: 'liveAck', epoch: 1, seq: 1, term: 1, ignored: [], busy: false, extra: 1 },
      { k: 'liveAck', epoch: 1, seq: 1, term: 1, ignored: [] },
    ];
    for (const m of bad) {
      const bytes = packFrame(m);
      expect(looksLikeLiveness(bytes)).toBe(true);
      expect(() => decodeLivenessMessage(bytes)).toThrow(PeerProtocolError);
    }
  });
});
