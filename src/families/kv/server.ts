// put and txn on the leader, on the kit: their paths pass every family's path guard
// before they run (Plugin.touches: a hibernated list thaws first), a lease named as an
// owner must be the caller's, and the command carries the leader's limits so apply
// judges them as it judges a push.
import { VeraError } from '../../protocol/index.js';
import type { FamilyHost, PathAccess, Plugin, PluginNeed, PluginServer } from '../../kit/index.js';
import { wireItem, lists } from '../lists/public.js';
import { usableLease } from '../lease/public.js';
import type { TxnValue, WriteResult } from './apply.js';
import type { Compare, TxnCommand, Write } from './commands.js';
import { KV_SCHEMAS, type TxnResult, type WireWrite } from './wire.js';
import { userQuotaFor } from '../../kit/index.js';

type Ops = typeof KV_SCHEMAS;
type Host = FamilyHost<unknown, TxnValue, TxnCommand>;

function wireResult(r: WriteResult): TxnResult {
  if (r.op === 'push') return { op: 'push', item: wireItem(r.item) };
  if (r.op === 'put') return { op: 'put', item: wireItem(r.item), deleted: r.deleted };
  return { ...r };
}

function createServer(host: Host): PluginServer<Ops> {
  /** Who owns an item this write adds: its lease, the session (ephemeral) or none (persistent). */
  const ownerOf = (session: string, w: { lease?: string; persistent?: boolean; ephemeral?: boolean }, ephemeralByDefault: boolean): string | null => {
    if (w.lease !== undefined) {
      usableLease(host.reader, session, w.lease);
      return w.lease;
    }
    const ephemeral = ephemeralByDefault ? w.persistent !== true : w.ephemeral === true;
    return ephemeral ? session : null;
  };

  const toWrite = (session: string, w: WireWrite): Write => {
    switch (w.op) {
      case 'push':
        return { op: 'push', path: w.path, data: w.data, owner: ownerOf(session, w, true) };
      case 'put':
        return { op: 'put', path: w.path, data: w.data, owner: ownerOf(session, w, false), keep: w.keep ?? 1 };
      case 'delete':
        return { op: 'delete', path: w.path, index: w.index };
      default:
        return { op: 'clear', path: w.path };
    }
  };

  const run = (session: string, compare: readonly Compare[], success: readonly Write[], failure: readonly Write[]): Promise<TxnValue> => {
    const { watchesPerSession, itemsPerSession, bytesPerSession, itemsPerList } = host.limits;
    return host.propose({
      op: 'txn',
      session,
      compare,
      success,
      failure,
      quota: { watches: watchesPerSession, items: itemsPerSession, bytes: bytesPerSession, listItems: itemsPerList },
      ...userQuotaFor(host.commandVersion(), host.userLimits),
    });
  };

  return {
    handlers: {
      put: async (r, { session, frameBytes }) => {
        host.admitWrite(frameBytes);
        const { path, ifLastIndex } = r;
        const compare: Compare[] = ifLastIndex === undefined ? [] : [{ path, target: 'newest', cmp: '=', value: ifLastIndex }];
        const value = await run(session, compare, [toWrite(session, { ...r, op: 'put' })], []);
        if (!value.succeeded) {
          const newest = host.reader.stateOf(lists).lastIndexOf(path);
          throw new VeraError('CONFLICT', `newest index of ${path} is ${newest}, not ${ifLastIndex}`);
        }
        const put = value.results[0]!;
        if (put.op !== 'put') throw new VeraError('INTERNAL', `put gave a ${put.op} result`);
        return { item: wireItem(put.item), deleted: put.deleted };
      },
      txn: async (r, { session, frameBytes }) => {
        host.admitWrite(frameBytes);
        const value = await run(
          session,
          r.compare,
          r.success.map((w) => toWrite(session, w)),
          r.failure.map((w) => toWrite(session, w)),
        );
        return { succeeded: value.succeeded, results: value.results.map(wireResult) };
      },
    },
  };
}

const NEEDS = {
  put: ({ path }: { path: string }): readonly PluginNeed[] => [{ perm: 'write', resource: path }],
  // A compare reads its list; a write (in either branch) writes its list.
  txn: (r: { compare: ReadonlyArray<{ path: string }>; success: ReadonlyArray<{ path: string }>; failure: ReadonlyArray<{ path: string }> }): readonly PluginNeed[] => [
    ...r.compare.map((c): PluginNeed => ({ perm: 'read', resource: c.path })),
    ...[...r.success, ...r.failure].map((w): PluginNeed => ({ perm: 'write', resource: w.path })),
  ],
};

/** The lists a request reads and writes, as its needs name them (each path and use once, in order). */
function touchedBy(needs: readonly PluginNeed[]): readonly PathAccess[] {
  const out: PathAccess[] = [];
  for (const need of needs) {
    if (need.perm !== 'read' && need.perm !== 'write') continue;
    if (!out.some((a) => a.path === need.resource && a.use === need.perm)) out.push({ path: need.resource, use: need.perm, stale: false });
  }
  return out;
}

export const plugin: Plugin<Ops, unknown, TxnValue, TxnCommand> = {
  ops: KV_SCHEMAS,
  needs: NEEDS,
  touches: {
    put: (r) => touchedBy(NEEDS.put(r)),
    txn: (r) => touchedBy(NEEDS.txn(r)),
  },
  touchesNoLists: 'every op declares the lists it touches',
  createServer,
};
