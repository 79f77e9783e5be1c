// The kv family's client protocol (docs/protocol.md, "Extension: put and
// transactions"). Imports only the protocol package, so the client refuses a
// bad request with the server's own words before sending it.
import { boolField, dataField, invalid, onlyFields, packData, pathField, uintField, VeraError, type FamilyRequest, type ProtocolLimits, type RequestBuilder } from '../../protocol/index.js';
import { leaseProblem } from '../lease/wire.js';

/** Compares and writes one transaction may hold, at most (mirrors commands.ts, which checks entries). */
export const MAX_TXN_COMPARES = 64;
export const MAX_TXN_WRITES = 64;
export const MAX_PUT_KEEP = 1000;
const TARGETS = ['newest', 'length', 'exists'];
const COMPARISONS = ['=', '!=', '<', '>'];

type Fields = Readonly<Record<string, unknown>>;

function at(where: string, build: () => Record<string, unknown>): Record<string, unknown> {
  try {
    return build();
  } catch (err) {
    if (err instanceof VeraError) throw new VeraError(err.code, `${where}: ${err.message}`);
    throw err;
  }
}

/** Who owns what a put or push writes: a lease, this session (ephemeral), or nobody (persistent). */
function owner(f: Fields, ephemeralByDefault: boolean): Record<string, unknown> {
  const flag = ephemeralByDefault ? 'persistent' : 'ephemeral';
  const set = boolField(f, flag);
  if (f.lease !== undefined) {
    const problem = leaseProblem(f.lease);
    if (problem !== null) throw invalid(problem);
    if (set !== undefined) throw invalid(`lease and ${flag} cannot go together: a leased item lives as long as its lease`);
    return { lease: f.lease };
  }
  return set === undefined ? {} : { [flag]: set };
}

function keep(f: Fields): number | undefined {
  const v = uintField(f, 'keep');
  if (v !== undefined && (v < 1 || v > MAX_PUT_KEEP)) throw invalid(`keep must be 1 to ${MAX_PUT_KEEP}, got ${v}`);
  return v;
}

function write(raw: unknown, where: string, limits: ProtocolLimits): Record<string, unknown> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid(`${where} must be a map`);
  const w = raw as Fields;
  return at(where, () => {
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

function writes(f: Fields, field: 'success' | 'failure', limits: ProtocolLimits): Array<Record<string, unknown>> {
  const list = f[field] ?? [];
  if (!Array.isArray(list) || list.length > MAX_TXN_WRITES) throw invalid(`${field} must be an array of at most ${MAX_TXN_WRITES} writes`);
  const out = list.map((w: unknown, i) => write(w, `${field}[${i}]`, limits));
  const paths = new Set<string>();
  for (const w of out) {
    if (paths.has(w.path as string)) throw invalid(`${field} writes ${String(w.path)} twice: a branch writes each list once`);
    paths.add(w.path as string);
  }
  return out;
}

function compares(f: Fields, limits: ProtocolLimits): Array<Record<string, unknown>> {
  const list = f.compare ?? [];
  if (!Array.isArray(list) || list.length > MAX_TXN_COMPARES) throw invalid(`compare must be an array of at most ${MAX_TXN_COMPARES} compares`);
  return list.map((raw: unknown, i) => {
    const where = `compare[${i}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid(`${where} must be a map`);
    const c = raw as Fields;
    return at(where, () => {
      onlyFields(c, ['path', 'target', 'cmp', 'value']);
      const path = pathField(c, false, limits);
      if (!TARGETS.includes(c.target as string)) throw invalid(`target must be one of ${TARGETS.join(', ')}`);
      const cmp = c.cmp ?? '=';
      if (!COMPARISONS.includes(cmp as string)) throw invalid(`cmp must be one of ${COMPARISONS.join(' ')}`);
      const value = c.target === 'exists' && typeof c.value === 'boolean' ? (c.value ? 1 : 0) : uintField(c, 'value');
      if (value === undefined) throw invalid(c.target === 'exists' ? 'value must be true or false' : 'value must be a non-negative integer');
      return { path, target: c.target, cmp, value };
    });
  });
}

export const KV_OPS: ReadonlyMap<string, RequestBuilder> = new Map<string, RequestBuilder>([
  [
    'put',
    (f, id, limits): FamilyRequest => {
      onlyFields(f, ['path', 'data', 'keep', 'ifLastIndex', 'ephemeral', 'lease']);
      const path = pathField(f, false, limits);
      const k = keep(f);
      const ifLastIndex = uintField(f, 'ifLastIndex');
      return {
        id,
        op: 'put',
        path,
        data: packData(dataField(f, limits), limits),
        ...(k === undefined ? {} : { keep: k }),
        ...(ifLastIndex === undefined ? {} : { ifLastIndex }),
        ...owner(f, false),
      };
    },
  ],
  [
    'txn',
    (f, id, limits): FamilyRequest => {
      onlyFields(f, ['compare', 'success', 'failure']);
      return { id, op: 'txn', compare: compares(f, limits), success: writes(f, 'success', limits), failure: writes(f, 'failure', limits) };
    },
  ],
]);
