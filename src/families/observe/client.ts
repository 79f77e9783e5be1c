// Observing the cluster from the client library: members and their replication,
// sessions with their users, watches and notification lag.
import type { VeraClient } from '../../client/client.js';
import { typedCaller, type TypedCall } from '../../client/typed-ops.js';
import { OBSERVE_SCHEMAS, type ClusterView, type SessionDetail, type SessionsPage } from './wire.js';

export type { ClusterView, MemberView, SessionDetail, SessionsPage, SessionView } from './wire.js';

export class ObserveClient {
  private readonly call: TypedCall<typeof OBSERVE_SCHEMAS>;

  constructor(client: VeraClient) {
    this.call = typedCaller(client, OBSERVE_SCHEMAS);
  }

  cluster(): Promise<ClusterView> {
    return this.call('cluster', {});
  }

  /** A page of sessions in id order after `after`; `next` is the `after` of the next page. */
  sessions(after?: string, limit?: number): Promise<SessionsPage> {
    return this.call('sessions', { ...(after === undefined ? {} : { after }), ...(limit === undefined ? {} : { limit }) });
  }

  /** One session with its watches and ephemeral items (up to `limit` of each), or `{live: false}` once it is gone. */
  session(session: string, limit?: number): Promise<SessionDetail | { session: string; live: false }> {
    return this.call('session', { session, ...(limit === undefined ? {} : { limit }) });
  }
}
