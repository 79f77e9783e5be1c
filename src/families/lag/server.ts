// The lag family on the server: the leader writes the notification indexes
// clients acknowledged through Raft, in batches, so a new leader knows what to
// replay to each session. A kit plugin: it sees the member through its host.
import type { FamilyHost, Plugin, PluginDuty } from '../../kit/index.js';
import type { LagState } from './state.js';
import type { AckCommand } from './index.js';
import { lagOf } from './queries.js';
import { liveSessions } from '../sessions/public.js';

type LagHost = FamilyHost<LagState, unknown, AckCommand>;

/** Proposes the acknowledgements received since the last tick, of live sessions and newer than the log's. */
function ackFlush(host: LagHost): PluginDuty {
  return {
    name: 'ack-flush',
    periodMs: 1000,
    tick: () => {
      const live = liveSessions(host.reader);
      const acks = host.member.takeUnwrittenAcks().filter(([s, index]) => live.has(s) && index > lagOf(host.reader, s));
      if (acks.length === 0) return;
      // A refusal changed nothing and the next acks supersede these: only a failure is worth a line.
      host.proposeOutcome({ op: 'ack', acks }).catch((err: unknown) => {
        host.log.debug({ event: 'ack-write-failed', err: String(err) }, 'acknowledged indexes not written; a resume may replay more');
      });
    },
  };
}

export const plugin: Plugin<Record<string, never>, LagState, unknown, AckCommand> = {
  ops: {},
  needs: {},
  touchesNoLists: 'the lag family answers no client op',
  createServer: (host) => ({
    handlers: {},
    duties: [ackFlush(host.leaderOnly)],
    // A resumed session's replay starts after what the log says it acknowledged.
    connection: { ackedInLog: (session) => lagOf(host.reader, session) },
  }),
};
