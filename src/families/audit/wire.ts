// The audit family's client protocol (docs/protocol.md "Extension: audit log").
import { buildersOf, defineOp, invalid, optional, uintField, type RequestBuilder } from '../../protocol/index.js';

export type AuditKind = 'auth-failed' | 'denied' | 'admin' | 'dropped';
export const AUDIT_KINDS: readonly AuditKind[] = ['auth-failed', 'denied', 'admin', 'dropped'];

/** What the server reports; apply gives it a place in the chain. */
export interface AuditFact {
  /** Milliseconds since the epoch, on the member that saw it. */
  readonly at: number;
  readonly kind: AuditKind;
  /** The user, or null for no (or an unproven) user. */
  readonly principal: string | null;
  /** The client's address, or 'login' for a login op. */
  readonly remote: string;
  readonly what: string;
}

export interface AuditRecord extends AuditFact {
  readonly seq: number;
  /** The hash of the record before (64 zeros before the first one ever). */
  readonly prev: string;
  readonly hash: string;
}

/** Records kept; older ones are deleted as new ones come, so the oldest kept is always max(1, newest - this + 1). */
export const MAX_AUDIT_RECORDS = 100_000;

/** The most records one `audit.list` reply holds (and its default). */
export const AUDIT_PAGE = 1000;

export interface AuditPage {
  readonly records: AuditRecord[];
  /** The oldest record the cluster still keeps, and the newest written. */
  readonly oldest: number;
  readonly newest: number;
  /** The hash of record `newest`. */
  readonly head?: string;
  /** Present when the member found its newest records unlike what its Raft log wrote (a cut-back log). */
  readonly problem?: string;
  /** Present when more records follow: pass it as `after`. */
  readonly next?: number;
}

/** The audit family's op, as the client and the server both check it. */
export const AUDIT_SCHEMAS = {
  list: defineOp<{ after?: number; limit?: number }, AuditPage>({
    name: 'audit.list',
    read: true,
    fields: ['after', 'limit'],
    parse: (f) => {
      const limit = uintField(f, 'limit');
      if (limit !== undefined && (limit < 1 || limit > AUDIT_PAGE)) throw invalid(`limit must be 1 to ${AUDIT_PAGE}`);
      return { ...optional('after', uintField(f, 'after')), ...optional('limit', limit) };
    },
  }),
};

/** The op's request builder, by op name (the frame decoder's view of the same schema). */
export const AUDIT_OPS: ReadonlyMap<string, RequestBuilder> = buildersOf(Object.values(AUDIT_SCHEMAS));
