// The journal's LevelDB keys (keys.ts) byte for byte as docs/storage.md lays
// them out: every member must write the same bytes, and a data directory written
// before must read the same. The expected keys are put together here from the
// documented parts, independently of how keys.ts builds them.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dateIn, expiryKey, itemKey, keyAfterDate, processAtIn, processingKey, waitingKey } from '../../../src/families/journal/keys.js';

const name = fc.stringMatching(/^[a-z0-9._-]{1,64}$/);
const itemKeyText = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 });
const date = fc.oneof(fc.integer({ min: 0, max: 2 ** 32 + 5 }), fc.constant(Number.MAX_SAFE_INTEGER), fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 }));

function head(bucket: number, journal: string): Buffer {
  return Buffer.concat([Buffer.from([bucket >> 8, bucket & 0xff]), Buffer.from([journal.length]), Buffer.from(journal, 'ascii')]);
}

function be8(n: number): Buffer {
  const out = Buffer.alloc(8);
  out.writeBigUInt64BE(BigInt(n));
  return out;
}

describe('journal keys', () => {
  it('are the documented bytes: bucket, name, then hash and key, or priority, date and key', () => {
    fc.assert(
      fc.property(name, itemKeyText, date, fc.integer({ min: 0, max: 255 }), (journal, key, at, priority) => {
        const utf8 = Buffer.from(key, 'utf8');
        const hash = createHash('sha256').update(utf8).digest().subarray(0, 16);
        expect(itemKey(journal, key)).toEqual(Buffer.concat([head(0x000a, journal), hash, utf8]));
        expect(waitingKey(journal, priority, at, key)).toEqual(Buffer.concat([head(0x000b, journal), Buffer.from([priority]), be8(at), utf8]));
        expect(processingKey(journal, at, key)).toEqual(Buffer.concat([head(0x000c, journal), be8(at), utf8]));
        expect(expiryKey(journal, at, key)).toEqual(Buffer.concat([head(0x000d, journal), be8(at), utf8]));
        // What readers take back out of them.
        expect(processAtIn(waitingKey(journal, priority, at, key), journal)).toBe(at);
        expect(keyAfterDate(waitingKey(journal, priority, at, key), journal, 1)).toBe(key);
        expect(dateIn(processingKey(journal, at, key), journal)).toBe(at);
        expect(keyAfterDate(expiryKey(journal, at, key), journal, 0)).toBe(key);
      }),
      { numRuns: 500 },
    );
  });

  it('keep the Waiting index in claim order: priority, then process date, then key', () => {
    fc.assert(
      fc.property(fc.tuple(fc.integer({ min: 0, max: 255 }), date, fc.stringMatching(/^[a-z]{1,8}$/)), fc.tuple(fc.integer({ min: 0, max: 255 }), date, fc.stringMatching(/^[a-z]{1,8}$/)), (a, b) => {
        const order = Buffer.compare(waitingKey('j', ...a), waitingKey('j', ...b));
        const expected = a[0] !== b[0] ? a[0] - b[0] : a[1] !== b[1] ? a[1] - b[1] : Buffer.compare(Buffer.from(a[2]), Buffer.from(b[2]));
        expect(Math.sign(order)).toBe(Math.sign(expected));
      }),
      { numRuns: 500 },
    );
  });

  it('refuse a date no key can hold rather than write a wrong one', () => {
    expect(() => processingKey('j', -1, 'k')).toThrow(RangeError);
    expect(() => waitingKey('j', 0, 1.5, 'k')).toThrow(RangeError);
    expect(() => expiryKey('j', 2 ** 53, 'k')).toThrow(RangeError);
  });
});
