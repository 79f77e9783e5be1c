// Choosing a node for a new assignment, as Tokenserver does (its get_best_node
// and release-capacity queries in syncstorage-rs's tokenserver-db), but as a
// pure function of the nodes' records: every member runs it inside the same
// entry with the same inputs, so every member chooses the same node.
import type { NodeRecord, ServiceSettings } from './records.js';

/** Rounds of "look, release capacity, look again" before giving up (Tokenserver's bound is 5 too). */
export const ALLOCATION_ROUNDS = 5;

/** A node that may take a new user: free slots, room under capacity, up, not backing off. */
export function eligible(n: NodeRecord): boolean {
  return n.available > 0 && n.capacity > n.load && !n.downed && n.backoff === 0;
}

/**
 * How loaded a node is: log(load) / log(capacity). SQL's LOG(0) is NULL and MySQL
 * sorts NULL first in ascending order, so an empty node comes before any loaded one;
 * here that is -Infinity. (capacity 1 divides by log(1) = 0, but such a node is
 * eligible only while empty.) Math.log is V8's own port of fdlibm, the same bits on
 * every platform, so members agree on the order.
 */
export function loadRatio(n: NodeRecord): number {
  return n.load === 0 ? -Infinity : Math.log(n.load) / Math.log(n.capacity);
}

/** Eligible nodes, least loaded first; equal ratios by node URL so the order is total. */
export function rankNodes(nodes: ReadonlyMap<string, NodeRecord>): string[] {
  const ranked: Array<{ name: string; ratio: number }> = [];
  for (const [name, n] of nodes) if (eligible(n)) ranked.push({ name, ratio: loadRatio(n) });
  ranked.sort((a, b) => (a.ratio !== b.ratio ? a.ratio - b.ratio : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return ranked.map((r) => r.name);
}

/**
 * Capacity released on every node that is up, has no free slot and has room under
 * its capacity: available = min(capacity x rate, capacity - load), at least one slot
 * (Tokenserver's column rounds, which left a node with capacity under 5 stuck at 0).
 */
export function releaseCapacity(n: NodeRecord, rate: number): NodeRecord {
  if (n.downed || n.available > 0 || n.capacity <= n.load) return n;
  return { ...n, available: Math.min(Math.max(1, Math.ceil(n.capacity * rate)), n.capacity - n.load) };
}

export type Allocation = { readonly node: string; readonly nodes: ReadonlyMap<string, NodeRecord> } | { readonly node: null; readonly nodes: ReadonlyMap<string, NodeRecord> };

/**
 * The node a new record goes to and the nodes' records after it (available - 1, and
 * any capacity released on the way; the load follows from the record itself). `pick` (the leader's random number)
 * chooses among the best `topN`; with topN 1 the least loaded node always wins.
 * `node: null` when no node qualifies even after releasing capacity; the
 * released capacity is still returned (Tokenserver commits it too).
 */
export function allocate(nodes: ReadonlyMap<string, NodeRecord>, settings: ServiceSettings, pick: number): Allocation {
  let current: Map<string, NodeRecord> = new Map(nodes);
  for (let round = 0; round < ALLOCATION_ROUNDS; round++) {
    const ranked = rankNodes(current);
    if (ranked.length > 0) {
      const chosen = ranked[pick % Math.min(settings.topN, ranked.length)]!;
      const n = current.get(chosen)!;
      // Its load goes up with the new current record (tx.ts derives load from records).
      current.set(chosen, { ...n, available: Math.max(n.available - 1, 0) });
      return { node: chosen, nodes: current };
    }
    let released = false;
    const next = new Map<string, NodeRecord>();
    for (const [name, n] of current) {
      const after = releaseCapacity(n, settings.releaseRate);
      if (after !== n) released = true;
      next.set(name, after);
    }
    current = next;
    if (!released) break; // nothing more to release: looking again would find the same
  }
  return { node: null, nodes: current };
}
