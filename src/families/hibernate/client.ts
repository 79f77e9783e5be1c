// Hibernation in the client library: freeze and thaw a unit by hand, list the Frozen
// units, typed from the family's op schemas (wire.ts).
import type { VeraClient } from '../../client/client.js';
import { typedCaller, type TypedCall } from '../../client/typed-ops.js';
import { VeraError } from '../../protocol/index.js';
import { HIBERNATE_SCHEMAS, type FreezeReply, type FreezeResult, type ThawResult, type UnitInfo, type UnitsPage } from './wire.js';

export type { FreezeResult, UnitInfo } from './wire.js';

/** A freeze of several units answers one result each; a freeze of one, that unit's result. */
function severalUnits(reply: FreezeReply): readonly FreezeResult[] {
  if ('units' in reply) return reply.units;
  throw new VeraError('INTERNAL', 'a freeze of several units was answered with one result');
}

function oneUnit(reply: FreezeReply): FreezeResult {
  if (!('units' in reply)) return reply;
  throw new VeraError('INTERNAL', 'a freeze of one unit was answered with several results');
}

export class HibernateClient {
  private readonly call: TypedCall<typeof HIBERNATE_SCHEMAS>;

  constructor(client: VeraClient) {
    this.call = typedCaller(client, HIBERNATE_SCHEMAS);
  }

  /** Moves the unit at `path` (its list and every list below it) to the cold store. */
  async freeze(path: string): Promise<FreezeResult> {
    return oneUnit(await this.call('freeze', { path }));
  }

  /** Freezes several units together (at most 16, none inside another); one result per path, in order. */
  async freezeMany(paths: readonly string[]): Promise<FreezeResult[]> {
    return [...severalUnits(await this.call('freeze', { paths: [...paths] }))];
  }

  /** Brings it back (any operation on it does that by itself). */
  thaw(path: string): Promise<ThawResult> {
    return this.call('thaw', { path });
  }

  /** One page of the Frozen and Freezing units, by path: those after `after`, at most `limit` (1 to 1000); `next` is the `after` of the next page. */
  async unitsPage(options: { readonly after?: string; readonly limit?: number } = {}): Promise<UnitsPage> {
    const r = await this.call('units', { ...options });
    return { units: r.units, ...(typeof r.next === 'string' ? { next: r.next } : {}) };
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
