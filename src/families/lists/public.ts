// What other families may use of the lists family (docs/architecture.md "A family's
// public surface"): its state and commands (kv's txn plans pushes and deletes through
// it), an item and a change, the item bucket's layout and codec (hibernation freezes a
// unit's items, range pages through them, observe reads a session's reverse index),
// and the reads of one list and of a path's children.
export { lists, type PushCommand, type PushQuota } from './index.js';
export { type ChangeEvent, type Item, wireItem, wireItems } from './item.js';
export { clientDataKey, clientDataRange, decodeClientDataKey, decodeItemKey, itemKey, itemRange, itemSeekKey } from './keys.js';
export { decodeChargedItem, decodeItemValue } from './codec.js';
export { readListWithin } from './reads.js';
export { childrenStep } from './queries.js';
export type { ListsState } from './state.js';
