// A session's connection closes where it is held, when that member applies the session's
// closeSession (docs/scale-out.md "Session liveness", step 8a): on every member alike, leader
// or not, so a follower holding sessions (step 8b) closes them as the leader does today.
// The sessions family's applied hook on a stand-in member that holds one connection.
import { describe, expect, it } from 'vitest';
import { sessions } from '../../src/families/sessions/index.js';
import { plugin as sessionsPlugin } from '../../src/families/sessions/server.js';
import { pluginPart } from '../../src/server/front/plugin-part.js';
import { CloseCode, type AttachedConnection, type FrontEnd } from '../../src/server/front/context.js';
import type { ApplyOutcome } from '../../src/statemachine/types.js';
import { SessionsState } from '../../src/families/sessions/state.js';

/** A member that does not lead, holding a connection for session S. */
function follower(): { fe: FrontEnd; state: SessionsState; closed: Array<[number, string]>; forgotten: string[] } {
  const closed: Array<[number, string]> = [];
  const forgotten: string[] = [];
  const connection: AttachedConnection = { close: (code, reason) => void closed.push([code, reason]) };
  const state = new SessionsState();
  for (const s of ['S', 'T']) state.add(s, { timeoutMs: 10_000, remote: '127.0.0.1:1', quota: {} } as never);
  const fe = {
    isLeader: () => false,
    connections: new Map([['S', connection]]),
    notifier: { forgetSession: (s: string) => void forgotten.push(s) },
    metrics: { sessionsOpened: { inc: () => undefined } },
    node: { stateMachine: { stateOf: () => state } },
  } as unknown as FrontEnd;
  return { fe, state, closed, forgotten };
}

/** The session's closeSession as this member applies it: its after-step removes it from the state, then the hook runs. */
const closeOf = (state: SessionsState, session: string, index: number): ApplyOutcome => {
  state.remove(session);
  return { index, ignored: false, result: { ok: true, op: 'closeSession' }, events: [] };
};
const afterTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('closeSession applied on a member that does not lead', () => {
  it("closes that member's connection of the session with 4001, after the turn that applied it", async () => {
    const { fe, state, closed, forgotten } = follower();
    const part = pluginPart(sessions, sessionsPlugin);
    part.bind(fe);
    part.onApplied!(closeOf(state, 'S', 7));
    // Not in the same turn: a bye's reply, answered once the entry applied, goes out first.
    expect(closed).toEqual([]);
    await afterTurn();
    expect(closed).toEqual([[CloseCode.sessionEnded, 'session ended']]);
    expect(forgotten).toEqual(['S']);
    expect(fe.connections.has('S')).toBe(false);
  });

  it('leaves the connections of other sessions alone', async () => {
    const { fe, state, closed } = follower();
    const part = pluginPart(sessions, sessionsPlugin);
    part.bind(fe);
    part.onApplied!(closeOf(state, 'T', 8));
    await afterTurn();
    expect(closed).toEqual([]);
    expect(fe.connections.has('S')).toBe(true);
  });
});
