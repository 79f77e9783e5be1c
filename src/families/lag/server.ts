// The lag family on the server: the leader writes the notification indexes
// clients acknowledged through Raft, in batches, so a new leader knows what to
// replay to each session.
import type { LeaderDuty, ServerPart } from '../../server/front/family-part.js';
import { lagOf } from './queries.js';
import { liveSessions } from '../sessions/queries.js';

export const ackFlush: LeaderDuty = {
  name: 'ack-flush',
  tick: (fe) => {
    const sm = fe.node.stateMachine;
    const live = liveSessions(sm);
    const acks = fe.notifier.takeUnwrittenAcks().filter(([s, index]) => live.has(s) && index > lagOf(sm, s));
    if (acks.length === 0) return;
    fe.node.propose({ op: 'ack', acks }).catch((err: unknown) => {
      fe.logger.debug({ event: 'ack-write-failed', err: String(err) }, 'acknowledged indexes not written; a resume may replay more');
    });
  },
};

export const server: ServerPart = { duties: [ackFlush], connection: { ackedInLog: (fe, session) => lagOf(fe.node.stateMachine, session) } };
