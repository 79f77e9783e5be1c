// Hibernation in the client library: freeze and thaw a unit by hand, list the Frozen units.
import type { VeraClient } from '../../client/client.js';
import { familyCaller, type FamilyCall } from '../../client/family-caller.js';
import { HIBERNATE_OPS } from './wire.js';

/** Ops that change nothing: sent again after a lost connection, as a get is. */
const READS: ReadonlySet<string> = new Set(['hibernate.units']);

export type FreezeResult =
  | { readonly unit: string; readonly frozen: true; readonly items: number; readonly bytes: number }
  /** Why not: `changed` (written after the server looked), `ephemeral` (a live session's items), `empty`, `too-large`, `frozen`, `inside-frozen`, `holds-frozen`, `freezing` (a freeze of it is under way). */
  | { readonly unit: string; readonly frozen: false; readonly why: string };

export type UnitInfo =
  | {
      readonly unit: string;
      readonly state: 'frozen';
      /** The index of the entry that began its freeze. */
      readonly frozenAt: number;
      readonly bytes: number;
      readonly items: number;
      readonly lists: ReadonlyArray<{ readonly path: string; readonly newest: number; readonly items: number }>;
      /** Present while its hot entries are still being deleted, a bounded step at a time (reads come from its cold file already). */
      readonly draining?: true;
    }
  /** A freeze begun and not yet committed (its cold file is being written). */
  | { readonly unit: string; readonly state: 'freezing'; readonly since: number };

export class HibernateClient {
  private readonly call: FamilyCall;

  constructor(client: VeraClient) {
    this.call = familyCaller(client, HIBERNATE_OPS, READS);
  }

  /** Moves the unit at `path` (its list and every list below it) to the cold store. */
  async freeze(path: string): Promise<FreezeResult> {
    return (await this.call('hibernate.freeze', { path })) as unknown as FreezeResult;
  }

  /** Freezes several units together (at most 16, none inside another); one result per path, in order. */
  async freezeMany(paths: readonly string[]): Promise<FreezeResult[]> {
    return (await this.call('hibernate.freeze', { paths: [...paths] })).units as FreezeResult[];
  }

  /** Brings it back (any operation on it does that by itself). */
  async thaw(path: string): Promise<{ unit: string; thawed: boolean; items: number }> {
    return (await this.call('hibernate.thaw', { path })) as unknown as { unit: string; thawed: boolean; items: number };
  }

  /** One page of the Frozen and Freezing units, by path: those after `after`, at most `limit` (1 to 1000); `next` is the `after` of the next page. */
  async unitsPage(options: { readonly after?: string; readonly limit?: number } = {}): Promise<{ units: UnitInfo[]; next?: string }> {
    const r = await this.call('hibernate.units', { ...options });
    return { units: r.units as UnitInfo[], ...(typeof r.next === 'string' ? { next: r.next } : {}) };
  }

  /** Every Frozen and Freezing unit, by path, read a page at a time (a root of millions of units is millions of entries here). */
  async units(): Promise<UnitInfo[]> {
    const all: UnitInfo[] = [];
    for (let after: string | undefined; ; ) {
      const page = await this.unitsPage(after === undefined ? {} : { after });
      for (const u of page.units) all.push(u);
      if (page.next === undefined) return all;
      after = page.next;
    }
  }
}
