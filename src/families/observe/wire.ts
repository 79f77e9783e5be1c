// The observe family's client protocol: read-only views of the cluster and its
// sessions for operators and the dashboard (docs/protocol.md "Extension:
// observing the cluster").
import { invalid, optional, uintField, validateSessionId, type RequestBuilder, onlyFields } from '../../protocol/index.js';

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

export const OBSERVE_OPS: ReadonlyMap<string, RequestBuilder> = new Map<string, RequestBuilder>([
  ['observe.cluster', (f, id) => (onlyFields(f, []), { id, op: 'observe.cluster' })],
  [
    'observe.sessions',
    (f, id) => {
      onlyFields(f, ['after', 'limit']);
      return { id, op: 'observe.sessions', ...optional('after', f.after === undefined ? undefined : session(f, 'after')), ...optional('limit', limit(f)) };
    },
  ],
  ['observe.session', (f, id) => (onlyFields(f, ['session', 'limit']), { id, op: 'observe.session', session: session(f, 'session'), ...optional('limit', limit(f)) })],
]);

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
  /** Whether it has a connection to this member now. */
  readonly connected: boolean;
  readonly watches: number;
  /** Entries it has not acknowledged notifications up to: the applied index less its acknowledged one (0 when it watches nothing). */
  readonly lag: number;
}
