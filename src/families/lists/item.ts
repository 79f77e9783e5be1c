// An item of a list and a change to one: the lists family's shapes, which watches, kv,
// the notifier and the event log read too. The kernel carries a plan's events to the
// applied outcome without reading them; it names them through its EventSlot, which
// this file fills in by declaration merging, so the kernel names no family's type.

import type { Item as WireItem } from '../../protocol/index.js';

/** An item of a list (PROTOCOL.md "Paths and data"). */
export interface Item {
  readonly index: number;
  /** The owning session, or null for a persistent item. */
  readonly owner: string | null;
  readonly data: unknown;
}

/** Stored items hold whatever value the client sent, which the protocol layer validated as JSON-compatible. */
export function wireItem(item: Item): WireItem {
  return item as WireItem;
}

export function wireItems(items: readonly Item[]): WireItem[] {
  return items as WireItem[];
}

export interface ChangeEvent {
  /** The index of the entry that made the change. */
  readonly index: number;
  readonly type: 'push' | 'delete';
  readonly path: string;
  readonly item: Item;
}

declare module '../../statemachine/types.js' {
  interface EventSlot {
    readonly event: ChangeEvent;
  }
}
