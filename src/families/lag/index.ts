// The lag family: how far each session has acknowledged its notifications,
// replicated so a new leader knows what to replay. The leader batches the acks
// it received into one `ack` entry.
import { LagBucket, lagKey } from './keys.js';
import { encodeLagValue } from './codec.js';
import { CommandError, type BatchOp, type Family, type Plan, type PlanContext, type SessionEndPlan } from '../../statemachine/family.js';
import { indexField, sessionField } from '../fields.js';
import { sessions } from '../sessions/public.js';
import { LagState } from './state.js';

export interface AckCommand {
  readonly op: 'ack';
  /** [session, highest notification index it has processed]. */
  readonly acks: ReadonlyArray<readonly [string, number]>;
}

function ack(c: AckCommand, { states }: PlanContext): Plan {
  const live = states.of(sessions);
  const state = states.of(lag);
  // Acks of sessions that are gone are skipped rather than failing the whole
  // batch; a session's acknowledged index only ever rises.
  const raised = new Map<string, number>();
  for (const [session, acked] of c.acks) {
    if (!live.has(session)) continue;
    const current = raised.get(session) ?? state.of(session);
    if (acked > current) raised.set(session, acked);
  }
  const ops: BatchOp[] = [];
  for (const [session, acked] of raised) ops.push({ type: 'put', key: lagKey(session), value: encodeLagValue(acked) });
  return {
    result: { ok: true, op: 'ack' },
    ops,
    events: [],
    after: [() => raised.forEach((acked, session) => state.set(session, acked))],
  };
}

function endSession(session: string, { states }: PlanContext): SessionEndPlan {
  const state = states.of(lag);
  return { ops: [{ type: 'del', key: lagKey(session) }], events: [], after: [() => state.delete(session)] };
}

function acksField(value: unknown): Array<readonly [string, number]> {
  if (!Array.isArray(value)) throw new CommandError('acks must be an array');
  return value.map((pair: unknown) => {
    if (!Array.isArray(pair) || pair.length !== 2) throw new CommandError('each ack must be [session, index]');
    return [sessionField(pair[0]), indexField(pair[1], 'ack index')] as const;
  });
}

/** What an ack answers (the kernel's ApplySuccess reads it from here). */
declare module '../../statemachine/types.js' {
  interface LegacyResults {
    ack: Record<never, never>;
  }
}

export const lag: Family<AckCommand, LagState> = {
  name: 'lag',
  since: 1,
  buckets: [{ id: LagBucket.lag, name: 'lag' }],
  ops: {
    ack: { fields: ['acks'], since: 1, decode: (c) => ({ op: 'ack', acks: acksField(c.acks) }) },
  },
  load: (db, snapshot) => LagState.load(db, snapshot),
  plan: ack,
  goesAlone: () => false,
  endSession,
  plugin: async () => (await import('./server.js')).plugin,
};
