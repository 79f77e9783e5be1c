// The audit log in the client library: read it a page at a time, or whole, and check its chain.
import type { VeraClient } from '../../client/client.js';
import { familyCaller, type FamilyCall } from '../../client/family-caller.js';
import { AUDIT_OPS, type AuditRecord } from './wire.js';

export type { AuditRecord } from './wire.js';

/** Ops that change nothing: sent again after a lost connection, as a get is. */
const READS: ReadonlySet<string> = new Set(['audit.list']);

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

export class AuditClient {
  private readonly call: FamilyCall;

  constructor(client: VeraClient) {
    this.call = familyCaller(client, AUDIT_OPS, READS);
  }

  async page(after = 0, limit?: number): Promise<AuditPage> {
    return (await this.call('audit.list', { after, ...(limit === undefined ? {} : { limit }) })) as unknown as AuditPage;
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
