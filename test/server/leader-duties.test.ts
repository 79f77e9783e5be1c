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
import type { ApplyOutcome } from '../../src/statemachine/types.js';

const CHECK_MS = 25;
let clock = 0;
let proposals: Command[] = [];
/** Leadership checks (the barrier's ReadIndex round) in flight, settled by the test; null: each passes at once. */
let checks: Array<{ resolve: () => void; reject: (err: Error) => void }> | null = null;
let term = 1;
let replicated = new Map<string, { timeoutMs: number; remote: string }>();

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  clock = 0;
  proposals = [];
  checks = null;
  term = 1;
  replicated = new Map([['S', { timeoutMs: 1000, remote: '127.0.0.1:1' }]]);
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

/** Lets the promise callbacks queued so far run (the leadership check's, the proposal's). */
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

/** The parts of a front end the duties touch: one replicated session S with a 1000 ms timeout. */
function frontEnd(): FrontEnd {
  return {
    isLeader: () => true,
    readTimeoutMs: 5000,
    node: {
      stateMachine: { stateOf: (family: { name: string }) => (family.name === 'sessions' ? { sessions: replicated } : { of: () => 0 }) },
      status: () => ({ id: 'n1', role: 'leader', term, leader: 'n1', commit: 0, lastIndex: 0, config: { voters: ['n1'], learners: [] } }),
      appliedIndex: 0,
      linearizableBarrier: () => (checks === null ? Promise.resolve() : new Promise<void>((resolve, reject) => checks!.push({ resolve, reject }))),
      // The duties propose as the leader (never forwarded: FamilyHost.leaderOnly).
      proposeAsLeader: (c: Command) => {
        proposals.push(c);
        return new Promise(() => undefined); // never commits here: the test only counts proposals
      },
    },
    expiry: new ExpiryQueue(() => clock, CHECK_MS),
    connections: new Map(),
    notifier: { close: () => undefined, detachAll: () => undefined, forgetSession: () => undefined, takeUnwrittenAcks: () => [] },
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

/** A front end whose duties run as leader from now on. */
function leading(): { fe: FrontEnd; duties: LeaderDuties } {
  const fe = frontEnd();
  const duties = new LeaderDuties(fe, sessionAndAckDuties(fe), { 'session-expiry': CHECK_MS, 'ack-flush': 60_000 });
  duties.setLeading(true);
  return { fe, duties };
}

describe('LeaderDuties across a lost and regained leadership', () => {
  it('gives every session its full timeout again when this member leads again', async () => {
    const { duties } = leading();
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
    await settle();
    expect(expiries()).toEqual([{ op: 'closeSession', session: 'S', reason: 'expired' }]);
    duties.stop();
  });
});

describe('an expiry waits for a leadership check', () => {
  it('a leader that cannot prove it leads (no quorum) proposes no expiry; once a check passes, it does', async () => {
    checks = [];
    const { duties } = leading();
    advance(1000);
    await settle();
    expect(checks).toHaveLength(1); // S is due: one check, and nothing proposed before it answers
    advance(500);
    await settle();
    expect(checks).toHaveLength(1); // reported once: no second check while the first is out
    expect(expiries()).toEqual([]);
    checks.shift()!.reject(new Error('no quorum: the read timed out'));
    await settle();
    expect(expiries()).toEqual([]);
    advance(CHECK_MS); // tried again at the next tick
    await settle();
    expect(checks).toHaveLength(1);
    checks.shift()!.resolve();
    await settle();
    expect(expiries()).toEqual([{ op: 'closeSession', session: 'S', reason: 'expired' }]);
    duties.stop();
  });

  it('nothing is proposed when, by the time the check passes, the session closed, its clock restarted or the term changed', async () => {
    checks = [];
    const { fe, duties } = leading();
    advance(1000);
    await settle();
    replicated.delete('S'); // closed (by its client's bye) while the check was out
    checks.shift()!.resolve();
    await settle();
    expect(expiries()).toEqual([]);

    advance(CHECK_MS); // the tick drops the closed session's clock
    replicated.set('S', { timeoutMs: 1000, remote: '127.0.0.1:1' });
    advance(CHECK_MS); // live again (a stand-in for a new session): the tick tracks it at its full timeout
    advance(1000);
    await settle();
    expect(checks).toHaveLength(1);
    fe.expiry.track('S', 1000); // its clock restarted (an attach, a new leadership) while the check was out
    checks.shift()!.resolve();
    await settle();
    expect(expiries()).toEqual([]);

    advance(1000);
    await settle();
    expect(checks).toHaveLength(1);
    term = 2; // deposed and elected again while the check was out: this term's clocks decide
    checks.shift()!.resolve();
    await settle();
    expect(expiries()).toEqual([]);
    duties.stop();
  });
});

describe('an attachSession applied on the leader', () => {
  /** The outcome of `sessions.attachSession {session, member}` applied at `index`, as the kernel gives it. */
  const attached = (index: number, session: string, member: string): ApplyOutcome =>
    ({ index, result: { ok: true, op: 'family', family: 'sessions', value: { session, member } }, events: [] }) as unknown as ApplyOutcome;

  it("restarts that session's clock at its full timeout, as an opened session's starts", async () => {
    const fe = frontEnd();
    const part = pluginPart(sessions, sessionsPlugin);
    part.bind(fe);
    const duties = new LeaderDuties(fe, part.duties, { 'session-expiry': CHECK_MS });
    duties.setLeading(true);
    advance(900);
    // S moves to n2 (a resume there): n2 counts its confirmations from now, so the leader must give S its whole timeout.
    part.onApplied!(attached(7, 'S', 'n2'));
    expect(fe.expiry.remainingMs('S')).toBe(1000);
    advance(975);
    await settle();
    expect(expiries()).toEqual([]);
    advance(50);
    await settle();
    expect(expiries()).toEqual([{ op: 'closeSession', session: 'S', reason: 'expired' }]);
    // An attach of a session that is not live starts no clock.
    part.onApplied!(attached(8, 'gone', 'n2'));
    expect(fe.expiry.has('gone')).toBe(false);
    duties.stop();
  });

  it('on a member that does not lead, restarts no clock (the leader runs the clocks)', () => {
    const fe = { ...frontEnd(), isLeader: () => false } as FrontEnd;
    const part = pluginPart(sessions, sessionsPlugin);
    part.bind(fe);
    fe.expiry.track('S', 1000);
    clock += 900;
    part.onApplied!(attached(7, 'S', 'n2'));
    expect(fe.expiry.remainingMs('S')).toBe(100);
  });
});
