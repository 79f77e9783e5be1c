import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Bucket, KeyError, MAX_INDEX, bucketRange, decodeIndex, decodeInternalPropertyKey, decodeLogKey, decodePropertyKey, encodeIndex, internalPropertyKey, logKey, propertyKey, validateSessionId } from '../src/keys/index.js';
import { clientDataKey, clientDataRange, decodeClientDataKey, decodeItemKey, itemKey, itemRange, itemSeekKey, ListsBucket } from '../src/families/lists/keys.js';
import { clientKey, decodeClientKey, SessionsBucket } from '../src/families/sessions/keys.js';
import { decodeLagKey, lagKey, LagBucket } from '../src/families/lag/keys.js';
import { decodeWatchKey, watchKey, watchRange, WatchesBucket } from '../src/families/watches/keys.js';
import { MAX_PATH_BYTES, parentPath, pathAndAncestors, validatePath } from '../src/protocol/index.js';

// Characters chosen to sit on both sides of '/' (0x2f) and SEP in byte order,
// plus multi-byte UTF-8, so ordering bugs around separators show up.
const segmentChar = fc.constantFrom('a', 'b', 'z', '-', '.', '0', '~', ' ', 'é', '\u{1F600}', '\u00ff');
const segment = fc
  .array(segmentChar, { minLength: 1, maxLength: 4 })
  .map((cs) => cs.join(''))
  .filter((s) => s !== '.' && s !== '..');
const path = fc.array(segment, { minLength: 1, maxLength: 4 }).map((segs) => '/' + segs.join('/'));
const index = fc.oneof(fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: MAX_INDEX }), fc.constant(MAX_INDEX));
const session = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }).filter((s) => validateSessionId(s) === null);

const sign = (n: number): number => (n < 0 ? -1 : n > 0 ? 1 : 0);
const cmpBytes = (a: string, b: string): number => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
const inRange = (k: Buffer, r: { gte: Buffer; lt: Buffer }): boolean =>
  Buffer.compare(k, r.gte) >= 0 && Buffer.compare(k, r.lt) < 0;

describe('indexes', () => {
  it('encodes the seed 003 log key examples byte for byte', () => {
    expect(logKey(1).toString('hex')).toBe('00020000000000000001');
    expect(logKey(255).toString('hex')).toBe('000200000000000000ff');
    expect(logKey(9007199254740991).toString('hex')).toBe('0002001fffffffffffff');
  });

  it('round-trips and keeps numeric order in byte order', () => {
    fc.assert(
      fc.property(index, index, (a, b) => {
        expect(decodeIndex(encodeIndex(a))).toBe(a);
        expect(decodeLogKey(logKey(a))).toBe(a);
        expect(sign(Buffer.compare(encodeIndex(a), encodeIndex(b)))).toBe(sign(a - b));
        expect(sign(Buffer.compare(logKey(a), logKey(b)))).toBe(sign(a - b));
      }),
    );
  });

  it.each([-1, 1.5, MAX_INDEX + 1, Number.NaN, Infinity])('rejects index %s', (bad) => {
    expect(() => encodeIndex(bad)).toThrow(KeyError);
    expect(() => logKey(bad)).toThrow(KeyError);
  });

  it('rejects malformed log keys', () => {
    expect(() => decodeLogKey(Buffer.from('0002000000', 'hex'))).toThrow(KeyError);
    expect(() => decodeLogKey(Buffer.concat([logKey(1), Buffer.from([0])]))).toThrow(KeyError);
    expect(() => decodeLogKey(Buffer.from('00030000000000000001', 'hex'))).toThrow(KeyError);
    expect(() => decodeLogKey(Buffer.from('00020020000000000000', 'hex'))).toThrow(/MAX_INDEX/);
  });
});

describe('properties and buckets', () => {
  it('encodes the seed 003 property examples byte for byte', () => {
    expect(propertyKey('foo').toString('hex')).toBe('0000666f6f');
    expect(internalPropertyKey('foo').toString('hex')).toBe('0001666f6f');
  });

  it('round-trips property names', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', minLength: 1 }), (name) => {
        expect(decodePropertyKey(propertyKey(name))).toBe(name);
        expect(decodeInternalPropertyKey(internalPropertyKey(name))).toBe(name);
      }),
    );
  });

  it('rejects empty names and keys of another bucket', () => {
    expect(() => propertyKey('')).toThrow(KeyError);
    expect(() => decodePropertyKey(internalPropertyKey('x'))).toThrow(KeyError);
    expect(() => decodeInternalPropertyKey(Buffer.from([0x00, 0x01]))).toThrow(KeyError);
  });

  it('bucketRange holds exactly the keys of its bucket', () => {
    const samples = (b: number): Buffer[] => [
      Buffer.from([b >> 8, b & 0xff]),
      Buffer.from([b >> 8, b & 0xff, 0xff, 0xff, 0xff]),
      Buffer.from([b >> 8, b & 0xff, 0x00]),
    ];
    for (const b of Object.values(Bucket)) {
      const r = bucketRange(b);
      for (const other of [0, 1, 2, 3, 4, 5, 6, 7, 8]) {
        for (const k of samples(other)) expect(inRange(k, r)).toBe(other === b);
      }
    }
    expect(() => bucketRange(0xffff)).toThrow(KeyError);
    expect(() => bucketRange(-1)).toThrow(KeyError);
  });
});

describe('item keys', () => {
  it('lays out /data + path + SEP + index8 as in seed 003', () => {
    expect(itemKey('/foo/bar', 1).toString('hex')).toBe(
      '0003' + Buffer.from('/data/foo/bar').toString('hex') + '0000' + '0000000000000001',
    );
  });

  it('round-trips path and index', () => {
    fc.assert(
      fc.property(path, index, (p, i) => {
        expect(decodeItemKey(itemKey(p, i))).toEqual({ path: p, index: i });
      }),
    );
  });

  it('orders by path bytes, then index', () => {
    fc.assert(
      fc.property(path, index, path, index, (p, i, q, j) => {
        const expected = p === q ? sign(i - j) : sign(cmpBytes(p, q));
        expect(sign(Buffer.compare(itemKey(p, i), itemKey(q, j)))).toBe(expected);
      }),
    );
  });

  it('keeps all items of one path contiguous, inside itemRange', () => {
    fc.assert(
      fc.property(path, index, index, path, index, (p, i1, i2, q, j) => {
        const lo = itemKey(p, Math.min(i1, i2));
        const hi = itemKey(p, Math.max(i1, i2));
        const k = itemKey(q, j);
        const between = Buffer.compare(k, lo) > 0 && Buffer.compare(k, hi) < 0;
        if (between) expect(q).toBe(p);
        expect(inRange(k, itemRange(p))).toBe(q === p);
      }),
    );
  });

  it('itemSeekKey prefixes exactly the items whose path starts with the text', () => {
    fc.assert(
      fc.property(path, path, index, (prefix, p, i) => {
        const k = itemKey(p, i);
        const seek = itemSeekKey(prefix);
        expect(k.subarray(0, seek.length).equals(seek)).toBe(p.startsWith(prefix));
      }),
    );
  });

  it('rejects paths that would make ambiguous keys', () => {
    expect(() => itemKey('/a\u0000b', 1)).toThrow(KeyError);
    expect(() => itemKey('a', 1)).toThrow(KeyError);
    expect(() => itemKey('/a\uD800', 1)).toThrow(KeyError);
    expect(() => itemKey('/a', -1)).toThrow(KeyError);
    expect(() => itemRange('/a\u0000')).toThrow(KeyError);
  });

  it('rejects malformed item keys', () => {
    const good = itemKey('/a', 7);
    expect(() => decodeItemKey(good.subarray(0, good.length - 1))).toThrow(KeyError);
    expect(() => decodeItemKey(Buffer.concat([good, Buffer.from([1])]))).toThrow(KeyError);
    expect(() => decodeItemKey(Buffer.concat([Buffer.from([0, 3]), Buffer.from('/dat/a'), Buffer.alloc(10)]))).toThrow(
      KeyError,
    );
    expect(() => decodeItemKey(Buffer.concat([Buffer.from([0, 3]), Buffer.from('/data/a')]))).toThrow(/separator/);
    const badUtf8 = Buffer.concat([Buffer.from([0, 3]), Buffer.from('/data/'), Buffer.from([0xc3]), Buffer.alloc(10)]);
    expect(() => decodeItemKey(badUtf8)).toThrow(/UTF-8/);
  });
});

describe('client, client data and lag keys', () => {
  it('lays out the seed 003 forms', () => {
    expect(clientKey('A').toString()).toBe('\u0000\u0004/client/A');
    expect(lagKey('A').toString()).toBe('\u0000\u0007/lag/A');
    expect(clientDataKey('A', '/foo/bar', 1).toString('hex')).toBe(
      '0005' +
        Buffer.from('/cdata/A').toString('hex') +
        '0000' +
        Buffer.from('/data/foo/bar').toString('hex') +
        '0000' +
        '0000000000000001',
    );
  });

  it('round-trip', () => {
    fc.assert(
      fc.property(session, path, index, (s, p, i) => {
        expect(decodeClientKey(clientKey(s))).toBe(s);
        expect(decodeLagKey(lagKey(s))).toBe(s);
        expect(decodeClientDataKey(clientDataKey(s, p, i))).toEqual({ session: s, path: p, index: i });
      }),
    );
  });

  it('clientDataRange holds exactly the entries of one session, ordered like item keys', () => {
    fc.assert(
      fc.property(session, session, path, index, path, index, (s, t, p, i, q, j) => {
        expect(inRange(clientDataKey(t, p, i), clientDataRange(s))).toBe(s === t);
        const order = Buffer.compare(clientDataKey(s, p, i), clientDataKey(s, q, j));
        expect(sign(order)).toBe(sign(Buffer.compare(itemKey(p, i), itemKey(q, j))));
      }),
    );
  });

  it.each(['', 'a\u0000b', 'x'.repeat(129), '\uDC00'])('rejects session id %j', (bad) => {
    expect(validateSessionId(bad)).not.toBeNull();
    expect(() => clientKey(bad)).toThrow(KeyError);
    expect(() => lagKey(bad)).toThrow(KeyError);
    expect(() => clientDataKey(bad, '/a', 1)).toThrow(KeyError);
    expect(() => watchKey({ prefix: false, path: '/a', session: bad })).toThrow(KeyError);
  });

  it('rejects keys with an empty session id', () => {
    expect(() => decodeClientKey(Buffer.from('\u0000\u0004/client/'))).toThrow(KeyError);
    expect(() => decodeLagKey(Buffer.from('\u0000\u0007/lag/'))).toThrow(KeyError);
  });
});

describe('watch keys', () => {
  it('lays out exact and prefix forms', () => {
    expect(watchKey({ prefix: false, path: '/foo/bar', session: 'A' }).toString()).toBe(
      '\u0000\u0006/watch/foo/bar\u0000\u0000A',
    );
    expect(watchKey({ prefix: true, path: '/', session: 'A' }).toString()).toBe('\u0000\u0006/pwatch/\u0000\u0000A');
  });

  it('round-trip and stay in the range of their own path and kind only', () => {
    fc.assert(
      fc.property(fc.boolean(), path, session, fc.boolean(), path, session, (pf, p, s, qf, q, t) => {
        const ref = { prefix: pf, path: p, session: s };
        const k = watchKey(ref);
        expect(decodeWatchKey(k)).toEqual(ref);
        expect(inRange(k, watchRange(q, qf))).toBe(pf === qf && p === q);
        expect(inRange(k, bucketRange(WatchesBucket.watch))).toBe(true);
        if (pf === qf && p === q) {
          const other = watchKey({ prefix: qf, path: q, session: t });
          expect(sign(Buffer.compare(k, other))).toBe(sign(cmpBytes(s, t)));
        }
      }),
    );
  });

  it('rejects malformed watch keys', () => {
    expect(() => decodeWatchKey(Buffer.from('\u0000\u0006/watch/a\u0000\u0000'))).toThrow(KeyError);
    expect(() => decodeWatchKey(Buffer.from('\u0000\u0006/wat/a\u0000\u0000A'))).toThrow(KeyError);
    expect(() => decodeWatchKey(Buffer.from('\u0000\u0006/watcha\u0000\u0000A'))).toThrow(KeyError);
  });
});

describe('validatePath', () => {
  it.each([
    ['/a', false],
    ['/a/b-c/d.e', false],
    ['/é/\u{1F600}', false],
    ['/', true],
  ])('accepts %j (allowRoot %s)', (p, allowRoot) => {
    expect(validatePath(p, { allowRoot })).toBeNull();
  });

  it.each([
    [42, 'string'],
    ['', "start with '/'"],
    ['a/b', "start with '/'"],
    ['/', 'root'],
    ['/a/', "end with '/'"],
    ['//a', 'empty segment'],
    ['/a//b', 'empty segment'],
    ['/a/./b', "'.'"],
    ['/a/..', "'..'"],
    ['/a\u0000', 'NUL'],
    ['/a\uD800', 'UTF-8'],
    ['/' + 'x'.repeat(MAX_PATH_BYTES), 'longer'],
    ['/' + 'é'.repeat(512), 'longer'],
  ])('rejects %j with a message naming the problem', (p, words) => {
    expect(validatePath(p, { allowRoot: false })).toContain(words);
  });

  it('counts the length limit in UTF-8 bytes', () => {
    expect(validatePath('/' + 'x'.repeat(MAX_PATH_BYTES - 1), { allowRoot: false })).toBeNull();
  });

  it('valid generated paths pass and their ancestors end at the root', () => {
    fc.assert(
      fc.property(path, (p) => {
        if (Buffer.byteLength(p) > MAX_PATH_BYTES) return;
        expect(validatePath(p, { allowRoot: false })).toBeNull();
        const chain = pathAndAncestors(p);
        expect(chain[0]).toBe(p);
        expect(chain[chain.length - 1]).toBe('/');
        expect(chain.length).toBe(p.split('/').length);
        for (const a of chain.slice(1)) expect(validatePath(a, { allowRoot: true })).toBeNull();
      }),
    );
    expect(parentPath('/a/b')).toBe('/a');
    expect(parentPath('/a')).toBe('/');
  });
});

// Issue 33: the first families own their buckets (their keys.ts), not the kernel's key module.
// Seed 003's numbers are unchanged, so every key keeps its bytes.
describe('family buckets', () => {
  it("are the seed's numbers, each in its family's keys.ts", () => {
    expect({ ...ListsBucket, ...SessionsBucket, ...WatchesBucket, ...LagBucket }).toEqual({ item: 0x0003, client: 0x0004, clientData: 0x0005, watch: 0x0006, lag: 0x0007 });
    expect(itemKey('/a', 1).subarray(0, 2).toString('hex')).toBe('0003');
    expect(clientKey('s1').subarray(0, 2).toString('hex')).toBe('0004');
    expect(clientDataKey('s1', '/a', 1).subarray(0, 2).toString('hex')).toBe('0005');
    expect(watchKey({ prefix: false, path: '/a', session: 's1' }).subarray(0, 2).toString('hex')).toBe('0006');
    expect(lagKey('s1').subarray(0, 2).toString('hex')).toBe('0007');
  });

  it('leaves the family buckets to the families: the kernel names only its own three', () => {
    expect(Object.keys(Bucket).sort()).toEqual(['internal', 'log', 'property']);
  });
});
