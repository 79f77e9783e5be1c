// Decoding of what a server sends (replies and notify frames), for clients.
// Lives next to the request decoder so the whole wire format stays in one place.
import { scanMessagePack, unpackScanned } from './msgpack.js';
import { frameBytes, utf8Slice } from './platform.js';
import { VeraError } from './errors.js';
import { parseJson } from './json.js';
import type { ChangeEvent, Item, RawFrame, ResyncList, RevokedWatches } from './types.js';

export type ServerFrame =
  | { readonly kind: 'reply'; readonly id: number; readonly result: Readonly<Record<string, unknown>> }
  | { readonly kind: 'error'; readonly id?: number; readonly error: VeraError }
  | { readonly kind: 'notify'; readonly events: readonly ChangeEvent[] }
  /** `more`: the resync continues in the next frame. */
  | { readonly kind: 'resync'; readonly lists: readonly ResyncList[]; readonly more: boolean }
  /** Watches the server dropped because their permission was revoked. */
  | { readonly kind: 'revoked'; readonly watches: RevokedWatches['revoked']; readonly reason: string }
  | { readonly kind: 'invalid'; readonly message: string };

// Replies nest data a few levels below the frame (notify > events > event > item > data);
// allow far more than any server limit while keeping msgpackr's recursion shallow.
const MAX_REPLY_DEPTH = 512;

/** Decodes one frame from a server; a string (as browsers deliver text frames) is JSON. */
export function decodeServerFrame(data: RawFrame | string, isBinary: boolean): ServerFrame {
  let frame: unknown;
  try {
    if (typeof data === 'string') {
      frame = parseJson(data);
    } else if (isBinary) {
      const bytes = frameBytes(data);
      const scan = scanMessagePack(bytes, MAX_REPLY_DEPTH);
      if (scan.problem !== null) return invalid(`${scan.problem.where}: ${scan.problem.message}`);
      frame = unpackScanned(bytes);
    } else {
      const bytes = frameBytes(data);
      frame = parseJson(utf8Slice(bytes, 0, bytes.length));
    }
  } catch (error) {
    return invalid(`frame does not decode: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) return invalid('frame is not a map');
  const fields = frame as Record<string, unknown>;

  if (fields.op === 'notify') return decodeNotify(fields);
  const id = fields.id;
  const hasId = typeof id === 'number' && Number.isSafeInteger(id) && id >= 0;
  if (fields.ok === true) {
    if (!hasId) return invalid('reply without a valid id');
    const { id: _id, ok: _ok, ...result } = fields;
    return { kind: 'reply', id, result };
  }
  if (fields.ok === false) {
    const error = VeraError.fromWire(fields.error);
    return hasId ? { kind: 'error', id, error } : { kind: 'error', error };
  }
  return invalid('frame is neither a reply nor a notify');
}

function decodeNotify(fields: Record<string, unknown>): ServerFrame {
  if (Array.isArray(fields.events)) {
    const events = fields.events;
    if (!events.every(isChangeEvent)) return invalid('notify frame has a malformed event');
    return { kind: 'notify', events };
  }
  if (Array.isArray(fields.resync)) {
    const lists = fields.resync;
    if (!lists.every(isResyncList)) return invalid('notify frame has a malformed resync list');
    return { kind: 'resync', lists, more: fields.more === true };
  }
  if (Array.isArray(fields.revoked) && typeof fields.reason === 'string') {
    const watches = fields.revoked as unknown[];
    if (!watches.every((w) => typeof w === 'object' && w !== null && typeof (w as { path?: unknown }).path === 'string' && typeof (w as { prefix?: unknown }).prefix === 'boolean')) {
      return invalid('notify frame has a malformed revoked watch');
    }
    return { kind: 'revoked', watches: watches as RevokedWatches['revoked'], reason: fields.reason };
  }
  return invalid('notify frame has neither events nor resync');
}

function invalid(message: string): ServerFrame {
  return { kind: 'invalid', message };
}

function isIndex(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

export function isItem(value: unknown): value is Item {
  if (typeof value !== 'object' || value === null) return false;
  const item = value as Record<string, unknown>;
  return isIndex(item.index) && (item.owner === null || typeof item.owner === 'string') && 'data' in item;
}

export function isItemList(value: unknown): value is Item[] {
  return Array.isArray(value) && value.every(isItem);
}

function isChangeEvent(value: unknown): value is ChangeEvent {
  if (typeof value !== 'object' || value === null) return false;
  const event = value as Record<string, unknown>;
  return isIndex(event.index) && (event.type === 'push' || event.type === 'delete') && typeof event.path === 'string' && isItem(event.item);
}

function isResyncList(value: unknown): value is ResyncList {
  if (typeof value !== 'object' || value === null) return false;
  const list = value as Record<string, unknown>;
  return typeof list.path === 'string' && isIndex(list.index) && isItemList(list.items);
}
