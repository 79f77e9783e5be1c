// The audit family's client protocol (docs/protocol.md "Extension: audit log").
import { invalid, optional, uintField, type RequestBuilder } from '../../protocol/index.js';

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

export const AUDIT_OPS: ReadonlyMap<string, RequestBuilder> = new Map<string, RequestBuilder>([
  [
    'audit.list',
    (f, id) => {
      for (const key of Object.keys(f)) if (key !== 'id' && key !== 'op' && key !== 'after' && key !== 'limit') throw invalid(`unexpected field '${key}'`);
      const limit = uintField(f, 'limit');
      if (limit !== undefined && (limit < 1 || limit > AUDIT_PAGE)) throw invalid(`limit must be 1 to ${AUDIT_PAGE}`);
      return { id, op: 'audit.list', ...optional('after', uintField(f, 'after')), ...optional('limit', limit) };
    },
  ],
]);
