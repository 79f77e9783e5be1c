// The kv family's commands: a transaction of compares and writes across lists,
// applied all or nothing in one entry (etcd's txn, ZooKeeper's multi). `put` is a
// transaction too (one put, maybe one compare), so there is one command.
import { MAX_INDEX } from '../../keys/index.js';
import { CommandError } from '../../statemachine/family.js';
import { integerField, pathField, quotaField, sessionField } from '../fields.js';
import type { PushQuota } from '../lists/public.js';
import type { StorageLimits } from '../../kit/index.js';

/** What a compare reads of a list: its newest index (0 when empty), its length, or whether it has items (1 or 0). */
export type CompareTarget = 'newest' | 'length' | 'exists';
export type Comparison = '=' | '!=' | '<' | '>';

export interface Compare {
  readonly path: string;
  readonly target: CompareTarget;
  readonly cmp: Comparison;
  readonly value: number;
}

/**
 * A write: `owner` is who owns a pushed item (a session or lease id; null: persistent).
 * `keep` for a put: the items the list holds after it, the new one included (1: only it).
 */
export type Write =
  | { readonly op: 'push'; readonly path: string; readonly data: unknown; readonly owner: string | null }
  | { readonly op: 'put'; readonly path: string; readonly data: unknown; readonly owner: string | null; readonly keep: number }
  | { readonly op: 'delete'; readonly path: string; readonly index: number }
  | { readonly op: 'clear'; readonly path: string };

export interface TxnCommand {
  readonly op: 'txn';
  /** The session that asked: it must be live, and a delete may remove its own items and persistent ones. */
  readonly session: string;
  readonly compare: readonly Compare[];
  readonly success: readonly Write[];
  readonly failure: readonly Write[];
  /** The leader's limits, judged in apply (as a push's are). */
  readonly quota: PushQuota;
  /** The leader's default limits per user (command version 9): added items are charged to the asker's user. */
  readonly userQuota?: StorageLimits;
}

export type KvCommand = TxnCommand;

/** Compares and writes one transaction may hold, at most (etcd's default is 128 operations). */
export const MAX_COMPARES = 64;
export const MAX_WRITES = 64;
/** The most items a put may keep. */
export const MAX_KEEP = 1000;

const TARGETS: readonly CompareTarget[] = ['newest', 'length', 'exists'];
const COMPARISONS: readonly Comparison[] = ['=', '!=', '<', '>'];

function map(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new CommandError(`${what} must be a map`);
  return value as Record<string, unknown>;
}

function list(value: unknown, what: string, max: number): unknown[] {
  if (!Array.isArray(value) || value.length > max) throw new CommandError(`${what} must be an array of at most ${max}`);
  return value;
}

function compareField(raw: unknown, i: number): Compare {
  const c = map(raw, `compare[${i}]`);
  if (!TARGETS.includes(c.target as CompareTarget)) throw new CommandError(`compare[${i}].target must be one of ${TARGETS.join(', ')}`);
  if (!COMPARISONS.includes(c.cmp as Comparison)) throw new CommandError(`compare[${i}].cmp must be one of ${COMPARISONS.join(' ')}`);
  return { path: pathField(c.path, false), target: c.target as CompareTarget, cmp: c.cmp as Comparison, value: integerField(c.value, `compare[${i}].value`, 0, MAX_INDEX) };
}

function ownerField(value: unknown): string | null {
  return value === null ? null : sessionField(value);
}

function writeField(raw: unknown, where: string): Write {
  const w = map(raw, where);
  const path = pathField(w.path, false);
  switch (w.op) {
    case 'push':
      if (w.data === undefined) throw new CommandError(`${where} needs data`);
      return { op: 'push', path, data: w.data, owner: ownerField(w.owner) };
    case 'put':
      if (w.data === undefined) throw new CommandError(`${where} needs data`);
      return { op: 'put', path, data: w.data, owner: ownerField(w.owner), keep: integerField(w.keep, `${where}.keep`, 1, MAX_KEEP) };
    case 'delete':
      return { op: 'delete', path, index: integerField(w.index, `${where}.index`, 1, MAX_INDEX) };
    case 'clear':
      return { op: 'clear', path };
    default:
      throw new CommandError(`${where}.op must be push, put, delete or clear`);
  }
}

function writesField(value: unknown, what: string): Write[] {
  const writes = list(value, what, MAX_WRITES).map((w, i) => writeField(w, `${what}[${i}]`));
  const paths = new Set<string>();
  for (const w of writes) {
    if (paths.has(w.path)) throw new CommandError(`${what} writes ${w.path} twice (one write per list in a branch)`);
    paths.add(w.path);
  }
  return writes;
}

export function decodeTxn(c: Readonly<Record<string, unknown>>): TxnCommand {
  return {
    op: 'txn',
    session: sessionField(c.session),
    compare: list(c.compare, 'compare', MAX_COMPARES).map(compareField),
    success: writesField(c.success, 'success'),
    failure: writesField(c.failure, 'failure'),
    quota: quotaField(c.quota, ['watches', 'items', 'bytes', 'listItems']),
    ...(c.userQuota === undefined ? {} : { userQuota: quotaField(c.userQuota, ['items', 'bytes']) }),
  };
}
