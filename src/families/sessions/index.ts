// The sessions family: opening and closing client sessions. Closing one asks
// every family what it holds for the session (endSession) and deletes it all in
// the same entry, so no member ever sees a session gone but its items left.
// From version 9 a session records the member holding its connection, and
// attachSession moves it to another (docs/scale-out.md, "Session liveness").
import { SessionsBucket, clientKey } from './keys.js';
import { encodeClientValue } from './codec.js';
import type { ApplyError } from '../../statemachine/types.js';
import { failure, type BatchOp, type Family, type Plan, type PlanContext, type States } from '../../statemachine/family.js';
import { CommandError } from '../../statemachine/family.js';
import { integerField, memberField, quotaField, sessionField } from '../fields.js';
import { clientAddress, SessionsState } from './state.js';

export const MAX_TIMEOUT_MS = 2 ** 31 - 1; // the largest delay a Node timer accepts
export const MAX_REMOTE_LENGTH = 256;

/**
 * Limits the leader was configured with when it proposed a command, carried in
 * the command so that every member judges them the same way in apply: checked
 * before proposing, two concurrent requests could both pass and together go over.
 * Entries written before these fields existed carry none and apply without limits.
 */
export interface SessionQuota {
  /** Sessions opened from one client address (the `remote` without its port). */
  readonly sessionsPerAddress: number;
}

export interface OpenSessionCommand {
  readonly op: 'openSession';
  readonly session: string;
  readonly timeoutMs: number;
  /** The client's address and port as the leader saw it (`host:port`); the host counts against sessionsPerAddress. */
  readonly remote: string;
  readonly quota?: SessionQuota;
  /** SHA-256 (hex) of the resume token the leader gave the creator (command version 6). */
  readonly resumeHash?: string;
  /** The user the creator authenticated as (command version 7); resuming needs the same user. */
  readonly principal?: string;
  /** The most sessions one principal may hold, when the leader limits them (command version 7). */
  readonly principalSessions?: number;
  /** The member holding the session's connection (command version 9). */
  readonly member?: string;
}

/** A live session's connection is now on `member` (a resume there): its liveness is taken from that member only. */
export interface AttachSessionCommand {
  readonly op: 'attachSession';
  readonly session: string;
  readonly member: string;
}

export interface CloseSessionCommand {
  readonly op: 'closeSession';
  readonly session: string;
  readonly reason: 'bye' | 'expired';
}

export type SessionsCommand = OpenSessionCommand | CloseSessionCommand | AttachSessionCommand;

function remoteField(value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_REMOTE_LENGTH) {
    throw new CommandError(`remote must be a string of at most ${MAX_REMOTE_LENGTH} characters`);
  }
  return value;
}

/** SESSION_EXPIRED unless `session` is live: what every op of a session checks first. */
export function sessionProblem(states: States, session: string): ApplyError | null {
  return states.of(sessions).has(session) ? null : failure('SESSION_EXPIRED', `session ${session} is unknown or has expired`);
}

function openSession(c: OpenSessionCommand, { states }: PlanContext): Plan | ApplyError {
  const state = states.of(sessions);
  if (state.has(c.session)) return failure('CONFLICT', `session ${c.session} already exists`);
  if (c.quota !== undefined) {
    const address = clientAddress(c.remote);
    const from = state.sessionsFrom(address);
    if (from >= c.quota.sessionsPerAddress) {
      return failure('QUOTA_EXCEEDED', `${address} already has ${from} sessions open, the most one address may hold (--sessions-per-address ${c.quota.sessionsPerAddress})`);
    }
  }
  if (c.principal !== undefined && c.principalSessions !== undefined) {
    const held = state.sessionsOf(c.principal);
    if (held >= c.principalSessions) return failure('QUOTA_EXCEEDED', `user ${c.principal} already has ${held} sessions open, the most one user may hold (--sessions-per-user ${c.principalSessions})`);
  }
  const info = {
    timeoutMs: c.timeoutMs,
    remote: c.remote,
    ...(c.resumeHash === undefined ? {} : { resumeHash: c.resumeHash }),
    ...(c.principal === undefined ? {} : { principal: c.principal }),
    ...(c.member === undefined ? {} : { member: c.member }),
  };
  return {
    result: { ok: true, op: 'openSession', session: c.session },
    ops: [{ type: 'put', key: clientKey(c.session), value: encodeClientValue(info) }],
    events: [],
    after: [() => state.add(c.session, info)],
  };
}

function attachSession(c: AttachSessionCommand, { states }: PlanContext): Plan | ApplyError {
  const state = states.of(sessions);
  const info = state.sessions.get(c.session);
  if (info === undefined) return failure('SESSION_EXPIRED', `session ${c.session} is unknown or has expired`);
  return {
    result: { ok: true, op: 'family', family: sessions.name, value: { session: c.session, member: c.member } },
    ops: [{ type: 'put', key: clientKey(c.session), value: encodeClientValue({ ...info, member: c.member }) }],
    events: [],
    after: [() => state.attach(c.session, c.member)],
  };
}

async function closeSession(c: CloseSessionCommand, ctx: PlanContext): Promise<Plan | ApplyError> {
  const expired = sessionProblem(ctx.states, c.session);
  if (expired !== null) return expired;
  const ops: BatchOp[] = [];
  const plan: Plan = { result: { ok: true, op: 'closeSession' }, ops, events: [], after: [] };
  for (const family of ctx.families) {
    if (family.endSession === undefined) continue;
    const share = await family.endSession(c.session, ctx);
    // Loops, not spreads: a session may own a million items.
    for (const op of share.ops) ops.push(op);
    for (const event of share.events) plan.events.push(event);
    for (const step of share.after) plan.after.push(step);
  }
  ops.push({ type: 'del', key: clientKey(c.session) });
  const state = ctx.states.of(sessions);
  plan.after.push(() => state.remove(c.session));
  return plan;
}

/** openSession's resumeHash: sessions that only their creator can resume. */
export const RESUME_TOKENS_SINCE = 6;
/** openSession's principal: sessions that record who opened them (the auth family's version). */
export const PRINCIPALS_SINCE = 7;
/** openSession's member and attachSession: sessions that record the member holding their connection. */
export const HOLDERS_SINCE = 9;

/** What opening and closing a session answer (the kernel's ApplySuccess reads them from here). */
declare module '../../statemachine/types.js' {
  interface LegacyResults {
    openSession: { readonly session: string };
    closeSession: Record<never, never>;
  }
}

export const sessions: Family<SessionsCommand, SessionsState> = {
  name: 'sessions',
  since: 1,
  buckets: [{ id: SessionsBucket.client, name: 'client' }],
  ops: {
    openSession: {
      fields: ['session', 'timeoutMs', 'remote', 'quota', 'resumeHash', 'principal', 'principalSessions', 'member'],
      since: 1,
      fieldsSince: { resumeHash: RESUME_TOKENS_SINCE, principal: PRINCIPALS_SINCE, principalSessions: PRINCIPALS_SINCE, member: HOLDERS_SINCE },
      decode: (c) => {
        const open: OpenSessionCommand = {
          op: 'openSession',
          session: sessionField(c.session),
          timeoutMs: integerField(c.timeoutMs, 'timeoutMs', 1, MAX_TIMEOUT_MS),
          remote: remoteField(c.remote),
        };
        const withQuota = c.quota === undefined ? open : { ...open, quota: quotaField(c.quota, ['sessionsPerAddress']) };
        if (c.resumeHash !== undefined && (typeof c.resumeHash !== 'string' || !/^[0-9a-f]{64}$/.test(c.resumeHash))) throw new CommandError('resumeHash must be 64 lowercase hex digits');
        if (c.principal !== undefined && (typeof c.principal !== 'string' || c.principal.length === 0 || c.principal.length > 128)) throw new CommandError('principal must be a user name');
        if (c.principalSessions !== undefined && c.principal === undefined) throw new CommandError('principalSessions goes with principal');
        return {
          ...withQuota,
          ...(c.resumeHash === undefined ? {} : { resumeHash: c.resumeHash as string }),
          ...(c.principal === undefined ? {} : { principal: c.principal as string }),
          ...(c.principalSessions === undefined ? {} : { principalSessions: integerField(c.principalSessions, 'principalSessions', 1, 2 ** 31) }),
          ...(c.member === undefined ? {} : { member: memberField(c.member, 'member') }),
        };
      },
    },
    attachSession: {
      fields: ['session', 'member'],
      since: HOLDERS_SINCE,
      decode: (c) => ({ op: 'attachSession', session: sessionField(c.session), member: memberField(c.member, 'member') }),
    },
    closeSession: {
      fields: ['session', 'reason'],
      since: 1,
      decode: (c) => {
        if (c.reason !== 'bye' && c.reason !== 'expired') throw new CommandError("reason must be 'bye' or 'expired'");
        return { op: 'closeSession', session: sessionField(c.session), reason: c.reason };
      },
    },
  },
  load: (db, snapshot) => SessionsState.load(db, snapshot),
  plan: (command, ctx) => (command.op === 'openSession' ? openSession(command, ctx) : command.op === 'attachSession' ? attachSession(command, ctx) : closeSession(command, ctx)),
  // No one may see a session gone before that is written.
  goesAlone: (command) => command.op === 'closeSession',
  plugin: async () => (await import('./server.js')).plugin,
};
