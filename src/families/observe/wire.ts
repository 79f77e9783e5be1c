// The observe family's client protocol: read-only views of the cluster and its
// sessions for operators and the dashboard (docs/protocol.md "Extension:
// observing the cluster").
import { buildersOf, defineOp, invalid, optional, uintField, validateSessionId, type RequestBuilder } from '../../protocol/index.js';

/** The most sessions (or items) one reply holds, and its default. */
export const OBSERVE_PAGE = 500;

type Fields = Readonly<Record<string, unknown>>;

function session(f: Fields, field: string): string {
  const problem = validateSessionId(f[field]);
  if (problem !== null) throw invalid(`${field}: ${problem}`);
  return f[field] as string;
}

function limit(f: Fields): number | undefined {
  const v = uintField(f, 'limit');
  if (v !== undefined && (v < 1 || v > OBSERVE_PAGE)) throw invalid(`limit must be 1 to ${OBSERVE_PAGE}`);
  return v;
}

/** A member as the leader sees it. */
export interface MemberView {
  readonly id: string;
  readonly voter: boolean;
  readonly clientUrl: string | null;
  /** Leader only: the newest entry the member is known to hold, how far it is behind, and whether it answered lately. */
  readonly match?: number;
  readonly lag?: number;
  readonly reachable?: boolean;
}

export interface ClusterView {
  /** The answering member (the reply frame's own `id` is the request's). */
  readonly member: string;
  readonly role: string;
  readonly term: number;
  readonly leader: string | null;
  readonly commit: number;
  readonly applied: number;
  readonly lastIndex: number;
  readonly members: readonly MemberView[];
  readonly sessions: number;
  readonly commandVersion: number;
}

export interface SessionView {
  readonly session: string;
  readonly principal: string | null;
  readonly remote: string;
  readonly timeoutMs: number;
  /** The member holding its connection, as the log records it; null for sessions opened before command version 9. */
  readonly member: string | null;
  /** Whether it has a connection to this member now. */
  readonly connected: boolean;
  readonly watches: number;
  /** Entries it has not acknowledged notifications up to: the applied index less its acknowledged one (0 when it watches nothing). */
  readonly lag: number;
}

export interface SessionDetail extends SessionView {
  readonly live: true;
  readonly watchList: ReadonlyArray<{ readonly path: string; readonly prefix: boolean }>;
  readonly items: ReadonlyArray<{ readonly path: string; readonly index: number }>;
}

export interface SessionsPage {
  readonly sessions: SessionView[];
  readonly total: number;
  readonly next?: string;
}

/** The observe family's ops, as the client and the server both check them. */
export const OBSERVE_SCHEMAS = {
  cluster: defineOp<Record<string, never>, ClusterView>({ name: 'observe.cluster', read: true, fields: [], parse: () => ({}) }),
  sessions: defineOp<{ after?: string; limit?: number }, SessionsPage>({
    name: 'observe.sessions',
    read: true,
    fields: ['after', 'limit'],
    parse: (f) => ({ ...optional('after', f.after === undefined ? undefined : session(f, 'after')), ...optional('limit', limit(f)) }),
  }),
  session: defineOp<{ session: string; limit?: number }, SessionDetail | { session: string; live: false }>({
    name: 'observe.session',
    read: true,
    fields: ['session', 'limit'],
    parse: (f) => ({ session: session(f, 'session'), ...optional('limit', limit(f)) }),
  }),
};

/** The ops' request builders, by op name (the frame decoder's view of the same schemas). */
export const OBSERVE_OPS: ReadonlyMap<string, RequestBuilder> = buildersOf(Object.values(OBSERVE_SCHEMAS));
