// Client frames (requests) decoded and validated, and every frame encoded
// (../shared/PROTOCOL.md, docs/protocol.md). Pure: no I/O, no clocks. The server
// feeds it every WebSocket message and sends what the encoders return; the
// TypeScript client uses the same encoders.
//
//   const decoded = decodeFrame(data, isBinary, limits);
//   if (!decoded.ok) ws.send(encodeError(decoded.id, decoded.error, decoded.encoding));
//   else ... ws.send(encodeReply(decoded.request.id, result, decoded.encoding));
//
// The hard frame limit is not checked here: the server sets ws `maxPayload` to
// `limits.frameBytes`, and ws closes the connection with 1009 on a bigger frame.
import { packValue, scanMessagePack, unpackScanned } from './msgpack.js';
import { frameBytes, utf8Slice, type Bytes } from './platform.js';
import { findStructureProblem } from './values.js';
import { VeraError, type ProtocolError } from './errors.js';
import { jsonText, parseJson } from './json.js';
import type { FamilyRequest, FamilyResult, ProtocolExtensions } from './extension.js';
import type { AnyResult, Encoding, NotifyPayload, ProtocolLimits, RawFrame, Request } from './types.js';
import { DEFAULT_LIMITS } from './types.js';
import { validateRequest } from './validate.js';

export type DecodedFrame<R = Request> =
  | { readonly ok: true; readonly request: R; readonly encoding: Encoding }
  | { readonly ok: false; readonly id?: number; readonly error: ProtocolError; readonly encoding: Encoding };


/**
 * Decodes and validates one client frame: binary = one MessagePack map, text =
 * one JSON object. Never throws on bad input: the failure names the problem and
 * carries the request `id` when one could be read.
 */
export function decodeFrame(data: RawFrame, isBinary: boolean, limits?: ProtocolLimits): DecodedFrame;
/** The same, knowing the ops command families added as well. */
export function decodeFrame(data: RawFrame, isBinary: boolean, limits: ProtocolLimits, extensions: ProtocolExtensions): DecodedFrame<Request | FamilyRequest>;
export function decodeFrame(data: RawFrame, isBinary: boolean, limits: ProtocolLimits = DEFAULT_LIMITS, extensions?: ProtocolExtensions): DecodedFrame<Request | FamilyRequest> {
  const encoding: Encoding = isBinary ? 'msgpack' : 'json';
  const bytes = frameBytes(data);
  const decoded = isBinary ? decodeMessagePack(bytes, limits) : decodeJson(bytes, limits);
  if (!decoded.ok) return withEncoding(decoded, encoding);
  const validation = validateRequest(decoded.frame, limits, extensions === undefined ? {} : { extensions });
  return validation.ok ? { ok: true, request: validation.request, encoding } : withEncoding(validation, encoding);
}

type Parsed =
  | { readonly ok: true; readonly frame: Readonly<Record<string, unknown>> }
  | { readonly ok: false; readonly id?: number; readonly error: ProtocolError };

function decodeMessagePack(bytes: Uint8Array, limits: ProtocolLimits): Parsed {
  const scan = scanMessagePack(bytes, limits.dataDepth + 1, limits.elementsMax);
  if (scan.problem !== null) return failure(readableId(scan.id), `${scan.problem.where}: ${scan.problem.message}`, scan.problem.tooLarge ? 'TOO_LARGE' : 'BAD_REQUEST');
  let frame: unknown;
  try {
    frame = unpackScanned(bytes);
  } catch (error) {
    return failure(readableId(scan.id), `frame: does not decode as MessagePack (${errorText(error)})`);
  }
  return { ok: true, frame: frame as Record<string, unknown> };
}

function decodeJson(bytes: Uint8Array, limits: ProtocolLimits): Parsed {
  if (countJsonElements(bytes, limits.elementsMax) > limits.elementsMax) {
    return failure(undefined, `frame: holds more than ${limits.elementsMax} elements (array items, object keys and values)`, 'TOO_LARGE');
  }
  let frame: unknown;
  const text = utf8Slice(bytes, 0, bytes.length);
  try {
    frame = parseJson(text);
  } catch (error) {
    // A value JSON cannot carry (parseJson): the frame parses plainly, so the reply can name its id.
    if (error instanceof VeraError) return failure(readableId(plainFields(text)?.id), `frame: ${error.message}`);
    return failure(undefined, `frame: not valid JSON (${errorText(error)})`);
  }
  if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) {
    const got = frame === null ? 'null' : Array.isArray(frame) ? 'an array' : `a ${typeof frame}`;
    return failure(undefined, `frame: must be a JSON object, got ${got}`);
  }
  const fields = frame as Record<string, unknown>;
  const problem = findStructureProblem(fields, limits.dataDepth + 1);
  if (problem !== null) return failure(readableId(fields.id), `${problem.where}: ${problem.message}`);
  return { ok: true, frame: fields };
}

function plainFields(text: string): Record<string, unknown> | null {
  const v: unknown = JSON.parse(text);
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

function readableId(id: unknown): number | undefined {
  return typeof id === 'number' && Number.isSafeInteger(id) && id >= 0 ? id : undefined;
}

/**
 * The elements of a JSON text, counted on its bytes before JSON.parse (which
 * would otherwise build every one of them): each ',' and ':' outside strings
 * (a container's first element and deep nesting are left to the depth check
 * after parsing). Stops counting once past `stopAbove`.
 */
function countJsonElements(bytes: Uint8Array, stopAbove: number): number {
  let count = 0;
  let inString = false;
  for (let i = 0; i < bytes.length && count <= stopAbove; i++) {
    const b = bytes[i]!;
    if (inString) {
      if (b === 0x5c) i++; // backslash: the next byte is escaped
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x2c || b === 0x3a) count++;
  }
  return count;
}

function failure(id: number | undefined, message: string, code: 'BAD_REQUEST' | 'TOO_LARGE' = 'BAD_REQUEST'): Parsed {
  const error: ProtocolError = { code, message };
  return id === undefined ? { ok: false, error } : { ok: false, id, error };
}

function withEncoding(f: { readonly id?: number; readonly error: ProtocolError }, encoding: Encoding): DecodedFrame {
  return f.id === undefined ? { ok: false, error: f.error, encoding } : { ok: false, id: f.id, error: f.error, encoding };
}

function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > 120 ? `${text.slice(0, 120)}...` : text;
}

// ---------------------------------------------------------------- encoders

/** A frame ready for ws.send: bytes (a Buffer on Node) are sent as a binary frame, a string as a text frame. */
export type EncodedFrame = Bytes | string;

/** Encodes any frame object; undefined fields are left out in both encodings. */
export function encodeFrame(frame: Readonly<Record<string, unknown>>, encoding: Encoding): EncodedFrame {
  const clean = withoutUndefined(frame);
  return encoding === 'msgpack' ? packValue(clean) : jsonText(clean);
}

export function encodeReply(id: number, result: AnyResult | FamilyResult, encoding: Encoding): EncodedFrame {
  return encodeFrame({ id, ok: true, ...result }, encoding);
}

/** An error reply; `id` is left out when the request's id could not be read. */
export function encodeError(id: number | undefined, error: ProtocolError, encoding: Encoding): EncodedFrame {
  const body = withoutUndefined({ code: error.code, message: error.message, ...error.hints });
  return encodeFrame({ id, ok: false, error: body }, encoding);
}

/** A pushed `notify` frame: change events, or a resync of lists the server can no longer replay. */
export function encodeNotify(payload: NotifyPayload, encoding: Encoding): EncodedFrame {
  return encodeFrame({ op: 'notify', ...payload }, encoding);
}

/**
 * One fan-out's notify frames, each encoded once per encoding: a change watched
 * by a thousand sessions costs one encode, not a thousand. `key` must name the
 * payload's content (the notifier derives it from the events). Sharing the bytes
 * is safe because server frames are not masked, so ws never writes into them.
 */
export class NotifyFrames {
  private readonly cache = new Map<string, EncodedFrame>();

  encode(key: string, payload: NotifyPayload, encoding: Encoding): EncodedFrame {
    const cacheKey = `${encoding}\n${key}`;
    let frame = this.cache.get(cacheKey);
    if (frame === undefined) {
      frame = encodeNotify(payload, encoding);
      this.cache.set(cacheKey, frame);
    }
    return frame;
  }
}

/** A client request frame. */
/** A client's request; in JSON, bigints go as bare digits, which the server reads exactly (json.ts). */
export function encodeRequest(request: Request, encoding: Encoding): EncodedFrame {
  const clean = withoutUndefined(request as unknown as Record<string, unknown>);
  return encoding === 'msgpack' ? packValue(clean) : jsonText(clean, 'digits');
}

function withoutUndefined(fields: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) out[key] = value;
  return out;
}

