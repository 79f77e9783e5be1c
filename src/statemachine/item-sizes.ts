// The stored size of the items plans write or read, for what keeps their events in
// memory (the event log's history, src/server/node/event-log.ts): measuring them there
// would encode every event's data once more, on every member, for every change.
const sizes = new WeakMap<object, number>();

/** Records `item`'s stored size (its value's bytes) and returns it. */
export function withStoredSize<T extends object>(item: T, bytes: number): T {
  sizes.set(item, bytes);
  return item;
}

/** The stored size recorded for `item`, if a plan recorded one. */
export function storedSizeOf(item: object): number | undefined {
  return sizes.get(item);
}
