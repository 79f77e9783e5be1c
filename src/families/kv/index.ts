// The kv family: setting a list's value in one entry (put: replace the list with
// one item, or keep the newest N, with compare-and-set), and transactions of
// compares and writes across lists applied all or nothing in one entry (txn, as
// etcd's txn and ZooKeeper's multi). Items are the lists family's: watchers see
// puts and txns as the pushes and deletes they are. See docs/kv.md.
import type { Family } from '../../statemachine/family.js';
import { decodeTxn, type KvCommand } from './commands.js';
import { planTxn } from './apply.js';
import { USER_QUOTA_SINCE } from '../../kit/index.js';

/** The command version that brought put and txn. */
export const KV_SINCE = 8;

export const kv: Family<KvCommand, null> = {
  name: 'kv',
  since: KV_SINCE,
  buckets: [],
  ops: {
    txn: { fields: ['session', 'compare', 'success', 'failure', 'quota', 'userQuota'], since: KV_SINCE, fieldsSince: { userQuota: USER_QUOTA_SINCE }, decode: decodeTxn },
  },
  load: async () => null,
  plan: (command, ctx) => planTxn(command, ctx),
  // Compares and removals read the db itself.
  goesAlone: () => true,
  // Both branches' writes: the list guards judge an entry before its compares decide which runs.
  listsUsedBy: (command) => [...command.compare.map((c) => c.path), ...command.success.map((w) => w.path), ...command.failure.map((w) => w.path)],
  plugin: async () => (await import('./server.js')).plugin,
};
