// The sessions family on the server: `bye`, and the leader's session clocks.
// A new leader starts every session's clock at the full timeout (seed 003) and
// proposes the expiry of any that runs out. (A session is opened by the
// connection's hello, which also binds it to the connection.) A kit plugin.
import type { FamilyHost, Plugin, PluginDuty } from '../../kit/index.js';
import type { ApplySuccess } from '../../statemachine/types.js';
import { liveSessions } from './queries.js';
import { HOLDERS_SINCE, RESUME_TOKENS_SINCE, type SessionsCommand } from './index.js';
import type { SessionsState } from './state.js';

/** What an applied attachSession answers (a family result's value). */
interface Attached {
  readonly session: string;
  readonly member: string;
}

/** The applied values of the family's commands: the first three ops' own results, attachSession's family value. */
type SessionsValue = ApplySuccess | Attached;

type SessionsHost = FamilyHost<SessionsState, SessionsValue, SessionsCommand>;

/** The leader's session clocks: started afresh when it starts leading, each expiry proposed when one runs out. */
export function sessionExpiry(host: SessionsHost): PluginDuty {
  const clocks = host.sessionClocks;
  /**
   * A deposed leader (it lost its quorum, and CheckQuorum has not told it yet) must not put an
   * expiry in its log: a follower could be elected with the entry and commit it, while the
   * session's client talks to a member connected to a majority. So the sessions due now share
   * one leadership check (a ReadIndex round), and each is proposed only if, after it, this member
   * still leads in the same term and the session is still live and still due (its clock was not
   * restarted nor cleared meanwhile).
   */
  async function expireOnceLeadershipHolds(due: readonly string[]): Promise<void> {
    const term = host.member.status().term;
    try {
      await host.barrier();
    } catch (err) {
      host.log.warn({ event: 'session-expiry-unconfirmed', sessions: due.length, err: String(err) }, 'could not confirm leadership before expiring sessions; will retry');
      for (const session of due) clocks.retry(session);
      return;
    }
    if (!host.isLeader() || host.member.status().term !== term) return; // the clocks went with the leadership
    const live = liveSessions(host.reader);
    for (const session of due) {
      const remaining = clocks.remainingMs(session);
      if (remaining === undefined || remaining > 0 || !live.has(session)) continue;
      host.log.info({ event: 'session-expired', session }, 'session timed out; deleting its ephemeral items');
      clocks.countExpired();
      // A refusal (the session closed meanwhile) is an answer too; only a proposal not applied is tried again.
      host.proposeOutcome({ op: 'closeSession', session, reason: 'expired' }).then(
        () => undefined,
        (err: unknown) => {
          host.log.warn({ event: 'session-expiry-failed', session, err: String(err) }, 'expiry proposal failed; will retry');
          clocks.retry(session);
        },
      );
    }
  }

  return {
    name: 'session-expiry',
    periodMs: 25,
    start: () => {
      clocks.clear();
      for (const [session, info] of liveSessions(host.reader)) clocks.track(session, info.timeoutMs);
      host.log.info({ event: 'leader-duties-started', sessions: clocks.size }, 'this node leads: session clocks started');
    },
    /**
     * Bring the clocks in line with the replicated sessions (some open or close through
     * entries applied after we took over), then propose the expiry of overdue ones.
     */
    tick: () => {
      const live = liveSessions(host.reader);
      for (const [session, info] of live) if (!clocks.has(session)) clocks.track(session, info.timeoutMs);
      // A session's connection closes where it is held, when that member applies its closeSession (below).
      for (const session of clocks.sessions()) if (!live.has(session)) clocks.remove(session);
      const due = clocks.takeDue();
      if (due.length > 0) void expireOnceLeadershipHolds(due);
    },
    // The clocks belong to the leader: a later leadership starts them afresh.
    stop: () => clocks.clear(),
  };
}

export const plugin: Plugin<Record<string, never>, SessionsState, SessionsValue, SessionsCommand> = {
  ops: {},
  needs: {},
  touchesNoLists: 'the sessions family answers only bye, which uses no list',
  createServer: (host) => ({
    handlers: {},
    coreOps: {
      bye: async (_req, { session }) => {
        await host.propose({ op: 'closeSession', session, reason: 'bye' });
        return {};
      },
    },
    duties: [sessionExpiry(host.leaderOnly)],
    // Sessions (and leases) opened, as this member applies them; and a session attached to a member
    // (a resume there) gets its full timeout again on the leader, as an opened one does: its new holder
    // counts its confirmations from the attach (docs/scale-out.md "Session liveness").
    applied: (_index, value) => {
      if (value === null) return;
      if ('op' in value) {
        if (value.op === 'openSession') host.sessionClocks.countOpened();
        // On every member: the one holding the session's connection closes it (4001). After this turn,
        // so that a bye's own reply, answered once this entry applied, goes out first (then its 1000).
        // The session comes from the state's note, not the result: results of entries recorded before
        // this hook existed must stay as they were (test/statemachine/legacy-fixture.test.ts).
        if (value.op === 'closeSession') {
          const ended = host.state().takeEnded();
          if (ended.length > 0) setImmediate(() => {
            for (const session of ended) host.member.endConnection(session);
          });
        }
        return;
      }
      if (!host.isLeader()) return;
      const info = liveSessions(host.reader).get(value.session);
      if (info !== undefined) host.sessionClocks.track(value.session, info.timeoutMs);
    },
    // A hello opens or resumes a session through these: the connection knows no family.
    connection: {
      session: (id) => liveSessions(host.reader).get(id),
      sessionCount: () => liveSessions(host.reader).size,
      resumeTokensSince: RESUME_TOKENS_SINCE,
      holdersSince: HOLDERS_SINCE,
      attach: async (session, member) => {
        await host.propose({ op: 'attachSession', session, member });
      },
    },
  }),
};
