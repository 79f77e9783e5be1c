// The kv family's client protocol (docs/protocol.md, "Extension: put and
// transactions"). Imports only the protocol package, so the client refuses a
// bad request with the server's own words before sending it.
import { boolField, buildersOf, dataField, defineOp, invalid, onlyFields, packData, pathField, uintField, VeraError, type Item, type PackedValue, type ProtocolLimits, type RequestBuilder } from '../../protocol/index.js';
import { leaseProblem } from '../lease/wire.js';

/** Compares and writes one transaction may hold, at most (mirrors commands.ts, which checks entries). */
export const MAX_TXN_COMPARES = 64;
export const MAX_TXN_WRITES = 64;
export const MAX_PUT_KEEP = 1000;
const TARGETS = ['newest', 'length', 'exists'];
const COMPARISONS = ['=', '!=', '<', '>'];

type Fields = Readonly<Record<string, unknown>>;

/** Who owns what a write adds: a lease, the session (ephemeral, or not persistent), or none. */
export interface Ownership {
  lease?: string;
  persistent?: boolean;
  ephemeral?: boolean;
}

/** A write of a txn as the request carries it (the data measured once: packData). */
export type WireWrite =
  | ({ op: 'push'; path: string; data: PackedValue } & Pick<Ownership, 'lease' | 'persistent'>)
  | ({ op: 'put'; path: string; data: PackedValue; keep?: number } & Pick<Ownership, 'lease' | 'ephemeral'>)
  | { op: 'delete'; path: string; index: number }
  | { op: 'clear'; path: string };

export interface WireCompare {
  path: string;
  target: 'newest' | 'length' | 'exists';
  cmp: '=' | '!=' | '<' | '>';
  /** exists: 1 (true) or 0 (false). */
  value: number;
}

export interface PutRequest extends Pick<Ownership, 'lease' | 'ephemeral'> {
  path: string;
  data: PackedValue;
  keep?: number;
  ifLastIndex?: number;
}

export interface TxnRequest {
  compare: WireCompare[];
  success: WireWrite[];
  failure: WireWrite[];
}

export interface PutResult {
  readonly item: Item;
  /** Items the put removed from the list. */
  readonly deleted: number;
}

export type TxnResult =
  | { readonly op: 'push'; readonly item: Item }
  | { readonly op: 'put'; readonly item: Item; readonly deleted: number }
  | { readonly op: 'delete' }
  | { readonly op: 'clear'; readonly deleted: number };

function at<T>(where: string, build: () => T): T {
  try {
    return build();
  } catch (err) {
    if (err instanceof VeraError) throw new VeraError(err.code, `${where}: ${err.message}`);
    throw err;
  }
}

/** Who owns what a put or push writes: a lease, this session (ephemeral), or nobody (persistent). */
function owner(f: Fields, ephemeralByDefault: boolean): Ownership {
  const flag = ephemeralByDefault ? 'persistent' : 'ephemeral';
  const set = boolField(f, flag);
  if (f.lease !== undefined) {
    const problem = leaseProblem(f.lease);
    if (problem !== null) throw invalid(problem);
    if (set !== undefined) throw invalid(`lease and ${flag} cannot go together: a leased item lives as long as its lease`);
    return { lease: f.lease as string };
  }
  return set === undefined ? {} : { [flag]: set };
}

function keep(f: Fields): number | undefined {
  const v = uintField(f, 'keep');
  if (v !== undefined && (v < 1 || v > MAX_PUT_KEEP)) throw invalid(`keep must be 1 to ${MAX_PUT_KEEP}, got ${v}`);
  return v;
}

function write(raw: unknown, where: string, limits: ProtocolLimits): WireWrite {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid(`${where} must be a map`);
  const w = raw as Fields;
  return at(where, (): WireWrite => {
    const path = pathField(w, false, limits);
    switch (w.op) {
      case 'push':
        onlyFields(w, ['path', 'data', 'persistent', 'lease']);
        return { op: 'push', path, data: packData(dataField(w, limits), limits), ...owner(w, true) };
      case 'put': {
        onlyFields(w, ['path', 'data', 'keep', 'ephemeral', 'lease']);
        const k = keep(w);
        return { op: 'put', path, data: packData(dataField(w, limits), limits), ...(k === undefined ? {} : { keep: k }), ...owner(w, false) };
      }
      case 'delete': {
        onlyFields(w, ['path', 'index']);
        const index = uintField(w, 'index');
        if (index === undefined || index < 1) throw invalid('index must be the positive index of an item');
        return { op: 'delete', path, index };
      }
      case 'clear':
        onlyFields(w, ['path']);
        return { op: 'clear', path };
      default:
        throw invalid('op must be push, put, delete or clear');
    }
  });
}

function writes(f: Fields, field: 'success' | 'failure', limits: ProtocolLimits): WireWrite[] {
  const list = f[field] ?? [];
  if (!Array.isArray(list) || list.length > MAX_TXN_WRITES) throw invalid(`${field} must be an array of at most ${MAX_TXN_WRITES} writes`);
  const out = list.map((w: unknown, i) => write(w, `${field}[${i}]`, limits));
  const paths = new Set<string>();
  for (const w of out) {
    if (paths.has(w.path)) throw invalid(`${field} writes ${String(w.path)} twice: a branch writes each list once`);
    paths.add(w.path);
  }
  return out;
}

const isTarget = (v: unknown): v is WireCompare['target'] => TARGETS.includes(v as string);
const isComparison = (v: unknown): v is WireCompare['cmp'] => COMPARISONS.includes(v as string);

function compares(f: Fields, limits: ProtocolLimits): WireCompare[] {
  const list = f.compare ?? [];
  if (!Array.isArray(list) || list.length > MAX_TXN_COMPARES) throw invalid(`compare must be an array of at most ${MAX_TXN_COMPARES} compares`);
  return list.map((raw: unknown, i) => {
    const where = `compare[${i}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid(`${where} must be a map`);
    const c = raw as Fields;
    return at(where, (): WireCompare => {
      onlyFields(c, ['path', 'target', 'cmp', 'value']);
      const path = pathField(c, false, limits);
      const target = c.target;
      if (!isTarget(target)) throw invalid(`target must be one of ${TARGETS.join(', ')}`);
      const cmp = c.cmp ?? '=';
      if (!isComparison(cmp)) throw invalid(`cmp must be one of ${COMPARISONS.join(' ')}`);
      const value = target === 'exists' && typeof c.value === 'boolean' ? (c.value ? 1 : 0) : uintField(c, 'value');
      if (value === undefined) throw invalid(target === 'exists' ? 'value must be true or false' : 'value must be a non-negative integer');
      return { path, target, cmp, value };
    });
  });
}

/** The kv family's ops, as the client and the server both check them (named before ops carried a family: put, txn). */
export const KV_SCHEMAS = {
  put: defineOp<PutRequest, PutResult>({
    name: 'put',
    unprefixed: true,
    fields: ['path', 'data', 'keep', 'ifLastIndex', 'ephemeral', 'lease'],
    parse: (f, limits) => {
      const path = pathField(f, false, limits);
      const k = keep(f);
      const ifLastIndex = uintField(f, 'ifLastIndex');
      return {
        path,
        data: packData(dataField(f, limits), limits),
        ...(k === undefined ? {} : { keep: k }),
        ...(ifLastIndex === undefined ? {} : { ifLastIndex }),
        ...owner(f, false),
      };
    },
  }),
  txn: defineOp<TxnRequest, { succeeded: boolean; results: TxnResult[] }>({
    name: 'txn',
    unprefixed: true,
    fields: ['compare', 'success', 'failure'],
    parse: (f, limits) => ({ compare: compares(f, limits), success: writes(f, 'success', limits), failure: writes(f, 'failure', limits) }),
  }),
};

/** The ops' request builders, by op name (the frame decoder's view of the same schemas). */
export const KV_OPS: ReadonlyMap<string, RequestBuilder> = buildersOf(Object.values(KV_SCHEMAS));
