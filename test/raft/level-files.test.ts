// The pre-open check of LevelDB's own checksums (src/raft/level-files.ts), on a
// real LevelDB directory: a clean one passes, every flipped byte in a record or a
// block is named, and only the newest log may end in a record cut short.
import { ClassicLevel } from 'classic-level';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crc32c } from '../../src/raft/crc32c.js';
import { checkLevelFiles, checkLogBytes, checkTableBytes, LevelFileDamage } from '../../src/raft/level-files.js';

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

  it('lets only the newest log end inside a record', async () => {
    const log = names.find((n) => n.endsWith('.log'))!;
    const bytes = await readFile(join(dir, log));
    const cut = bytes.subarray(0, bytes.length - 3);
    expect(() => checkLogBytes(log, cut, true)).not.toThrow();
    expect(() => checkLogBytes(log, cut, false)).toThrow(/ends inside a record/);
  });
});
