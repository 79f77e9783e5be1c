// The sessions family on the server: `bye`, and the leader's session clocks.
// A new leader starts every session's clock at the full timeout (seed 003) and
// proposes the expiry of any that runs out. (A session is opened by the
// connection's hello, which also binds it to the connection.)
import type { EmptyResult } from '../../protocol/index.js';
import { CloseCode, expectOk } from '../../server/front/context.js';
import type { LeaderDuty, OpCall, ServerPart } from '../../server/front/family-part.js';
import type { FrontEnd } from '../../server/front/context.js';
import type { ApplyOutcome } from '../../statemachine/types.js';
import { liveSessions } from './queries.js';
import { RESUME_TOKENS_SINCE } from './index.js';

async function bye({ fe, session }: OpCall<'bye'>): Promise<EmptyResult> {
  expectOk(await fe.node.propose({ op: 'closeSession', session, reason: 'bye' }));
  return {};
}

export const sessionExpiry: LeaderDuty = {
  name: 'session-expiry',
  start: (fe) => {
    fe.expiry.clear();
    for (const [session, info] of liveSessions(fe.node.stateMachine)) fe.expiry.track(session, info.timeoutMs);
    fe.logger.info({ event: 'leader-duties-started', sessions: fe.expiry.size }, 'this node leads: session clocks started');
  },
  /**
   * Bring the clocks in line with the replicated sessions (some open or close through
   * entries applied after we took over), then propose the expiry of overdue ones.
   */
  tick: (fe) => {
    const live = liveSessions(fe.node.stateMachine);
    for (const [session, info] of live) if (!fe.expiry.has(session)) fe.expiry.track(session, info.timeoutMs);
    for (const session of fe.expiry.sessions()) {
      if (live.has(session)) continue;
      fe.expiry.remove(session);
      fe.notifier.forgetSession(session);
      const conn = fe.connections.get(session);
      if (conn) {
        fe.connections.delete(session);
        conn.close(CloseCode.sessionEnded, 'session ended');
      }
    }
    for (const session of fe.expiry.takeDue()) {
      fe.logger.info({ event: 'session-expired', session }, 'session timed out; deleting its ephemeral items');
      fe.metrics.expirations.inc();
      fe.node.propose({ op: 'closeSession', session, reason: 'expired' }).then(
        () => undefined,
        (err: unknown) => {
          fe.logger.warn({ event: 'session-expiry-failed', session, err: String(err) }, 'expiry proposal failed; will retry');
          fe.expiry.retry(session);
        },
      );
    }
  },
  // The clocks belong to the leader: a later leadership starts them afresh.
  stop: (fe) => fe.expiry.clear(),
};

/** Sessions (and leases) opened, as this member applies them. */
function onApplied(outcome: ApplyOutcome, fe: FrontEnd): void {
  if (outcome.result.ok && outcome.result.op === 'openSession') fe.metrics.sessionsOpened.inc();
}

export const server: ServerPart = {
  ops: { bye },
  duties: [sessionExpiry],
  onApplied,
  // A hello opens or resumes a session through these: the connection knows no family.
  connection: {
    session: (fe, id) => liveSessions(fe.node.stateMachine).get(id),
    sessionCount: (fe) => liveSessions(fe.node.stateMachine).size,
    resumeTokensSince: RESUME_TOKENS_SINCE,
  },
};
