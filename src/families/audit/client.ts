// The audit log in the client library: read it a page at a time, or whole, and check its chain.
import type { VeraClient } from '../../client/client.js';
import { typedCaller, type TypedCall } from '../../client/typed-ops.js';
import { AUDIT_SCHEMAS, type AuditPage, type AuditRecord } from './wire.js';

export type { AuditPage, AuditRecord } from './wire.js';

export class AuditClient {
  private readonly call: TypedCall<typeof AUDIT_SCHEMAS>;

  constructor(client: VeraClient) {
    this.call = typedCaller(client, AUDIT_SCHEMAS);
  }

  async page(after = 0, limit?: number): Promise<AuditPage> {
    return this.call('list', { after, ...(limit === undefined ? {} : { limit }) });
  }

  /** Every record after `after`, page by page, handed to `onPage` (so a long log is never held whole). */
  async each(onPage: (records: readonly AuditRecord[], page: AuditPage) => void, after = 0): Promise<void> {
    for (let cursor: number | undefined = after; cursor !== undefined; ) {
      const page: AuditPage = await this.page(cursor);
      onPage(page.records, page);
      cursor = page.next;
    }
  }
}
