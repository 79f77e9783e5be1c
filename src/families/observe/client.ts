// Observing the cluster from the client library: members and their replication,
// sessions with their users, watches and notification lag.
import type { VeraClient } from '../../client/client.js';
import { familyCaller, type FamilyCall } from '../../client/family-caller.js';
import { OBSERVE_OPS, type ClusterView, type SessionView } from './wire.js';

export type { ClusterView, MemberView, SessionView } from './wire.js';

/** Ops that change nothing: sent again after a lost connection, as a get is. */
const READS: ReadonlySet<string> = new Set(['observe.cluster', 'observe.sessions', 'observe.session']);

export interface SessionDetail extends SessionView {
  readonly live: true;
  readonly watchList: ReadonlyArray<{ readonly path: string; readonly prefix: boolean }>;
  readonly items: ReadonlyArray<{ readonly path: string; readonly index: number }>;
}

export class ObserveClient {
  private readonly call: FamilyCall;

  constructor(client: VeraClient) {
    this.call = familyCaller(client, OBSERVE_OPS, READS);
  }

  async cluster(): Promise<ClusterView> {
    return (await this.call('observe.cluster', {})) as unknown as ClusterView;
  }

  /** A page of sessions in id order after `after`; `next` is the `after` of the next page. */
  async sessions(after?: string, limit?: number): Promise<{ sessions: SessionView[]; total: number; next?: string }> {
    return (await this.call('observe.sessions', { ...(after === undefined ? {} : { after }), ...(limit === undefined ? {} : { limit }) })) as unknown as { sessions: SessionView[]; total: number; next?: string };
  }

  /** One session with its watches and ephemeral items (up to `limit` of each), or `{live: false}` once it is gone. */
  async session(session: string, limit?: number): Promise<SessionDetail | { session: string; live: false }> {
    return (await this.call('observe.session', { session, ...(limit === undefined ? {} : { limit }) })) as unknown as SessionDetail | { session: string; live: false };
  }
}
