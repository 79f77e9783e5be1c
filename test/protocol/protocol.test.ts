import fc from 'fast-check';
import { wireData } from '../support/arbitraries.js';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_LIMITS,
  decodeFrame,
  decodeServerFrame,
  encodeError,
  encodeNotify,
  encodeReply,
  encodeRequest,
  packValue,
  type Encoding,
  type ErrorCode,
  type Request,
} from '../../src/protocol/index.js';

// ---------------------------------------------------------------- helpers

/** A frame given as a value is sent in both encodings; raw bytes/text only in one. */
type FrameSpec = { value: unknown } | { bytes: Buffer } | { text: string };

interface HostileCase {
  name: string;
  frame: FrameSpec;
  code: ErrorCode;
  /** The message must name the problem. */
  message: RegExp;
  /** The id the error must echo; undefined = the reply must carry no id. */
  id?: number;
  /** For value frames: skip JSON where it cannot express the case. */
  only?: Encoding;
}

function encodings(spec: FrameSpec, only?: Encoding): Array<{ encoding: Encoding; data: Buffer; isBinary: boolean }> {
  if ('bytes' in spec) return [{ encoding: 'msgpack', data: spec.bytes, isBinary: true }];
  if ('text' in spec) return [{ encoding: 'json', data: Buffer.from(spec.text, 'utf8'), isBinary: false }];
  const out: Array<{ encoding: Encoding; data: Buffer; isBinary: boolean }> = [];
  if (only !== 'json') out.push({ encoding: 'msgpack', data: packValue(spec.value), isBinary: true });
  if (only !== 'msgpack') out.push({ encoding: 'json', data: Buffer.from(JSON.stringify(spec.value), 'utf8'), isBinary: false });
  return out;
}

function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

/** MessagePack for n nested one-element arrays around 1, built bytewise (msgpackr would recurse). */
function nestedMsgpack(levels: number): Buffer {
  return Buffer.concat([Buffer.alloc(levels, 0x91), Buffer.from([0x01])]);
}

const header = (fields: Record<string, unknown>): Buffer => {
  const packed = packValue(fields);
  // Rewrite the map header to announce one more entry, whose key/value the caller appends.
  const count = Object.keys(fields).length;
  expect(packed[0]).toBe(0x80 | count);
  return Buffer.concat([Buffer.from([0x80 | (count + 1)]), packed.subarray(1)]);
};
const str = (s: string): Buffer => Buffer.concat([Buffer.from([0xa0 | Buffer.byteLength(s)]), Buffer.from(s)]);

const LONG_PATH = '/' + 'a'.repeat(1024);
const OVER_LIMIT_DATA = 'x'.repeat(DEFAULT_LIMITS.dataBytes); // + 5 header bytes as MessagePack

// ---------------------------------------------------------------- the table

const CASES: HostileCase[] = [
  // Frames that do not decode, or decode to something that is not a map.
  { name: 'garbage bytes', frame: { bytes: Buffer.from([0xc1, 0xff, 0x00, 0x13]) }, code: 'BAD_REQUEST', message: /must be a MessagePack map/ },
  { name: 'garbage text', frame: { text: '{"id": 1, op: ping' }, code: 'BAD_REQUEST', message: /not valid JSON/ },
  { name: 'empty binary frame', frame: { bytes: Buffer.alloc(0) }, code: 'BAD_REQUEST', message: /empty frame/ },
  { name: 'empty text frame', frame: { text: '' }, code: 'BAD_REQUEST', message: /not valid JSON/ },
  { name: 'msgpack that is an array', frame: { bytes: packValue([1, 'ping']) }, code: 'BAD_REQUEST', message: /must be a MessagePack map, got an array/ },
  { name: 'msgpack that is a number', frame: { bytes: packValue(42) }, code: 'BAD_REQUEST', message: /must be a MessagePack map, got an integer/ },
  { name: 'JSON that is a string', frame: { text: '"hello"' }, code: 'BAD_REQUEST', message: /must be a JSON object, got a string/ },
  { name: 'JSON that is an array', frame: { text: '[{"id":1,"op":"ping"}]' }, code: 'BAD_REQUEST', message: /must be a JSON object, got an array/ },
  { name: 'JSON null', frame: { text: 'null' }, code: 'BAD_REQUEST', message: /must be a JSON object, got null/ },
  { name: 'msgpack with trailing bytes', frame: { bytes: Buffer.concat([packValue({ id: 1, op: 'ping' }), Buffer.from([0x00])]) }, code: 'BAD_REQUEST', message: /1 trailing bytes/, id: 1 },
  { name: 'truncated msgpack', frame: { bytes: packValue({ id: 2, op: 'ping' }).subarray(0, 8) }, code: 'BAD_REQUEST', message: /truncated/, id: 2 },
  { name: 'msgpack map with a non-string key', frame: { bytes: Buffer.from([0x82, 0xa2, 0x69, 0x64, 0x03, 0x07, 0x01]) }, code: 'BAD_REQUEST', message: /map keys must be strings, got an integer/, id: 3 },
  { name: 'msgpack array claiming 2^32-1 elements', frame: { bytes: Buffer.concat([header({ id: 4, op: 'push', path: '/a' }), str('data'), Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff, 0x01])]) }, code: 'BAD_REQUEST', message: /data: truncated .*element count/, id: 4 },
  { name: 'msgpack extension type (timestamp) in data', frame: { bytes: packValue({ id: 5, op: 'push', path: '/a', data: new Date(0) }) }, code: 'BAD_REQUEST', message: /data: MessagePack extension types are not supported/, id: 5 },
  { name: 'msgpack binary cut short in data', frame: { bytes: Buffer.concat([header({ id: 6, op: 'push', path: '/a' }), str('data'), Buffer.from([0xc4, 0x05, 0x61])]) }, code: 'BAD_REQUEST', message: /data: truncated/, id: 6 },
  { name: 'JSON integers beyond 2^53 that read as one number', frame: { text: '{"id":6010,"op":"push","path":"/a","data":[9007199254740993,9007199254740992]}' }, code: 'BAD_REQUEST', message: /read as the same JSON number/, id: 6010 },
  { name: 'JSON integer beyond 64 bits in data', frame: { text: '{"id":6012,"op":"push","path":"/a","data":{"n":36893488147419103232}}' }, code: 'BAD_REQUEST', message: /data.n: 36893488147419103232 is beyond a 64-bit integer/, id: 6012 },
  { name: 'JSON $binary that is not base64', frame: { text: '{"id":6011,"op":"push","path":"/a","data":{"$binary":"not base64!"}}' }, code: 'BAD_REQUEST', message: /standard base64/, id: 6011 },
  { name: 'msgpack 0xc1 byte in data', frame: { bytes: Buffer.concat([header({ id: 7, op: 'push', path: '/a' }), str('data'), Buffer.from([0xc1])]) }, code: 'BAD_REQUEST', message: /data: invalid MessagePack byte 0xc1/, id: 7 },
  { name: 'NaN in data', frame: { value: { id: 8, op: 'push', path: '/a', data: [1, Number.NaN] } }, only: 'msgpack', code: 'BAD_REQUEST', message: /data\[1\]: NaN is not a JSON number/, id: 8 },
  { name: 'lone surrogate in data', frame: { text: '{"id":9,"op":"push","path":"/a","data":{"k":"\\ud800"}}' }, code: 'BAD_REQUEST', message: /data\.k: string contains a lone surrogate/, id: 9 },

  // id
  { name: 'missing id', frame: { value: { op: 'ping' } }, code: 'BAD_REQUEST', message: /id is missing/ },
  { name: 'id negative', frame: { value: { id: -1, op: 'ping' } }, code: 'BAD_REQUEST', message: /id must be a non-negative safe integer, got -1/ },
  { name: 'id float', frame: { value: { id: 1.5, op: 'ping' } }, code: 'BAD_REQUEST', message: /id must be a non-negative safe integer, got 1\.5/ },
  { name: 'id string', frame: { value: { id: '12', op: 'ping' } }, code: 'BAD_REQUEST', message: /id must be a non-negative safe integer, got "12"/ },
  { name: 'id null', frame: { value: { id: null, op: 'ping' } }, code: 'BAD_REQUEST', message: /id must be a non-negative safe integer, got null/ },
  { name: 'huge id (2^64)', frame: { value: { id: 2 ** 64, op: 'ping' } }, code: 'BAD_REQUEST', message: /id must be a non-negative safe integer, got 184467440737095(52000|51616)/ },
  { name: 'huge id as msgpack uint64', frame: { bytes: Buffer.concat([Buffer.from([0x82]), str('id'), Buffer.from([0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), str('op'), str('ping')]) }, code: 'BAD_REQUEST', message: /id must be a non-negative safe integer/ },

  // op
  { name: 'missing op', frame: { value: { id: 10 } }, code: 'BAD_REQUEST', message: /op is missing/, id: 10 },
  { name: 'unknown op', frame: { value: { id: 11, op: 'frobnicate' } }, code: 'BAD_REQUEST', message: /unknown op "frobnicate"/, id: 11 },
  { name: 'op of wrong type', frame: { value: { id: 12, op: 5 } }, code: 'BAD_REQUEST', message: /op must be a string, got 5/, id: 12 },
  { name: 'server-only op notify', frame: { value: { id: 13, op: 'notify', events: [] } }, code: 'BAD_REQUEST', message: /unknown op "notify"/, id: 13 },
  { name: 'op in the wrong case', frame: { value: { id: 14, op: 'PING' } }, code: 'BAD_REQUEST', message: /unknown op "PING"/, id: 14 },

  // paths
  { name: 'path missing', frame: { value: { id: 20, op: 'get' } }, code: 'BAD_REQUEST', message: /path is missing/, id: 20 },
  { name: 'path not a string', frame: { value: { id: 21, op: 'get', path: ['a'] } }, code: 'BAD_REQUEST', message: /path must be a string, got an array/, id: 21 },
  { name: 'relative path', frame: { value: { id: 22, op: 'get', path: 'a/b' } }, code: 'BAD_REQUEST', message: /path must start with '\/'/, id: 22 },
  { name: "path with '..'", frame: { value: { id: 23, op: 'get', path: '/a/../b' } }, code: 'BAD_REQUEST', message: /path must not contain a '\.\.' segment/, id: 23 },
  { name: "path with '.'", frame: { value: { id: 24, op: 'push', path: '/a/./b', data: 1 } }, code: 'BAD_REQUEST', message: /path must not contain a '\.' segment/, id: 24 },
  { name: 'path with an empty segment', frame: { value: { id: 25, op: 'get', path: '/a//b' } }, code: 'BAD_REQUEST', message: /path has an empty segment/, id: 25 },
  { name: 'path with NUL', frame: { value: { id: 26, op: 'get', path: '/a\u0000b' } }, code: 'BAD_REQUEST', message: /path must not contain a NUL/, id: 26 },
  { name: 'path with a trailing slash', frame: { value: { id: 27, op: 'get', path: '/a/' } }, code: 'BAD_REQUEST', message: /path must not end with '\/'/, id: 27 },
  { name: 'path of 1025 bytes', frame: { value: { id: 28, op: 'get', path: LONG_PATH } }, code: 'BAD_REQUEST', message: /path is longer than 1024 UTF-8 bytes/, id: 28 },
  { name: 'root path for get', frame: { value: { id: 29, op: 'get', path: '/' } }, code: 'BAD_REQUEST', message: /root path '\/' is only valid for ls and prefix watches/, id: 29 },
  { name: 'root path for push', frame: { value: { id: 30, op: 'push', path: '/', data: 1 } }, code: 'BAD_REQUEST', message: /root path/, id: 30 },
  { name: 'root path for an exact watch', frame: { value: { id: 31, op: 'watch', path: '/' } }, code: 'BAD_REQUEST', message: /root path/, id: 31 },
  { name: 'root path for an exact unwatch', frame: { value: { id: 32, op: 'unwatch', path: '/', prefix: false } }, code: 'BAD_REQUEST', message: /root path/, id: 32 },
  { name: 'path with a lone surrogate', frame: { text: '{"id":33,"op":"get","path":"/a\\udc00"}' }, code: 'BAD_REQUEST', message: /path must be valid UTF-8/, id: 33 },

  // data
  { name: 'push without data', frame: { value: { id: 40, op: 'push', path: '/a' } }, code: 'BAD_REQUEST', message: /data is missing/, id: 40 },
  { name: 'data over the limit', frame: { value: { id: 41, op: 'push', path: '/a', data: OVER_LIMIT_DATA } }, code: 'TOO_LARGE', message: /data is 1048581 bytes encoded as MessagePack; the limit is 1048576 bytes/, id: 41 },
  { name: 'data nested 65 levels', frame: { value: { id: 42, op: 'push', path: '/a', data: nested(65) } }, code: 'BAD_REQUEST', message: /^data(\[0\]){64}: nested deeper than 64 levels$/, id: 42 },
  { name: 'data nested 200000 levels (msgpack)', frame: { bytes: Buffer.concat([header({ id: 43, op: 'push', path: '/a' }), str('data'), nestedMsgpack(200_000)]) }, code: 'BAD_REQUEST', message: /nested deeper than 64 levels/, id: 43 },
  { name: 'data nested 200000 levels (JSON)', frame: { text: `{"id":44,"op":"push","path":"/a","data":${'['.repeat(200_000)}${']'.repeat(200_000)}}` }, code: 'BAD_REQUEST', message: /nested deeper than 64 levels/, id: 44 },
  { name: 'unknown field nested too deep', frame: { value: { id: 45, op: 'ping', extra: nested(80) } }, code: 'BAD_REQUEST', message: /^extra(\[0\]){64}: nested deeper than 64 levels$/, id: 45 },
  { name: '__proto__ key at the top level', frame: { text: '{"id":46,"op":"ping","__proto__":{"op":"push"}}' }, code: 'BAD_REQUEST', message: /__proto__: the key '__proto__' is not allowed/, id: 46 },
  { name: '__proto__ key in data', frame: { value: JSON.parse('{"id":47,"op":"push","path":"/a","data":{"a":{"__proto__":{"polluted":true}}}}') }, code: 'BAD_REQUEST', message: /data\.a\.__proto__: the key '__proto__' is not allowed/, id: 47 },

  // typed arguments
  { name: 'timeoutMs negative', frame: { value: { id: 50, op: 'hello', timeoutMs: -5 } }, code: 'BAD_REQUEST', message: /timeoutMs must be a non-negative safe integer, got -5/, id: 50 },
  { name: 'timeoutMs a string', frame: { value: { id: 51, op: 'hello', timeoutMs: '10s' } }, code: 'BAD_REQUEST', message: /timeoutMs must be a non-negative safe integer, got "10s"/, id: 51 },
  { name: 'session not a string', frame: { value: { id: 52, op: 'hello', session: 42 } }, code: 'BAD_REQUEST', message: /session: session id must be a non-empty string/, id: 52 },
  { name: 'session empty', frame: { value: { id: 53, op: 'hello', session: '' } }, code: 'BAD_REQUEST', message: /session id must be a non-empty string/, id: 53 },
  { name: 'token not a string', frame: { value: { id: 54, op: 'hello', token: { user: 'x' } } }, code: 'BAD_REQUEST', message: /token must be a string, got an object/, id: 54 },
  { name: 'ack negative', frame: { value: { id: 55, op: 'ping', ack: -1 } }, code: 'BAD_REQUEST', message: /ack must be a non-negative safe integer/, id: 55 },
  { name: 'ifLastIndex float', frame: { value: { id: 56, op: 'push', path: '/a', data: 1, ifLastIndex: 2.5 } }, code: 'BAD_REQUEST', message: /ifLastIndex must be a non-negative safe integer, got 2\.5/, id: 56 },
  { name: 'persistent not boolean', frame: { value: { id: 57, op: 'push', path: '/a', data: 1, persistent: 'yes' } }, code: 'BAD_REQUEST', message: /persistent must be a boolean, got "yes"/, id: 57 },
  { name: 'watch flag not boolean', frame: { value: { id: 58, op: 'push', path: '/a', data: 1, watch: 1 } }, code: 'BAD_REQUEST', message: /watch must be a boolean, got 1/, id: 58 },
  { name: 'consistency bogus', frame: { value: { id: 59, op: 'get', path: '/a', consistency: 'eventual' } }, code: 'BAD_REQUEST', message: /consistency must be "linearizable" or "stale", got "eventual"/, id: 59 },
  { name: 'prefix not boolean', frame: { value: { id: 60, op: 'watch', path: '/a', prefix: 'true' } }, code: 'BAD_REQUEST', message: /prefix must be a boolean, got "true"/, id: 60 },
  { name: 'delete without index', frame: { value: { id: 61, op: 'delete', path: '/a' } }, code: 'BAD_REQUEST', message: /index is missing/, id: 61 },
  { name: 'delete with a string index', frame: { value: { id: 62, op: 'delete', path: '/a', index: '7' } }, code: 'BAD_REQUEST', message: /index must be a non-negative safe integer, got "7"/, id: 62 },
  { name: 'delete with an unsafe index', frame: { value: { id: 63, op: 'delete', path: '/a', index: 2 ** 53 } }, code: 'BAD_REQUEST', message: /index must be a non-negative safe integer/, id: 63 },
];

describe('decodeFrame rejects malformed and hostile frames', () => {
  it('has a table of at least 30 cases', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(30);
  });

  for (const c of CASES) {
    for (const { encoding, data, isBinary } of encodings(c.frame, c.only)) {
      it(`${c.name} [${encoding}]`, () => {
        const decoded = decodeFrame(data, isBinary);
        expect(decoded.ok).toBe(false);
        if (decoded.ok) return;
        expect(decoded.encoding).toBe(encoding);
        expect(decoded.error.code).toBe(c.code);
        expect(decoded.error.message).toMatch(c.message);
        expect(decoded.id).toBe(c.id);

        // The error reply goes back in the request's encoding, with the id when there is one.
        const reply = encodeError(decoded.id, decoded.error, decoded.encoding);
        expect(typeof reply === 'string').toBe(encoding === 'json');
        const back = decodeServerFrame(reply, typeof reply !== 'string');
        expect(back).toMatchObject({ kind: 'error', error: { code: c.code } });
        if (back.kind === 'error') expect(back.id).toBe(c.id);
      });
    }
  }

  it('leaves a polluted prototype alone', () => {
    decodeFrame(Buffer.from('{"id":1,"op":"push","path":"/a","data":{"__proto__":{"polluted":true}}}'), false);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('decodeFrame accepts valid requests', () => {
  it('ignores unknown extra fields', () => {
    const decoded = decodeFrame(Buffer.from(JSON.stringify({ id: 1, op: 'get', path: '/a', extra: { x: 1 }, trace: 'abc' })), false);
    expect(decoded).toEqual({ ok: true, encoding: 'json', request: { id: 1, op: 'get', path: '/a' } });
  });

  it('allows the root path for ls and for prefix watch/unwatch', () => {
    for (const request of [
      { id: 1, op: 'ls', path: '/' },
      { id: 2, op: 'watch', path: '/', prefix: true },
      { id: 3, op: 'unwatch', path: '/', prefix: true },
    ]) {
      const decoded = decodeFrame(packValue(request), true);
      expect(decoded).toEqual({ ok: true, encoding: 'msgpack', request });
    }
  });

  it('accepts a path of exactly 1024 bytes and data of exactly the limit', () => {
    const path = '/' + 'b'.repeat(1023);
    const data = 'y'.repeat(DEFAULT_LIMITS.dataBytes - 5); // str32 header is 5 bytes
    expect(packValue(data).length).toBe(DEFAULT_LIMITS.dataBytes);
    const decoded = decodeFrame(packValue({ id: 1, op: 'push', path, data }), true);
    expect(decoded.ok).toBe(true);
  });

  it('measures data as MessagePack even in a JSON frame', () => {
    const limits = { ...DEFAULT_LIMITS, dataBytes: 100 };
    // 98 quote characters: 100 bytes as MessagePack, but 200 bytes of escaped JSON.
    const fits = { id: 1, op: 'push', path: '/a', data: '"'.repeat(98) };
    const over = { id: 2, op: 'push', path: '/a', data: '"'.repeat(99) };
    expect(decodeFrame(Buffer.from(JSON.stringify(fits)), false, limits).ok).toBe(true);
    const decoded = decodeFrame(Buffer.from(JSON.stringify(over)), false, limits);
    expect(decoded).toMatchObject({ ok: false, id: 2, error: { code: 'TOO_LARGE', message: expect.stringMatching(/101 bytes/) } });
  });

  it('accepts an integral float64 id from MessagePack encoders that send floats', () => {
    const bytes = Buffer.concat([Buffer.from([0x82]), str('id'), Buffer.from([0xcb, 0x40, 0x14, 0, 0, 0, 0, 0, 0]), str('op'), str('ping')]);
    expect(decodeFrame(bytes, true)).toEqual({ ok: true, encoding: 'msgpack', request: { id: 5, op: 'ping' } });
  });

  it('accepts a fragmented frame handed over as a Buffer list', () => {
    const bytes = packValue({ id: 9, op: 'bye' });
    expect(decodeFrame([bytes.subarray(0, 3), bytes.subarray(3)], true)).toMatchObject({ ok: true, request: { id: 9, op: 'bye' } });
  });
});

describe('encoders', () => {
  it('encodes replies in the request encoding with id and ok first', () => {
    const json = encodeReply(7, { index: 3, items: [] }, 'json');
    expect(json).toBe('{"id":7,"ok":true,"index":3,"items":[]}');
    const binary = encodeReply(7, { index: 3, items: [] }, 'msgpack');
    expect(Buffer.isBuffer(binary)).toBe(true);
    expect(decodeServerFrame(binary, true)).toEqual({ kind: 'reply', id: 7, result: { index: 3, items: [] } });
  });

  it('leaves undefined fields out in both encodings', () => {
    const json = encodeReply(1, { index: 4, items: undefined }, 'json');
    expect(JSON.parse(json as string)).toEqual({ id: 1, ok: true, index: 4 });
    expect(decodeServerFrame(encodeReply(1, { index: 4, items: undefined }, 'msgpack'), true)).toEqual({ kind: 'reply', id: 1, result: { index: 4 } });
  });

  it('puts error hints next to code and message', () => {
    const frame = encodeError(3, { code: 'NOT_LEADER', message: 'not the leader', hints: { leader: 'ws://10.0.0.2:1919' } }, 'json');
    expect(JSON.parse(frame as string)).toEqual({ id: 3, ok: false, error: { code: 'NOT_LEADER', message: 'not the leader', leader: 'ws://10.0.0.2:1919' } });
    const noId = encodeError(undefined, { code: 'BAD_REQUEST', message: 'frame: not valid JSON' }, 'json');
    expect(JSON.parse(noId as string)).toEqual({ ok: false, error: { code: 'BAD_REQUEST', message: 'frame: not valid JSON' } });
  });

  it('encodes notify frames with events or resync', () => {
    const item = { index: 5, owner: 's1', data: { a: 1 } };
    const events = encodeNotify({ events: [{ index: 5, type: 'push', path: '/a', item }] }, 'json');
    expect(JSON.parse(events as string)).toEqual({ op: 'notify', events: [{ index: 5, type: 'push', path: '/a', item }] });
    const resync = encodeNotify({ resync: [{ path: '/a', index: 9, items: [item] }] }, 'msgpack');
    expect(decodeServerFrame(resync, true)).toEqual({ kind: 'resync', lists: [{ path: '/a', index: 9, items: [item] }], more: false });
    const continued = encodeNotify({ resync: [{ path: '/a', index: 9, items: [item] }], more: true }, 'json');
    expect(decodeServerFrame(continued, false)).toEqual({ kind: 'resync', lists: [{ path: '/a', index: 9, items: [item] }], more: true });
  });
});

// ---------------------------------------------------------------- round trip property

const segment = fc
  .string({ unit: 'grapheme', minLength: 1, maxLength: 8 })
  .filter((s) => !s.includes('/') && !s.includes('\u0000') && s !== '.' && s !== '..');
const path = fc
  .array(segment, { minLength: 1, maxLength: 5 })
  .map((segments) => '/' + segments.join('/'))
  .filter((p) => Buffer.byteLength(p) <= 1024);
const id = fc.maxSafeNat();
const index = fc.maxSafeNat();
const data = wireData(4);
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

const request: fc.Arbitrary<Request> = fc.oneof(
  fc.record({ id, op: fc.constant('hello' as const), timeoutMs: maybe(fc.nat()), session: maybe(fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }).filter((s) => !s.includes('\u0000') && Buffer.byteLength(s) <= 128)), token: maybe(fc.string()) }),
  fc.record({ id, op: fc.constant('ping' as const), ack: maybe(index) }),
  fc.record({ id, op: fc.constant('bye' as const) }),
  fc.record({ id, op: fc.constant('push' as const), path, data, persistent: maybe(fc.boolean()), watch: maybe(fc.boolean()), ifLastIndex: maybe(index) }),
  fc.record({ id, op: fc.constant('get' as const), path, consistency: maybe(fc.constantFrom('linearizable' as const, 'stale' as const)) }),
  fc.record({ id, op: fc.constant('ls' as const), path: fc.oneof(path, fc.constant('/')) }),
  fc.record({ id, op: fc.constant('delete' as const), path, index }),
  fc.record({ id, op: fc.constant('watch' as const), path, prefix: maybe(fc.boolean()) }),
  fc.record({ id, op: fc.constant('unwatch' as const), path, prefix: maybe(fc.boolean()) }),
).map((r) => withoutUndefined(r) as Request);

describe('round trip', () => {
  for (const encoding of ['msgpack', 'json'] as const) {
    it(`every valid request decodes to itself after encoding [${encoding}]`, () => {
      fc.assert(
        fc.property(request, (req) => {
          const frame = encodeRequest(req, encoding);
          const decoded = decodeFrame(typeof frame === 'string' ? Buffer.from(frame) : frame, encoding === 'msgpack');
          expect(decoded).toEqual({ ok: true, request: req, encoding });
        }),
        { numRuns: 500 },
      );
    });
  }
});
