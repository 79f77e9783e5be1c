// The one list of command families. Adding a capability is a folder under
// src/families and one line here; the store kernel, the entry codec and the
// state machine's loaders know families only through this list.
import { Bucket } from '../keys/index.js';
import { cluster } from './cluster/index.js';
import { assign } from './assign/index.js';
import { audit } from './audit/index.js';
import { auth } from './auth/index.js';
import { hibernate } from './hibernate/index.js';
import { journal } from './journal/index.js';
import { kv } from './kv/index.js';
import { lease } from './lease/index.js';
import { range } from './range/index.js';
import type { AnyFamily, Registry } from '../statemachine/family.js';
import { decodeEntryCommand } from './commands.js';
import { lag } from './lag/index.js';
import { lists } from './lists/index.js';
import { observe } from './observe/index.js';
import { sessions } from './sessions/index.js';
import { watches } from './watches/index.js';
import { quota } from './quota/index.js';
import { counter } from './counter/index.js';

export const FAMILIES: readonly AnyFamily[] = [sessions, lists, watches, lag, cluster, journal, assign, hibernate, auth, audit, observe, lease, kv, range, quota, counter];

/** What the store kernel is handed at open: the families and the entry codec that picks one. */
export const REGISTRY: Registry = { families: FAMILIES, decodeEntry: decodeEntryCommand };

/** Buckets that belong to no family: properties, the store's own keys, the Raft log. */
export const KERNEL_BUCKETS = [Bucket.property, Bucket.internal, Bucket.log] as const;

/**
 * The command version this build can apply: the highest `since` of any family, op
 * or op field. An entry that needs more stops the member rather than being skipped.
 */
export const COMMAND_VERSION = Math.max(...FAMILIES.flatMap((f) => [f.since, ...Object.values(f.ops).flatMap((op) => [op.since, ...Object.values(op.fieldsSince ?? {})])]));

/**
 * Entries written before the envelope named no family, only an op: the ops of the
 * four families Vera had then, whose names are therefore unique for good. Frozen:
 * no family or op added since may be named this way.
 */
export const LEGACY_OPS: ReadonlyMap<string, AnyFamily> = legacyOps([sessions, lists, watches, lag]);

export const FAMILY_BY_NAME: ReadonlyMap<string, AnyFamily> = byName(FAMILIES);

function byName(families: readonly AnyFamily[]): Map<string, AnyFamily> {
  const out = new Map<string, AnyFamily>();
  for (const f of families) {
    if (out.has(f.name)) throw new Error(`two command families are named ${f.name}`);
    out.set(f.name, f);
  }
  checkBuckets(families);
  return out;
}

function legacyOps(families: readonly AnyFamily[]): Map<string, AnyFamily> {
  const out = new Map<string, AnyFamily>();
  for (const f of families) {
    // Ops these families gained later (sessions' attachSession) name their family, as every newer op does.
    for (const op of Object.keys(f.ops).filter((name) => f.ops[name]!.since === 1)) {
      if (out.has(op)) throw new Error(`op ${op} is in both ${out.get(op)!.name} and ${f.name}`);
      out.set(op, f);
    }
  }
  return out;
}

/** No bucket is claimed twice, by two families or by a family and the kernel. */
export function checkBuckets(families: readonly AnyFamily[]): void {
  const owner = new Map<number, string>(KERNEL_BUCKETS.map((id) => [id, 'the kernel']));
  for (const f of families) {
    for (const b of f.buckets) {
      const taken = owner.get(b.id);
      if (taken !== undefined) throw new Error(`bucket 0x${b.id.toString(16).padStart(4, '0')} of ${f.name} is already ${taken}'s`);
      owner.set(b.id, f.name);
    }
  }
}
