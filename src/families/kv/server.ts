// put and txn on the leader: their paths pass every family's path guard before
// they run (runFamilyOp: a hibernated list thaws first), a lease named as an owner must be the caller's, and the
// command carries the leader's limits so apply judges them as it judges a push.
import { VeraError, type FamilyRequest, type FamilyResult } from '../../protocol/index.js';
import type { Need } from '../../server/guard/access.js';
import { expectOk, type FrontEnd } from '../../server/front/context.js';
import { familyOps, proposeTimed, type FamilyOpCall, type ServerPart } from '../../server/front/family-part.js';
import { wireItem } from '../../server/front/ops.js';
import { usableLease } from '../lease/server.js';
import { lists } from '../lists/index.js';
import type { TxnValue, WriteResult } from './apply.js';
import type { Compare, TxnCommand, Write } from './commands.js';
import { KV_OPS } from './wire.js';
import { userQuotaField } from '../quota/propose.js';

type Fields = Readonly<Record<string, unknown>>;

/** Who owns an item this write adds: its lease, the session (ephemeral) or none (persistent). */
function ownerOf(fe: FrontEnd, session: string, w: Fields, ephemeralByDefault: boolean): string | null {
  if (typeof w.lease === 'string') {
    usableLease(fe, session, w.lease);
    return w.lease;
  }
  const ephemeral = ephemeralByDefault ? w.persistent !== true : w.ephemeral === true;
  return ephemeral ? session : null;
}

function toWrite(fe: FrontEnd, session: string, w: Fields): Write {
  const path = w.path as string;
  switch (w.op) {
    case 'push':
      return { op: 'push', path, data: w.data, owner: ownerOf(fe, session, w, true) };
    case 'put':
      return { op: 'put', path, data: w.data, owner: ownerOf(fe, session, w, false), keep: (w.keep as number | undefined) ?? 1 };
    case 'delete':
      return { op: 'delete', path, index: w.index as number };
    default:
      return { op: 'clear', path };
  }
}

async function run(fe: FrontEnd, session: string, compare: readonly Compare[], success: readonly Write[], failure: readonly Write[]): Promise<TxnValue> {
  const { watchesPerSession, itemsPerSession, bytesPerSession, itemsPerList } = fe.limits;
  const command: TxnCommand = {
    op: 'txn',
    session,
    compare,
    success,
    failure,
    quota: { watches: watchesPerSession, items: itemsPerSession, bytes: bytesPerSession, listItems: itemsPerList },
    ...userQuotaField(fe),
  };
  const r = expectOk(await proposeTimed(fe, { family: 'kv', ...command }));
  if (r.op !== 'family' || r.family !== 'kv') throw new VeraError('INTERNAL', `txn applied as ${r.op}`);
  return r.value as TxnValue;
}

function wireResult(r: WriteResult): Record<string, unknown> {
  if (r.op === 'push') return { op: 'push', item: wireItem(r.item) };
  if (r.op === 'put') return { op: 'put', item: wireItem(r.item), deleted: r.deleted };
  return { ...r };
}

const handlers: Record<string, (call: FamilyOpCall) => Promise<FamilyResult>> = {
  put: async ({ fe, session, request: r, frameBytes }) => {
    fe.disk.admit(frameBytes);
    const path = r.path as string;
    const ifLastIndex = r.ifLastIndex as number | undefined;
    const compare: Compare[] = ifLastIndex === undefined ? [] : [{ path, target: 'newest', cmp: '=', value: ifLastIndex }];
    const value = await run(fe, session, compare, [toWrite(fe, session, { ...r, op: 'put' })], []);
    if (!value.succeeded) {
      const newest = fe.node.stateMachine.stateOf(lists).lastIndexOf(path);
      throw new VeraError('CONFLICT', `newest index of ${path} is ${newest}, not ${ifLastIndex}`);
    }
    const put = value.results[0]!;
    if (put.op !== 'put') throw new VeraError('INTERNAL', `put gave a ${put.op} result`);
    return { item: wireItem(put.item), deleted: put.deleted };
  },
  txn: async ({ fe, session, request: r, frameBytes }) => {
    fe.disk.admit(frameBytes);
    const list = (field: 'success' | 'failure'): Write[] => (r[field] as Fields[]).map((w) => toWrite(fe, session, w));
    const value = await run(fe, session, r.compare as Compare[], list('success'), list('failure'));
    return { succeeded: value.succeeded, results: value.results.map(wireResult) };
  },
};

const NEEDS: Record<string, (request: FamilyRequest) => readonly Need[]> = {
  put: (r) => [{ perm: 'write', resource: r.path as string }],
  // A compare reads its list; a write (in either branch) writes its list.
  txn: (r) => [
    ...(r.compare as Fields[]).map((c): Need => ({ perm: 'read', resource: c.path as string })),
    ...[...(r.success as Fields[]), ...(r.failure as Fields[])].map((w): Need => ({ perm: 'write', resource: w.path as string })),
  ],
};

export const server: ServerPart = { protocolOps: familyOps('kv', KV_OPS, handlers, NEEDS) };
