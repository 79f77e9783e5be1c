// The cold store on a real directory: units round-trip byte for byte, a file is
// replaced whole, and every way a file can go bad (missing, any byte flipped,
// cut short at any length, another unit's file, a format this build does not
// know) is an error that names the unit, never a different answer. A write cut
// short by a crash leaves a temporary file that reads ignore and sweep removes.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { open } from 'node:fs/promises';
import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { Breather, ColdStore, ColdStoreError, decodeColdFile, deflateInSlices, PACK_SLICE, PackedEntries, packInSlices, SlicedEntries, SYNC_CHUNK, type ColdUnit, type HeldColdUnit } from '../../../src/families/hibernate/cold-store.js';
import { pack } from 'msgpackr';
import { deflateSync } from 'node:zlib';

const dirs: string[] = [];
afterEach(() => vi.restoreAllMocks());
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function store(): Promise<ColdStore> {
  const dir = mkdtempSync(join(tmpdir(), 'vera-cold-'));
  dirs.push(dir);
  return ColdStore.open(join(dir, 'cold'));
}

const entry = (k: string, v: string): readonly [Buffer, Buffer] => [Buffer.from(k), Buffer.from(v)];
const small: ColdUnit = { unit: '/users/alice', meta: { items: 2, frozenAt: 42 }, entries: [entry('a', 'one'), entry('b', 'two')] };

function problemOf(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    if (err instanceof ColdStoreError) return err.problem;
    throw err;
  }
  return 'none';
}

describe('the cold store', () => {
  it('round-trips any unit byte for byte, and says how many bytes it wrote', async () => {
    const s = await store();
    await fc.assert(
      fc.asyncProperty(
        fc.string({ minLength: 1, maxLength: 40 }).map((x) => `/u/${x}`),
        fc.array(fc.tuple(fc.uint8Array({ maxLength: 24 }), fc.uint8Array({ maxLength: 200 })), { maxLength: 40 }),
        fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.integer(), fc.string({ maxLength: 8 }))),
        async (unit, raw, meta) => {
          const cold: ColdUnit = { unit, meta, entries: raw.map(([k, v]) => [Buffer.from(k), Buffer.from(v)] as const) };
          const bytes = await s.write(cold);
          expect(statSync(s.fileOf(unit)).size).toBe(bytes);
          const back = await s.read(unit);
          expect(back.unit).toBe(unit);
          expect(back.meta).toEqual(meta);
          expect(back.entries.map(([k, v]) => [k.toString('hex'), v.toString('hex')])).toEqual(cold.entries.map(([k, v]) => [k.toString('hex'), v.toString('hex')]));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('replaces a unit\'s file whole', async () => {
    const s = await store();
    await s.write(small);
    await s.write({ ...small, entries: [entry('c', 'three')] });
    expect((await s.read(small.unit)).entries).toEqual([entry('c', 'three')]);
    expect(readdirSync(s.dir)).toHaveLength(1);
  });

  it('a missing file is an error naming the unit', async () => {
    const s = await store();
    await expect(s.read('/users/bob')).rejects.toMatchObject({ name: 'ColdStoreError', unit: '/users/bob', problem: 'missing' });
    expect(await s.exists('/users/bob')).toBe(false);
  });

  it('any byte flipped, anywhere in the file, is refused', async () => {
    const s = await store();
    await s.write(small);
    const good = readFileSync(s.fileOf(small.unit));
    const seen = new Set<string>();
    for (let i = 0; i < good.length; i++) {
      for (const bit of [0x01, 0x80]) {
        const bad = Buffer.from(good);
        bad[i]! ^= bit;
        const problem = problemOf(() => decodeColdFile(small.unit, bad));
        expect(problem, `byte ${i} bit ${bit}`).not.toBe('none');
        seen.add(problem);
      }
    }
    // A length made longer reads as a file cut short; everything else fails the checksum (which covers the header too).
    expect([...seen].sort()).toEqual(['corrupt', 'truncated']);
  });

  it('a file cut short at any length is refused', async () => {
    const s = await store();
    await s.write(small);
    const good = readFileSync(s.fileOf(small.unit));
    for (let n = 0; n < good.length; n++) {
      expect(problemOf(() => decodeColdFile(small.unit, good.subarray(0, n))), `length ${n}`).toMatch(/^(truncated|corrupt)$/);
    }
  });

  it('another unit\'s file under this unit\'s name is refused', async () => {
    const s = await store();
    await s.write(small);
    copyFileSync(s.fileOf(small.unit), s.fileOf('/users/mallory'));
    await expect(s.read('/users/mallory')).rejects.toMatchObject({ problem: 'foreign', message: expect.stringContaining('/users/alice') });
  });

  it('a format this build does not know is refused by name, even with a good checksum', async () => {
    const s = await store();
    await s.write(small);
    const file = readFileSync(s.fileOf(small.unit));
    file.writeUInt16BE(7, 8);
    createHash('sha256').update(file.subarray(8, 16)).update(file.subarray(48)).digest().copy(file, 16);
    expect(() => decodeColdFile(small.unit, file)).toThrow(/format version 7; this build reads 1/);
  });

  it('a write cut short by a crash leaves a temporary file: reads ignore it, sweep removes it and unclaimed files', async () => {
    const s = await store();
    await s.write(small);
    await s.write({ ...small, unit: '/users/thawed' });
    writeFileSync(`${s.fileOf(small.unit)}.tmp-deadbeef`, 'half a file');
    expect((await s.read(small.unit)).entries).toEqual(small.entries);
    const kept = s.fileOf(small.unit);
    const removed = await s.sweep((file) => file === kept);
    expect(removed.sort()).toEqual([`${kept.split('/').pop()}.tmp-deadbeef`, s.fileOf('/users/thawed').split('/').pop()].sort());
    expect(readdirSync(s.dir)).toEqual([kept.split('/').pop()]);
    await s.remove(small.unit);
    expect(readdirSync(s.dir)).toEqual([]);
  });

  it('holds 10^6 entries over 1,000 units and gives every one back', { timeout: 120_000 }, async () => {
    const s = await store();
    const UNITS = 1000;
    const PER = 1000;
    let bytes = 0;
    for (let u = 0; u < UNITS; u++) {
      const entries = Array.from({ length: PER }, (_, i) => entry(`/users/u${u}/list\u0000${String(i).padStart(8, '0')}`, JSON.stringify({ n: i, u })));
      bytes += await s.write({ unit: `/users/u${u}`, meta: { items: PER }, entries });
    }
    let count = 0;
    for (let u = 0; u < UNITS; u++) {
      const back = await s.read(`/users/u${u}`);
      expect(back.entries[PER - 1]![1].toString()).toBe(JSON.stringify({ n: PER - 1, u }));
      count += back.entries.length;
    }
    expect(count).toBe(UNITS * PER);
    console.info(`10^6 entries in ${UNITS} cold files: ${Math.round(bytes / 2 ** 20)} MiB`);
  });
});

describe('encoding a large unit (issue 34, defect 5)', () => {
  it('gives the bytes one pack() call gives, for every size around the slice and header bounds', async () => {
    for (const n of [0, 1, 15, 16, PACK_SLICE - 1, PACK_SLICE, PACK_SLICE + 1, 3 * PACK_SLICE + 7, 70_000]) {
      const cold: ColdUnit = { unit: '/users/big', meta: { frozenAt: 7 }, entries: Array.from({ length: n }, (_, i) => [Buffer.from(`k${i}`), Buffer.from('v'.repeat(i % 5))] as const) };
      expect((await packInSlices(cold)).equals(pack([cold.unit, cold.meta, cold.entries.map(([k, v]) => [k, v])])), `${n} entries`).toBe(true);
    }
  });

  it('entries collected a slice at a time (a freeze\'s read) give the same bytes, and the same entries back, as an array of them', async () => {
    for (const n of [1, 15, 16, PACK_SLICE - 1, PACK_SLICE, PACK_SLICE + 1, 3 * PACK_SLICE + 7]) {
      const array = Array.from({ length: n }, (_, i) => [Buffer.from(`k${i}`), Buffer.from('v'.repeat(i % 300))] as const);
      const sliced = new SlicedEntries();
      for (const [k, v] of array) sliced.push(k, v);
      expect(sliced.length).toBe(n);
      const unit = { unit: '/users/big', meta: { frozenAt: 7 } };
      expect((await packInSlices({ ...unit, entries: sliced })).equals(await packInSlices({ ...unit, entries: array })), `${n} entries`).toBe(true);
      expect(sliced.slice(0, n), `${n} entries`).toEqual(array);
      for (const [from, to] of [[PACK_SLICE - 2, PACK_SLICE + 3], [n - 3, n + 3], [1, 2]] as const) expect(sliced.slice(from, to), `${n}: [${from}, ${to})`).toEqual(array.slice(Math.max(0, from), to));
      expect(() => sliced.push(Buffer.from('k'), Buffer.from('v'))).toThrow(/after their end/);
    }
  });

  it('entries collected a slice at a time are written as pack() writes them, whatever size each key and value header takes', async () => {
    const sizes = [0, 1, 255, 256, 65_535, 65_536, 70_000];
    const array = sizes.map((v, j) => [Buffer.alloc(sizes[sizes.length - 1 - j]!, 97 + j), Buffer.alloc(v, 65 + j)] as const);
    const sliced = new SlicedEntries();
    for (const [k, v] of array) sliced.push(k, v);
    const unit = { unit: '/users/big', meta: { frozenAt: 7 } };
    expect((await packInSlices({ ...unit, entries: sliced })).equals(pack([unit.unit, unit.meta, array.map(([k, v]) => [k, v])]))).toBe(true);
    expect(sliced.slice(0, array.length).every(([k, v], n) => k.equals(array[n]![0]) && v.equals(array[n]![1]))).toBe(true);
  });

  it('lets the event loop turn between slices, so other work runs while a 100,000-item unit is encoded', async () => {
    const n = 100_000;
    const cold: ColdUnit = { unit: '/users/big', meta: { frozenAt: 7 }, entries: Array.from({ length: n }, (_, i) => [Buffer.from(`k${i}`), Buffer.from('value')] as const) };
    let turns = 0;
    let packing = true;
    const tick = (): void => {
      turns++;
      if (packing) setImmediate(tick);
    };
    setImmediate(tick);
    await packInSlices(cold);
    packing = false;
    // One turn at least between any two slices: no stretch of the encoding is longer than a slice.
    expect(turns).toBeGreaterThanOrEqual(n / PACK_SLICE - 1);
  });
});

describe('writing a large unit without holding the disk or the thread pool (issue 34)', () => {
  it('compresses in slices to the bytes one deflate of the whole encoding gives, for sizes around the slice', async () => {
    for (const n of [0, 1, PACK_SLICE - 1, PACK_SLICE, PACK_SLICE + 1, 20_000]) {
      const cold: ColdUnit = { unit: '/users/big', meta: { frozenAt: 7 }, entries: Array.from({ length: n }, (_, i) => [Buffer.from(`k${i}`), Buffer.from(`value ${i % 97}`)] as const) };
      expect((await deflateInSlices(cold)).equals(deflateSync(pack([cold.unit, cold.meta, cold.entries.map(([k, v]) => [k, v])]))), `${n} entries`).toBe(true);
    }
  });

  it('syncs a large file a chunk at a time, and a freeze\'s files share one sync of the directory', async () => {
    const s = await store();
    // Values that do not compress, so the file spans several chunks.
    const big: ColdUnit = { unit: '/users/big', meta: { frozenAt: 1 }, entries: Array.from({ length: 3_000 }, (_, i) => entry(`k${String(i).padStart(5, '0')}`, randomBytes(300).toString('hex'))) };
    const probe = await open(join(s.dir, '..', 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
    await probe.close();
    const datasync = vi.spyOn(proto, 'datasync');
    const bytes = await s.write(big);
    expect(bytes).toBeGreaterThan(3 * SYNC_CHUNK);
    expect(datasync.mock.calls.length).toBe(Math.ceil(bytes / SYNC_CHUNK) - 1);
    expect(await s.read(big.unit)).toEqual(big);
    // Writes that leave the directory to the caller sync none; syncs asked at once share one.
    const dirSyncs = vi.spyOn(s, 'syncDir');
    await s.write({ unit: '/users/z', meta: {}, entries: [entry('k', 'z')] });
    expect(dirSyncs).toHaveBeenCalledTimes(1);
    dirSyncs.mockClear();
    for (const u of ['/users/a', '/users/b', '/users/c']) await s.write({ unit: u, meta: {}, entries: [entry('k', u)] }, undefined, { syncDir: false });
    expect(dirSyncs).not.toHaveBeenCalled();
    const first = s.syncDir();
    expect(s.syncDir()).toBe(first);
    await first;
    for (const u of ['/users/a', '/users/b', '/users/c']) expect((await s.read(u)).entries).toEqual([entry('k', u)]);
  });
});

describe('reading a large unit in slices (issue 34, defect 5)', () => {
  /** A held unit as read() gives it: every entry a pair of Buffers. */
  const whole = (held: HeldColdUnit): ColdUnit => ({ ...held, entries: held.entries.slice(0, held.entries.length) });
  /** A file whose header and checksum are good around `raw` (a decompressed body), deflated. */
  function fileAround(raw: Buffer): Buffer {
    const body = deflateSync(raw);
    const header = Buffer.alloc(48);
    Buffer.from('VERACOLD', 'ascii').copy(header, 0);
    header.writeUInt16BE(1, 8);
    header.writeUInt32BE(body.length, 12);
    createHash('sha256').update(header.subarray(8, 16)).update(body).digest().copy(header, 16);
    return Buffer.concat([header, body]);
  }

  it('gives what read() gives, for sizes around the slice', async () => {
    const s = await store();
    for (const n of [0, 1, PACK_SLICE, PACK_SLICE + 1, 2 * PACK_SLICE + 500]) {
      const cold: ColdUnit = { unit: `/users/n${n}`, meta: { frozenAt: n }, entries: Array.from({ length: n }, (_, i) => entry(`k${String(i).padStart(6, '0')}`, `v${i}`)) };
      await s.write(cold);
      const held = await s.readInSlices(cold.unit);
      expect(whole(held), `${n} entries`).toEqual(await s.read(cold.unit));
      // Any slice of the held entries is that slice of read()'s.
      const all = (await s.read(cold.unit)).entries;
      for (const [from, to] of [[0, 1], [n - 1, n + 5], [PACK_SLICE - 1, PACK_SLICE + 2], [-3, 2]] as const) expect(held.entries.slice(from, to), `${n} entries, [${from}, ${to})`).toEqual(all.slice(Math.max(0, from), to));
    }
  });

  it('holds a large unit\'s entries as bounds into one buffer, not a pair of objects each (no old-generation objects for a major GC to mark)', async () => {
    const s = await store();
    const cold: ColdUnit = { unit: '/users/big', meta: { frozenAt: 1 }, entries: Array.from({ length: 20_000 }, (_, i) => entry(`k${String(i).padStart(6, '0')}`, 'v'.repeat(i % 300))) };
    await s.write(cold);
    const held = await s.readInSlices(cold.unit);
    expect(held.entries).toBeInstanceOf(PackedEntries);
    expect(held.entries.length).toBe(20_000);
    expect(held.entries.slice(19_998, 20_000)).toEqual(cold.entries.slice(19_998));
  });

  it('walks a large unit\'s entries for a thaw PACK_SLICE at a time, the event loop turning between', async () => {
    const s = await store();
    const n = 5 * PACK_SLICE + 10;
    const cold: ColdUnit = { unit: '/users/big', meta: { frozenAt: 1 }, entries: Array.from({ length: n }, (_, i) => entry(`k${String(i).padStart(6, '0')}`, 'v'.repeat(i % 50))) };
    await s.write(cold);
    const breather = new Breather();
    const pause = vi.spyOn(breather, 'pause');
    const held = await s.readInSlices(cold.unit, breather);
    expect(held.entries).toBeInstanceOf(PackedEntries);
    expect(held.entries.slice(n - 2, n)).toEqual(cold.entries.slice(n - 2));
    expect(pause).toHaveBeenCalledTimes(5);
  });

  it('paces a freeze\'s encoding with the breather given, which rests three times as long as it worked', async () => {
    const s = await store();
    const n = 3 * PACK_SLICE;
    const cold: ColdUnit = { unit: '/users/paced', meta: { frozenAt: 1 }, entries: Array.from({ length: n }, (_, i) => entry(`k${String(i).padStart(6, '0')}`, 'v')) };
    const breather = Breather.forFreeze();
    const pause = vi.spyOn(breather, 'pause');
    await s.write(cold, undefined, { breather });
    expect(pause).toHaveBeenCalledTimes(2); // between the three slices
    expect(whole(await s.read(cold.unit))).toEqual(cold);
    // The rest is measured against the work since the last pause: 20 ms of work, then at least 3 x 20 ms of rest.
    const rest = async (b: Breather): Promise<number> => {
      const worked = performance.now();
      while (performance.now() - worked < 20) {
        // work
      }
      const resting = performance.now();
      await b.pause();
      return performance.now() - resting;
    };
    const slow = Breather.forFreeze();
    await slow.pause();
    expect(await rest(slow)).toBeGreaterThanOrEqual(55);
  });

  it('gives any unit\'s entries as read() does, keys and values of any bytes and sizes (bin8, bin16, bin32)', async () => {
    const s = await store();
    const sizes: ColdUnit = { unit: '/users/p', meta: { frozenAt: 0 }, entries: [entry('k', ''), [Buffer.alloc(300, 1), Buffer.alloc(70_000, 2)], [Buffer.alloc(255, 3), Buffer.alloc(65_536, 4)]] };
    await s.write(sizes);
    expect(whole(await s.readInSlices(sizes.unit))).toEqual(sizes);
    const bytes = fc.uint8Array({ maxLength: 600 }).map((b) => Buffer.from(b));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(bytes.filter((b) => b.length > 0), bytes), { maxLength: 20 }), async (pairs) => {
        const cold: ColdUnit = { unit: '/users/p', meta: { frozenAt: pairs.length }, entries: pairs };
        await s.write(cold);
        expect(whole(await s.readInSlices(cold.unit))).toEqual(await s.read(cold.unit));
      }),
      { numRuns: 40 },
    );
  });

  it('refuses every body read() refuses, with the same problem, though its checksum is good', async () => {
    const s = await store();
    await s.write({ unit: '/users/x', meta: {}, entries: [] }); // makes the directory
    const good = pack(['/users/x', { frozenAt: 1 }, [[Buffer.from('k'), Buffer.from('v')]]]);
    const bodies: Record<string, Buffer> = {
      'not [unit, meta, entries]': pack([1, 2]),
      'a meta that is not a map': pack(['/users/x', 3, []]),
      'an entry that is not [key, value]': pack(['/users/x', {}, [[Buffer.from('k')]]]),
      'fewer entries than its array says': Buffer.concat([good.subarray(0, good.length - 5)]),
      'bytes after the entries': Buffer.concat([good, Buffer.from([1])]),
      'another unit': pack(['/users/y', { frozenAt: 1 }, []]),
    };
    for (const [what, raw] of Object.entries(bodies)) {
      writeFileSync(s.fileOf('/users/x'), fileAround(raw));
      const sync = await s.read('/users/x').then(() => 'none', (err: ColdStoreError) => err.problem);
      const sliced = await s.readInSlices('/users/x').then(() => 'none', (err: ColdStoreError) => err.problem);
      expect(sync, what).not.toBe('none');
      expect(sliced, what).toBe(sync);
    }
    writeFileSync(s.fileOf('/users/x'), fileAround(good));
    expect(whole(await s.readInSlices('/users/x')).entries).toEqual([[Buffer.from('k'), Buffer.from('v')]]);
  });
});
