// The audit family's client protocol (docs/protocol.md "Extension: audit log").
import { invalid, optional, uintField, type RequestBuilder } from '../../protocol/index.js';

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
