// Frames built to make the decoder work or to be read two ways. Each was found
// against a running server: a 7.7 MB MessagePack map of 1.3M keys held the event
// loop 2.8 s (decoded in full before the data limit was checked); a string
// ending in a cut-short UTF-8 character made msgpackr read past its end and see
// other keys than the byte scan did; invalid UTF-8 in a path became U+FFFD, so
// different byte strings named one list. All are refused on the raw bytes now.

import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, decodeFrame } from '../../src/protocol/index.js';

function str(text: string | Buffer): Buffer {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  if (bytes.length > 31) throw new Error('fixstr only');
  return Buffer.concat([Buffer.from([0xa0 | bytes.length]), bytes]);
}

/** A map32 header followed by `entries` encoded key/value pairs. */
function map32(count: number): Buffer {
  const header = Buffer.alloc(5);
  header[0] = 0xdf;
  header.writeUInt32BE(count, 1);
  return header;
}

/** {id: 7, op: "push", path: "/p", data: {k0: 0, k1: 0, ...}} with `keys` keys in data, as raw MessagePack. */
function pushWithWideMap(keys: number): Buffer {
  const parts: Buffer[] = [Buffer.from([0x84]), str('id'), Buffer.from([7]), str('op'), str('push'), str('path'), str('/p'), str('data'), map32(keys)];
  for (let i = 0; i < keys; i++) parts.push(str(`k${i}`), Buffer.from([0]));
  return Buffer.concat(parts);
}

describe('work a frame can cause before it is validated', () => {
  it('a MessagePack frame declaring more elements than the limit is TOO_LARGE at the container header', () => {
    const frame = pushWithWideMap(1_300_000);
    expect(frame.length).toBeGreaterThan(7_000_000);
    const started = performance.now();
    const decoded = decodeFrame(frame, true, DEFAULT_LIMITS);
    const ms = performance.now() - started;
    expect(decoded).toMatchObject({ ok: false, id: 7, error: { code: 'TOO_LARGE', message: expect.stringMatching(/more than 100000 elements/) as unknown } });
    console.log(`1.3M-key MessagePack frame (${(frame.length / 1e6).toFixed(1)} MB) refused in ${ms.toFixed(1)} ms`);
  });

  it('a JSON frame with more elements than the limit is TOO_LARGE before it is parsed', () => {
    const data: Record<string, number> = {};
    for (let i = 0; i < 300_000; i++) data[`k${i}`] = 0;
    const text = JSON.stringify({ id: 7, op: 'push', path: '/p', data });
    const started = performance.now();
    const decoded = decodeFrame(Buffer.from(text), false, DEFAULT_LIMITS);
    const ms = performance.now() - started;
    expect(decoded).toMatchObject({ ok: false, error: { code: 'TOO_LARGE', message: expect.stringMatching(/more than 100000 elements/) as unknown } });
    console.log(`300k-key JSON frame (${(text.length / 1e6).toFixed(1)} MB) refused in ${ms.toFixed(1)} ms`);
  });

  it('elements inside JSON strings are not counted, and a frame at the limit is decoded', () => {
    const commas = ','.repeat(500_000);
    expect(decodeFrame(Buffer.from(JSON.stringify({ id: 1, op: 'push', path: '/p', data: commas })), false, DEFAULT_LIMITS)).toMatchObject({ ok: true });
    const escaped = JSON.stringify({ id: 1, op: 'push', path: '/p', data: 'a\\",[{:'.repeat(1000) });
    expect(decodeFrame(Buffer.from(escaped), false, DEFAULT_LIMITS)).toMatchObject({ ok: true });
    // id, op, path, data: 8 elements of the frame, then 2 per key of data.
    const keys = (DEFAULT_LIMITS.elementsMax - 8) / 2;
    expect(decodeFrame(pushWithWideMap(keys), true, DEFAULT_LIMITS)).toMatchObject({ ok: true });
    expect(decodeFrame(pushWithWideMap(keys + 1), true, DEFAULT_LIMITS)).toMatchObject({ ok: false, error: { code: 'TOO_LARGE' } });
  });
});

describe('strings are read on their exact bytes', () => {
  it('a string ending in a cut-short UTF-8 character is refused, so no decoder can read past it', () => {
    // {path: "/a\xe2", op: "get"}: msgpackr took 0xe2 plus the next two bytes as one character and
    // decoded {"112": "get", path: "/a⢯"}: keys the byte scan never saw.
    const frame = Buffer.concat([Buffer.from([0x83]), str('id'), Buffer.from([3]), str('path'), str(Buffer.from([0x2f, 0x61, 0xe2])), str('op'), str('get')]);
    expect(decodeFrame(frame, true, DEFAULT_LIMITS)).toMatchObject({ ok: false, id: 3, error: { code: 'BAD_REQUEST', message: expect.stringMatching(/path: string is not valid UTF-8/) as unknown } });
  });

  it('paths that differ only in invalid bytes are refused instead of all becoming U+FFFD', () => {
    for (const bad of [[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]]) {
      const frame = Buffer.concat([Buffer.from([0x83]), str('id'), Buffer.from([4]), str('op'), str('get'), str('path'), str(Buffer.from([0x2f, 0x78, ...bad]))]);
      expect(decodeFrame(frame, true, DEFAULT_LIMITS)).toMatchObject({ ok: false, id: 4, error: { code: 'BAD_REQUEST', message: expect.stringMatching(/not valid UTF-8/) as unknown } });
    }
    const key = Buffer.concat([Buffer.from([0x83]), str('id'), Buffer.from([5]), str('op'), str('get'), str(Buffer.from([0x70, 0x61, 0x74, 0xff])), str('/x')]);
    expect(decodeFrame(key, true, DEFAULT_LIMITS)).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST', message: expect.stringMatching(/map key is not valid UTF-8/) as unknown } });
  });
});
