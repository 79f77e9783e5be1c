// The lists family's stored values: 0x0003 item value { owner, data, user? }
// (the index and path are in the key), and 0x0005's empty value.
import { CorruptValueError, decodeMap, pack } from '../../statemachine/codec.js';

/** A 0x0005 client-data key's value: the key's presence is the whole fact. */
export const CLIENT_DATA_VALUE: Buffer = Buffer.alloc(0);

export interface StoredItem {
  readonly owner: string | null;
  readonly data: unknown;
}

/**
 * `user`: who is charged for the item (command version 9; quota family), written only
 * when there is one, so items written before re-encode to the same bytes. Readers
 * never see it: decodeItemValue leaves it out, so no client is shown who wrote an item.
 */
export function encodeItemValue(item: StoredItem, user?: string): Buffer {
  return pack(user === undefined ? { owner: item.owner, data: item.data } : { owner: item.owner, data: item.data, user });
}

/** An item's stored value and the user it charges (see encodeItemValue), if any: for apply, never for a reader. */
export function decodeChargedItem(bytes: Uint8Array): { readonly item: StoredItem; readonly user: string | undefined } {
  const v = decodeMap(bytes, 'item');
  if (v.owner !== null && typeof v.owner !== 'string') throw new CorruptValueError('item owner is not a string or null');
  if (v.user !== undefined && typeof v.user !== 'string') throw new CorruptValueError('item user is not a string');
  return { item: { owner: v.owner, data: v.data }, user: v.user };
}

export function decodeItemValue(bytes: Uint8Array): StoredItem {
  const v = decodeMap(bytes, 'item');
  if (v.owner !== null && typeof v.owner !== 'string') throw new CorruptValueError('item owner is not a string or null');
  return { owner: v.owner, data: v.data };
}
