// The pre-open check of LevelDB's own checksums (src/raft/level-files.ts), on a
// real LevelDB directory: a clean one passes, every flipped byte in a record or a
// block is named, and only the newest log may end in a record cut short.
import { ClassicLevel } from 'classic-level';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crc32c } from '../../src/raft/crc32c.js';
import { blockChecksum, checkLevelFiles, checkLogBytes, checkTableBytes, LevelFileDamage, liveFiles, tableBlocks } from '../../src/raft/level-files.js';

let dir = '';
let names: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vera-level-files-'));
  for (let round = 0; round < 2; round++) {
    const db = new ClassicLevel<string, string>(dir);
    await db.open();
    // Values from 0 to 40 KiB: records that fill blocks, span them (first/middle/last) and leave padding.
    for (let i = 0; i < 400; i++) await db.put(`k${round}-${i}`, `${i}:`.padEnd((i * 997) % 41_000, String.fromCharCode(97 + (i % 26))), { sync: i % 50 === 0 });
    await db.close();
  }
  names = await readdir(dir);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const manifestOf = async (): Promise<string> => (await readFile(join(dir, 'CURRENT'), 'utf8')).trim();

describe('checkLevelFiles', () => {
  it('crc32c matches the standard check value', () => {
    expect(crc32c(Buffer.from('123456789')).toString(16)).toBe('e3069283');
  });

  it('passes an undamaged directory (tables, the newest log, the manifest)', async () => {
    expect(names.some((n) => n.endsWith('.ldb'))).toBe(true);
    expect(names.some((n) => n.endsWith('.log'))).toBe(true);
    await expect(checkLevelFiles(dir, names, await manifestOf())).resolves.toBeUndefined();
  });

  it('names every flipped byte in a log record or a table block', async () => {
    for (const name of names.filter((n) => /\.(log|ldb)$/.test(n))) {
      const bytes = await readFile(join(dir, name));
      const check = (b: Buffer): void => (name.endsWith('.log') ? checkLogBytes(name, b, true) : checkTableBytes(name, b));
      let missed = 0;
      for (let k = 0; k < 40; k++) {
        const copy = Buffer.from(bytes);
        const at = Math.floor(((k + 0.5) * copy.length) / 40);
        copy[at] = copy[at]! ^ 0x01;
        try {
          check(copy);
          missed++;
        } catch (error) {
          expect(error).toBeInstanceOf(LevelFileDamage);
          expect((error as Error).message).toMatch(new RegExp(`^${name} is damaged at byte \\d+`));
        }
      }
      // Only the few padding bytes at the end of a full log block are not covered by a checksum.
      expect(missed, name).toBeLessThanOrEqual(name.endsWith('.log') ? 1 : 0);
    }
  });

  it('judges only the files LevelDB holds live: a half-written compaction output or a flushed log left by a crash is not its state', async () => {
    const manifest = await manifestOf();
    const live = liveFiles(manifest, await readFile(join(dir, manifest)));
    const tables = names.filter((n) => n.endsWith('.ldb')).map((n) => Number.parseInt(n, 10));
    expect([...live.tables].sort((a, b) => a - b)).toEqual(tables.sort((a, b) => a - b));
    const logs = names.filter((n) => n.endsWith('.log')).map((n) => Number.parseInt(n, 10));
    expect(logs.every((n) => n >= live.logNumber)).toBe(true);

    // What a kill -9 during a compaction and a log switch leaves: a table file cut short that no version edit
    // names (LevelDB deletes it at open), and a log below the MANIFEST's log number.
    const copy = await mkdtemp(join(tmpdir(), 'vera-level-files-orphans-'));
    try {
      await cp(dir, copy, { recursive: true });
      const next = Math.max(...tables, ...logs) + 1;
      const someTable = await readFile(join(dir, names.find((n) => n.endsWith('.ldb'))!));
      await writeFile(join(copy, `${String(next).padStart(6, '0')}.ldb`), someTable.subarray(0, Math.floor(someTable.length / 2)));
      await writeFile(join(copy, `${String(live.logNumber - 1).padStart(6, '0')}.log`), Buffer.from('not a log at all, and not replayed'));
      await expect(checkLevelFiles(copy, await readdir(copy), manifest)).resolves.toBeUndefined();
      // The same damage in a live table is still named.
      const liveTable = names.find((n) => n.endsWith('.ldb'))!;
      await writeFile(join(copy, liveTable), someTable.subarray(0, Math.floor(someTable.length / 2)));
      await expect(checkLevelFiles(copy, await readdir(copy), manifest)).rejects.toThrow(new RegExp(`^${liveTable} is damaged`));
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  });

  it("checks a data block by its stored checksum without decompressing it (a start on a large store stays quick)", async () => {
    // The checksum covers the stored bytes, so any damage on disk fails it; decompressing every
    // data block as well cost a restart most of its store check (issue 32, rejoin).
    const name = names.find((n) => n.endsWith('.ldb'))!;
    const bytes = await readFile(join(dir, name));
    const first = tableBlocks(name, bytes).handles[0]!; // offset 0: a data block (they come first)
    expect(first.offset).toBe(0);
    bytes[first.size] = 1; // marked snappy-compressed...
    bytes.fill(0xff, 0, first.size); // ...over bytes that are no snappy stream (a length varint that never ends)
    bytes.writeUInt32LE(blockChecksum(bytes, first), first.size + 1);
    expect(() => checkTableBytes(name, bytes)).not.toThrow();
    // A flipped byte in it is still found.
    bytes[7]! ^= 0x01;
    expect(() => checkTableBytes(name, bytes)).toThrow(/checksum mismatch in a table block/);
  });

  it('lets only the newest log end inside a record', async () => {
    const log = names.find((n) => n.endsWith('.log'))!;
    const bytes = await readFile(join(dir, log));
    const cut = bytes.subarray(0, bytes.length - 3);
    expect(() => checkLogBytes(log, cut, true)).not.toThrow();
    expect(() => checkLogBytes(log, cut, false)).toThrow(/ends inside a record/);
  });
});
