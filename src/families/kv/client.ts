// put and txn in the client library. A put sets a list's value in one entry (its
// items replaced by the new one, or all but the newest `keep - 1`); a txn
// compares lists and applies one branch of writes, all or nothing, in one entry.
import type { VeraClient } from '../../client/client.js';
import { inputCaller, type InputCall } from '../../client/typed-ops.js';
import { KV_SCHEMAS, type PutResult, type TxnResult } from './wire.js';

// The results, as the server's handlers type them (wire.ts).
export type { PutResult, TxnResult } from './wire.js';

export interface PutOptions {
  /** Items the list holds after the put, the new one included (1-1000). Default 1: the put replaces the list. */
  readonly keep?: number;
  /** Compare-and-set: only if the list's newest index is this (0: the list is empty); else CONFLICT. */
  readonly ifLastIndex?: number;
  /** Owned by this lease (LeaseClient.grant): deleted when it ends. */
  readonly lease?: string;
  /** Owned by this client's session, deleted when it ends (as a push's items are by default). Default: persistent. */
  readonly ephemeral?: boolean;
}


/** What a compare reads: the newest index (0 when empty), the number of items, or whether there are any. */
export type Compare =
  | { readonly path: string; readonly target: 'newest' | 'length'; readonly cmp?: '=' | '!=' | '<' | '>'; readonly value: number }
  | { readonly path: string; readonly target: 'exists'; readonly cmp?: '=' | '!='; readonly value: boolean };

export type TxnWrite =
  /** As a push: owned by this session unless `persistent` or a `lease`. It watches nothing. */
  | { readonly op: 'push'; readonly path: string; readonly data: unknown; readonly persistent?: boolean; readonly lease?: string }
  | { readonly op: 'put'; readonly path: string; readonly data: unknown; readonly keep?: number; readonly ephemeral?: boolean; readonly lease?: string }
  /** As a delete: this session's own items and persistent ones. */
  | { readonly op: 'delete'; readonly path: string; readonly index: number }
  /** Deletes every item of the list, whoever owns it. */
  | { readonly op: 'clear'; readonly path: string };

export interface Txn {
  /** All must hold for `success` to run; else `failure` runs. None: `success` runs. */
  readonly compare?: readonly Compare[];
  readonly success?: readonly TxnWrite[];
  readonly failure?: readonly TxnWrite[];
}


/** The ops whose fields a caller writes in another shape than their parse gives (data not yet encoded). */
interface KvInputs {
  readonly put: { readonly path: string; readonly data: unknown } & PutOptions;
  readonly txn: Txn;
}

export class KvClient {
  private readonly call: InputCall<typeof KV_SCHEMAS, KvInputs>;

  constructor(client: VeraClient) {
    this.call = inputCaller<typeof KV_SCHEMAS, KvInputs>(client, KV_SCHEMAS);
  }

  /** Sets the list at `path` to `data` in one entry. */
  async put(path: string, data: unknown, options: PutOptions = {}): Promise<PutResult> {
    return this.call('put', { path, data, ...options });
  }

  /** Compares, then one branch of writes, all or nothing, in one entry; a result per write of the branch that ran. */
  async txn(txn: Txn): Promise<{ succeeded: boolean; results: TxnResult[] }> {
    return this.call('txn', txn);
  }
}
