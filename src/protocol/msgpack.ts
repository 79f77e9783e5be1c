// MessagePack for protocol frames: one packer/unpacker configured for
// interoperability (plain maps, no record extension), and a byte-level scan that
// runs BEFORE msgpackr sees a client's bytes.
//
// Why a scan: msgpackr decodes far more than plain MessagePack (extension types
// become Dates, RegExps, Errors, Sets, typed arrays, cyclic references, record
// definitions), it recurses once per nesting level (a 16 MiB frame of 0x91 bytes
// would blow the stack), and it renames a `__proto__` key silently. The scan
// accepts only the JSON-like subset (nil, bool, int, float, str, array, map with
// string keys) and binary, bounds nesting and element counts, and requires exactly one value
// with no trailing bytes, so what reaches msgpackr is harmless.
import { Packr, Unpackr } from 'msgpackr';
import { isUtf8, utf8Slice, type Bytes } from './platform.js';

const packr = new Packr({
  useRecords: false, // plain MessagePack maps that any decoder understands
  variableMapSize: true, // smallest map header, and maps over 65535 keys still encode
  encodeUndefinedAsNil: true,
});

// 64-bit integers a double cannot hold exactly decode as bigints (and encode back as they came), never rounded.
// ('auto' is msgpackr's, missing from its type declarations.)
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'auto' as 'bigint' });

export function packValue(value: unknown): Bytes {
  return packr.pack(value);
}

/** Decodes bytes that scanMessagePack accepted. */
export function unpackScanned(bytes: Uint8Array): unknown {
  return unpackr.unpack(bytes);
}

export interface ScanProblem {
  /** Where in the frame: 'frame', 'data', 'data.list[2]', ... */
  readonly where: string;
  readonly message: string;
  /** The frame is well formed but holds more than a request may (TOO_LARGE rather than BAD_REQUEST). */
  readonly tooLarge?: true;
}

export interface ScanResult {
  readonly problem: ScanProblem | null;
  /** The top-level `id` when it was read before any problem and is a number. */
  readonly id?: number;
}

interface Container {
  readonly label: string;
  readonly isMap: boolean;
  /** Tokens still to read: 2 per map entry, 1 per array element. */
  remaining: number;
  /** Array position, or the label of the map value about to be read. */
  position: number;
  pendingKey: string;
}

const PROTO_KEY = new TextEncoder().encode('__proto__');
const ID_KEY = new TextEncoder().encode('id');
const LABEL_KEY_CHARS = 40;
const MAX_LABEL_CHARS = 200;

/**
 * Checks that `bytes` is exactly one MessagePack map within the JSON-like subset,
 * nested at most `maxDepth` containers deep (the top-level map counts as 1), whose
 * containers together declare at most `maxElements` elements (a map entry is two).
 */
export function scanMessagePack(bytes: Uint8Array, maxDepth: number, maxElements = Number.MAX_SAFE_INTEGER): ScanResult {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.length;
  const stack: Container[] = [];
  let pos = 0;
  let id: number | undefined;
  let captureId = false;
  let elements = 0;

  const fail = (where: string, message: string, tooLarge = false): ScanResult => {
    const problem: ScanProblem = tooLarge ? { where, message, tooLarge } : { where, message };
    return id === undefined ? { problem } : { problem, id };
  };

  if (end === 0) return fail('frame', 'empty frame');
  const first = bytes[0]!;
  if (!(first >= 0x80 && first <= 0x8f) && first !== 0xde && first !== 0xdf) {
    return fail('frame', `must be a MessagePack map, got ${describeToken(first)}`);
  }

  do {
    const top = stack[stack.length - 1];
    const expectingKey = top !== undefined && top.isMap && top.remaining % 2 === 0;
    const where = top === undefined ? 'frame' : expectingKey ? top.label : childLabel(top);
    if (pos >= end) return fail(where, 'truncated MessagePack data');
    const token = bytes[pos]!;

    if (expectingKey) {
      const str = stringBounds(bytes, view, pos);
      if (str === null) return fail(where, `map keys must be strings, got ${describeToken(token)}`);
      if (str === 'truncated') return fail(where, 'truncated MessagePack data');
      if (!isUtf8(bytes.subarray(str.start, str.end))) return fail(where, 'map key is not valid UTF-8');
      if (sameBytes(bytes, str.start, str.end, PROTO_KEY)) return fail(joinKey(top.label, '__proto__'), "the key '__proto__' is not allowed");
      top.pendingKey = utf8Slice(bytes, str.start, Math.min(str.end, str.start + LABEL_KEY_CHARS * 4)).slice(0, LABEL_KEY_CHARS);
      captureId = stack.length === 1 && sameBytes(bytes, str.start, str.end, ID_KEY);
      pos = str.end;
      top.remaining--;
      continue;
    }

    // A value: a scalar to skip, or a container to descend into.
    let scalarSize = 0;
    let container: { isMap: boolean; count: number; header: number } | null = null;
    if (token <= 0x7f || token >= 0xe0 || token === 0xc0 || token === 0xc2 || token === 0xc3) scalarSize = 1;
    else if (token <= 0x8f) container = { isMap: true, count: token & 0x0f, header: 1 };
    else if (token <= 0x9f) container = { isMap: false, count: token & 0x0f, header: 1 };
    else if (token <= 0xbf || token === 0xd9 || token === 0xda || token === 0xdb) {
      const str = stringBounds(bytes, view, pos);
      if (str === null || str === 'truncated') return fail(where, 'truncated MessagePack data');
      // Checked on the string's exact bytes: msgpackr's decoder reads past the end of a string whose
      // last character is cut short, which would let it see other tokens than this scan did; and it
      // turns invalid bytes into U+FFFD, so different paths would land in one list.
      if (!isUtf8(bytes.subarray(str.start, str.end))) return fail(where, 'string is not valid UTF-8');
      scalarSize = str.end - pos;
    } else if (token === 0xca) scalarSize = 5;
    else if (token === 0xcb) scalarSize = 9;
    else if (token >= 0xcc && token <= 0xcf) scalarSize = 1 + (1 << (token - 0xcc));
    else if (token >= 0xd0 && token <= 0xd3) scalarSize = 1 + (1 << (token - 0xd0));
    else if (token === 0xdc || token === 0xde) {
      if (pos + 3 > end) return fail(where, 'truncated MessagePack data');
      container = { isMap: token === 0xde, count: view.getUint16(pos + 1), header: 3 };
    } else if (token === 0xdd || token === 0xdf) {
      if (pos + 5 > end) return fail(where, 'truncated MessagePack data');
      container = { isMap: token === 0xdf, count: view.getUint32(pos + 1), header: 5 };
    } else if (token === 0xc4 || token === 0xc5 || token === 0xc6) {
      // Binary: bytes, stored and returned as they came (base64 in JSON, json.ts).
      const header = token === 0xc4 ? 2 : token === 0xc5 ? 3 : 5;
      if (pos + header > end) return fail(where, 'truncated MessagePack data');
      const length = token === 0xc4 ? bytes[pos + 1]! : token === 0xc5 ? view.getUint16(pos + 1) : view.getUint32(pos + 1);
      scalarSize = header + length;
    } else if (token === 0xc1) {
      return fail(where, 'invalid MessagePack byte 0xc1');
    } else {
      return fail(where, 'MessagePack extension types are not supported');
    }

    if (container !== null) {
      if (stack.length + 1 > maxDepth) return fail(where, `nested deeper than ${maxDepth - 1} levels`);
      const tokens = container.isMap ? container.count * 2 : container.count;
      // Every element takes at least one byte: a count the frame cannot hold is a
      // lie that would make the decoder allocate a huge array.
      if (tokens > end - pos - container.header) return fail(where, 'truncated MessagePack data (element count exceeds the frame)');
      // Refused at the header, before a single element is read: the decode would cost per element.
      elements += tokens;
      if (elements > maxElements) return fail(where, `the frame holds more than ${maxElements} elements (array items, map keys and values)`, true);
      pos += container.header;
      if (top !== undefined) top.remaining--;
      captureId = false;
      stack.push({ label: where, isMap: container.isMap, remaining: tokens, position: 0, pendingKey: '' });
    } else {
      if (pos + scalarSize > end) return fail(where, 'truncated MessagePack data');
      if (captureId) id = readNumber(view, pos, token);
      captureId = false;
      pos += scalarSize;
      top!.remaining--;
      if (!top!.isMap) top!.position++;
    }

    // Pop every container that is now complete.
    for (let done = stack[stack.length - 1]; done !== undefined && done.remaining === 0; done = stack[stack.length - 1]) {
      stack.pop();
      const parent = stack[stack.length - 1];
      if (parent !== undefined && !parent.isMap) parent.position++;
    }
  } while (stack.length > 0);

  if (pos !== end) return fail('frame', `${end - pos} trailing bytes after the MessagePack map`);
  return id === undefined ? { problem: null } : { problem: null, id };
}

/** Whether `bytes[start, end)` is `expected` (short keys: a loop beats a call into native code). */
function sameBytes(bytes: Uint8Array, start: number, end: number, expected: Uint8Array): boolean {
  if (end - start !== expected.length) return false;
  for (let i = 0; i < expected.length; i++) if (bytes[start + i] !== expected[i]) return false;
  return true;
}

function childLabel(container: Container): string {
  // Labels of deeply nested values stop growing: enough to say where, not a novel.
  if (container.label.length > MAX_LABEL_CHARS) return container.label;
  return container.isMap ? joinKey(container.label, container.pendingKey) : `${container.label}[${container.position}]`;
}

function joinKey(label: string, key: string): string {
  return label === 'frame' ? key : `${label}.${key}`;
}

/** Start and end of a string's bytes; null if the token is not a string. */
function stringBounds(
  bytes: Uint8Array,
  view: DataView,
  pos: number,
): { start: number; end: number } | 'truncated' | null {
  const token = bytes[pos]!;
  let header: number;
  let length: number;
  if (token >= 0xa0 && token <= 0xbf) {
    header = 1;
    length = token & 0x1f;
  } else if (token === 0xd9) {
    if (pos + 2 > bytes.length) return 'truncated';
    header = 2;
    length = bytes[pos + 1]!;
  } else if (token === 0xda) {
    if (pos + 3 > bytes.length) return 'truncated';
    header = 3;
    length = view.getUint16(pos + 1);
  } else if (token === 0xdb) {
    if (pos + 5 > bytes.length) return 'truncated';
    header = 5;
    length = view.getUint32(pos + 1);
  } else {
    return null;
  }
  const start = pos + header;
  if (start + length > bytes.length) return 'truncated';
  return { start, end: start + length };
}

function readNumber(view: DataView, pos: number, token: number): number | undefined {
  if (token <= 0x7f) return token;
  if (token >= 0xe0) return token - 0x100;
  switch (token) {
    case 0xca: return view.getFloat32(pos + 1);
    case 0xcb: return view.getFloat64(pos + 1);
    case 0xcc: return view.getUint8(pos + 1);
    case 0xcd: return view.getUint16(pos + 1);
    case 0xce: return view.getUint32(pos + 1);
    case 0xcf: return Number(view.getBigUint64(pos + 1));
    case 0xd0: return view.getInt8(pos + 1);
    case 0xd1: return view.getInt16(pos + 1);
    case 0xd2: return view.getInt32(pos + 1);
    case 0xd3: return Number(view.getBigInt64(pos + 1));
    default: return undefined;
  }
}

function describeToken(token: number): string {
  if (token <= 0x7f || token >= 0xe0 || (token >= 0xcc && token <= 0xd3)) return 'an integer';
  if (token <= 0x8f || token === 0xde || token === 0xdf) return 'a map';
  if (token <= 0x9f || token === 0xdc || token === 0xdd) return 'an array';
  if (token <= 0xbf || (token >= 0xd9 && token <= 0xdb)) return 'a string';
  if (token === 0xc0) return 'nil';
  if (token === 0xc2 || token === 0xc3) return 'a boolean';
  if (token === 0xca || token === 0xcb) return 'a float';
  if (token >= 0xc4 && token <= 0xc6) return 'binary data';
  if (token === 0xc1) return 'the invalid byte 0xc1';
  return 'an extension type';
}
