// Calling one command family's ops by name, each checked with that family's
// request builder before it is sent (what every family's client class does).
import type { FamilyResult, RequestBuilder } from '../protocol/index.js';
import type { VeraClient } from './client.js';

export type FamilyCall = (name: string, fields: Readonly<Record<string, unknown>>) => Promise<FamilyResult>;

export function familyCaller(client: VeraClient, ops: ReadonlyMap<string, RequestBuilder>): FamilyCall {
  return (name, fields) => {
    const build = ops.get(name);
    if (build === undefined) throw new Error(`no op ${name} in this family`);
    return client.callFamilyOp(name, fields, build);
  };
}
