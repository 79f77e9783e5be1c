// The protocol's byte and UTF-8 helpers have two implementations: Node's
// (platform.ts, Buffer) and the browser bundle's (platform.browser.ts,
// TextDecoder and a loop). Both run here, on the same inputs, and must agree.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as node from '../../src/protocol/platform.js';
import * as browser from '../../src/protocol/platform.browser.js';

const plain = (bytes: Uint8Array): number[] => [...bytes];

// Strings with lone surrogates, astral characters and a BOM, not only well-formed BMP text.
const anyText = fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), fc.string({ unit: fc.constantFrom('\ud800', '\udc00', '\ufeff', 'a', 'é', '😀') }));
const utf8Bytes = fc.oneof(
  fc.uint8Array({ maxLength: 64 }),
  anyText.map((s) => new TextEncoder().encode(s)),
  // Valid text cut anywhere (a multi-byte character may lose its tail).
  fc.tuple(fc.string({ unit: 'grapheme' }), fc.nat()).map(([s, cut]) => {
    const bytes = new TextEncoder().encode(s);
    return bytes.subarray(0, bytes.length === 0 ? 0 : cut % bytes.length);
  }),
);

describe('the browser platform module agrees with the Node one', () => {
  it('utf8Length', () => {
    fc.assert(fc.property(anyText, (s) => {
      expect(browser.utf8Length(s)).toBe(node.utf8Length(s));
    }), { numRuns: 2000 });
  });

  it('isUtf8', () => {
    fc.assert(fc.property(utf8Bytes, (b) => {
      expect(browser.isUtf8(b)).toBe(node.isUtf8(b));
    }), { numRuns: 2000 });
    expect(browser.isUtf8(new Uint8Array([0xed, 0xa0, 0x80]))).toBe(false); // an encoded surrogate
    expect(browser.isUtf8(new Uint8Array([0xc0, 0xaf]))).toBe(false); // overlong
  });

  it('utf8Slice, invalid bytes and a leading BOM included', () => {
    fc.assert(
      fc.property(utf8Bytes, fc.nat(), fc.nat(), (b, x, y) => {
        const start = b.length === 0 ? 0 : x % (b.length + 1);
        const end = start + (b.length - start === 0 ? 0 : y % (b.length - start + 1));
        expect(browser.utf8Slice(b, start, end)).toBe(node.utf8Slice(b, start, end));
      }),
      { numRuns: 2000 },
    );
    const bom = new Uint8Array([0xef, 0xbb, 0xbf, 0x61]);
    expect(browser.utf8Slice(bom, 0, 4)).toBe('\ufeffa');
  });

  it('frameBytes: one piece, pieces, an ArrayBuffer and a view', () => {
    const a = new Uint8Array([1, 2, 3]);
    const b = new Uint8Array([4, 5]);
    const backing = new Uint8Array([9, 1, 2, 3, 9]);
    for (const frame of [a, [a, b], a.buffer, backing.subarray(1, 4), [] as Uint8Array[]]) {
      expect(plain(browser.frameBytes(frame))).toEqual(plain(node.frameBytes(frame)));
    }
    expect(browser.frameBytes(a)).toBe(a); // no copy of a frame in one piece
  });
});
