// The lists family's key layouts: 0x0003 list items, and 0x0005 the reverse index
// from a session to the ephemeral items it owns (see docs/storage.md).
import { assertKeyPath, assertSessionId, bucketKey, encodeIndex, KeyReader, SEP, SEP_END } from '../../keys/index.js';

/** The family's buckets (seed 003's numbers, docs/storage.md): the 2-byte prefix of each of its keys. */
export const ListsBucket = {
  /** list items: path, index -> the item. */
  item: 0x0003,
  /** a session's ephemeral items: session, path, index -> empty. */
  clientData: 0x0005,
} as const;

const ITEM = '/data';
const CLIENT_DATA = '/cdata/';

// ---------------------------------------------------------------- 0x0003 list items

export interface ItemRef {
  readonly path: string;
  readonly index: number;
}

/** List item: 0x0003 + '/data' + path + SEP + index8. */
export function itemKey(path: string, index: number): Buffer {
  assertKeyPath(path);
  return bucketKey(ListsBucket.item, ITEM, path, SEP, encodeIndex(index));
}

export function decodeItemKey(raw: Uint8Array): ItemRef {
  const reader = KeyReader.of(raw, ListsBucket.item, 'item');
  const ref = readItemRef(reader);
  reader.done();
  return ref;
}

function readItemRef(reader: KeyReader): ItemRef {
  reader.marker(ITEM);
  const path = reader.textToSep();
  if (!path.startsWith('/')) reader.fail("path does not start with '/'");
  return { path, index: reader.index() };
}

/** Every item of one list, in index order. */
export function itemRange(path: string): { gte: Buffer; lt: Buffer } {
  assertKeyPath(path);
  return { gte: bucketKey(ListsBucket.item, ITEM, path, SEP), lt: bucketKey(ListsBucket.item, ITEM, path, SEP_END) };
}

/**
 * The item-key bytes of every path that starts with `pathPrefix` begin with
 * this key, and no other item key does: a seek target for walking the tree of
 * lists (e.g. `ls`). `pathPrefix` may be any NUL-free text starting with '/'.
 */
export function itemSeekKey(pathPrefix: string): Buffer {
  assertKeyPath(pathPrefix);
  return bucketKey(ListsBucket.item, ITEM, pathPrefix);
}

// ---------------------------------------------------------------- 0x0005 client data (reverse index)

export interface ClientDataRef extends ItemRef {
  readonly session: string;
}

/**
 * Reverse index from a session to an ephemeral item it owns:
 * 0x0005 + '/cdata/' + id + SEP + (item key without its bucket prefix, i.e.
 * '/data' + path + SEP + index8), as in the seed's `/cdata/A|/data/foo/bar|0001`.
 */
export function clientDataKey(session: string, path: string, index: number): Buffer {
  assertSessionId(session);
  return Buffer.concat([bucketKey(ListsBucket.clientData, CLIENT_DATA, session, SEP), itemKey(path, index).subarray(2)]);
}

export function decodeClientDataKey(raw: Uint8Array): ClientDataRef {
  const reader = KeyReader.of(raw, ListsBucket.clientData, 'client data');
  reader.marker(CLIENT_DATA);
  const session = reader.session(reader.textToSep());
  const ref = readItemRef(reader);
  reader.done();
  return { session, ...ref };
}

/** Every ephemeral item of one session, ordered by path then index. */
export function clientDataRange(session: string): { gte: Buffer; lt: Buffer } {
  assertSessionId(session);
  return { gte: bucketKey(ListsBucket.clientData, CLIENT_DATA, session, SEP), lt: bucketKey(ListsBucket.clientData, CLIENT_DATA, session, SEP_END) };
}
