// The leader's session clocks across a lost and regained leadership. A leader
// that steps down and later leads again must start every session's clock at the
// full timeout again (seed 003: a new leader gives each session its whole
// timeout), not resume the clocks it had: those kept no heartbeats while another
// member led, so sessions would expire early. Driven with fake timers and a
// hand-moved clock, so every step is exact.

import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FrontEnd } from '../../src/server/front/context.js';
import { ExpiryQueue } from '../../src/server/node/expiry.js';
import { LeaderDuties } from '../../src/server/front/leader-duties.js';
import { pluginPart } from '../../src/server/front/plugin-part.js';
import type { PluginDuty } from '../../src/kit/plugin.js';
import { sessions } from '../../src/families/sessions/index.js';
import { lag } from '../../src/families/lag/index.js';
import { plugin as sessionsPlugin } from '../../src/families/sessions/server.js';
import { plugin as lagPlugin } from '../../src/families/lag/server.js';
import type { Command } from '../../src/families/core-commands.js';

const CHECK_MS = 25;
let clock = 0;
let proposals: Command[] = [];

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  clock = 0;
  proposals = [];
});
afterEach(() => {
  vi.useRealTimers();
});

/** Moves the clock and the interval timers together, one expiry check at a time. */
function advance(ms: number): void {
  for (let moved = 0; moved < ms; moved += CHECK_MS) {
    clock += CHECK_MS;
    vi.advanceTimersByTime(CHECK_MS);
  }
}

/** The parts of a front end the duties touch: one replicated session S with a 1000 ms timeout. */
function frontEnd(): FrontEnd {
  const sessions = new Map([['S', { timeoutMs: 1000, remote: '127.0.0.1:1' }]]);
  return {
    node: {
      stateMachine: { stateOf: (family: { name: string }) => (family.name === 'sessions' ? { sessions } : { of: () => 0 }) },
      propose: (c: Command) => {
        proposals.push(c);
        return new Promise(() => undefined); // never commits here: the test only counts proposals
      },
    },
    expiry: new ExpiryQueue(() => clock, CHECK_MS),
    connections: new Map(),
    notifier: { close: () => undefined, forgetSession: () => undefined, takeUnwrittenAcks: () => [] },
    logger: pino({ level: 'silent' }),
    metrics: { expirations: { inc: () => undefined }, proposals: { inc: () => undefined }, proposalsFailed: { inc: () => undefined }, proposeLatency: { observe: () => undefined } },
  } as unknown as FrontEnd;
}

/** The session clocks and the ack writer, as the sessions and lag families' plugins declare them, their instances serving `fe`. */
function sessionAndAckDuties(fe: FrontEnd): PluginDuty[] {
  const parts = [pluginPart(sessions, sessionsPlugin), pluginPart(lag, lagPlugin)];
  for (const part of parts) part.bind(fe);
  return parts.flatMap((part) => part.duties);
}

const expiries = (): Command[] => proposals.filter((c) => c.op === 'closeSession');

describe('LeaderDuties across a lost and regained leadership', () => {
  it('gives every session its full timeout again when this member leads again', () => {
    const fe = frontEnd();
    const duties = new LeaderDuties(fe, sessionAndAckDuties(fe), { 'session-expiry': CHECK_MS, 'ack-flush': 60_000 });
    duties.setLeading(true);
    advance(900);
    expect(expiries()).toEqual([]);
    // Another member leads for a while; S's client heartbeats there, not here.
    duties.setLeading(false);
    advance(500);
    duties.setLeading(true);
    // 1400 ms after S was first tracked, 0 ms into the new term: S still has its whole 1000 ms.
    advance(975);
    expect(expiries()).toEqual([]);
    advance(50);
    expect(expiries()).toEqual([{ op: 'closeSession', session: 'S', reason: 'expired' }]);
    duties.stop();
  });
});
