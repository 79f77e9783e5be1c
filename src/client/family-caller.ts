// Calling one command family's ops by name, each checked with that family's
// request builder before it is sent (what every family's client class does).
import type { FamilyResult, RequestBuilder } from '../protocol/index.js';
import type { VeraClient } from './client.js';

export type FamilyCall = (name: string, fields: Readonly<Record<string, unknown>>) => Promise<FamilyResult>;

/** `reads`: the family's ops that change nothing, which may be sent again after a lost connection, as a get is. */
export function familyCaller(client: VeraClient, ops: ReadonlyMap<string, RequestBuilder>, reads: ReadonlySet<string> = new Set()): FamilyCall {
  return (name, fields) => {
    const build = ops.get(name);
    if (build === undefined) throw new Error(`no op ${name} in this family`);
    return client.callFamilyOp(name, fields, build, reads.has(name));
  };
}
