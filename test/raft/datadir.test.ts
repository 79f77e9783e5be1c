import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ClassicLevel } from 'classic-level';
import { Packr } from 'msgpackr';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DataDirError, type DataDirErrorCode, FORMAT_KEY, type OpenedDataDir, openDataDir, WRITE_BUFFER_BYTES } from '../../src/raft/datadir.js';
import type { ClusterConfig } from '../../src/raft/types.js';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..', '..');
const CONFIG: ClusterConfig = { voters: ['n1', 'n2', 'n3'], learners: [] };
const OPTIONS = { nodeId: 'n1', initialConfig: CONFIG };

/** Every directory and file under `root` with its bytes, to prove a refused directory was not touched. */
async function tree(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        out[`${relative(root, path)}/`] = 'dir';
        await walk(path);
      } else {
        out[relative(root, path)] = (await readFile(path)).toString('base64');
      }
    }
  };
  await walk(root);
  return out;
}

async function refusal(dir: string, options = OPTIONS): Promise<DataDirError> {
  const error: unknown = await openDataDir(dir, options).then(
    async (opened) => {
      await opened.close();
      return new Error('expected the data directory to be refused');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DataDirError);
  return error as DataDirError;
}

async function expectRefusedUntouched(dir: string, code: DataDirErrorCode): Promise<DataDirError> {
  const before = await tree(dir);
  const error = await refusal(dir);
  expect(error.code).toBe(code);
  expect(await tree(dir)).toEqual(before);
  return error;
}

describe('openDataDir', () => {
  let base: string;
  let dir: string;
  const toClose: OpenedDataDir[] = [];

  async function open(options = OPTIONS): Promise<OpenedDataDir> {
    const opened = await openDataDir(dir, options);
    toClose.push(opened);
    return opened;
  }

  async function openAndClose(): Promise<void> {
    await (await openDataDir(dir, OPTIONS)).close();
  }

  beforeEach(async () => {
    base = await mkdtemp(join(tmpdir(), 'vera-datadir-'));
    dir = join(base, 'nested', 'data');
  });
  afterEach(async () => {
    for (const opened of toClose.splice(0)) await opened.close();
    await rm(base, { recursive: true, force: true });
  });

  it('creates a missing directory as a new store holding the initial config', async () => {
    const opened = await open();
    expect(opened.fresh).toBe(true);
    expect((await readdir(dir)).sort()).toEqual(['acked', 'db']);
    expect((await opened.storage.load()).snapshot).toEqual({ index: 0, term: 0, config: CONFIG });
  });

  it('turns an existing empty directory into a new store', async () => {
    await mkdir(dir, { recursive: true });
    expect((await open()).fresh).toBe(true);
  });

  it('reopens an existing store with its data, keeping the original config', async () => {
    const first = await openDataDir(dir, OPTIONS);
    await first.storage.persist({ term: 2, vote: 'n1', commit: 1 }, [{ index: 1, term: 2, kind: 'noop', data: new Uint8Array() }]);
    await first.close();
    const second = await open({ nodeId: 'n1', initialConfig: { voters: ['x'], learners: [] } });
    expect(second.fresh).toBe(false);
    expect(await second.storage.load()).toEqual({
      hardState: { term: 2, vote: 'n1', commit: 1 },
      snapshot: { index: 0, term: 0, config: CONFIG },
      entries: [{ index: 1, term: 2, kind: 'noop', data: new Uint8Array() }],
    });
  });

  it('refuses a directory holding other files and leaves it untouched', async () => {
    await mkdir(join(dir, 'photos'), { recursive: true });
    await writeFile(join(dir, 'notes.txt'), 'keep me');
    await writeFile(join(dir, 'photos', 'cat.jpg'), Buffer.from([0xff, 0xd8, 0xff]));
    const error = await expectRefusedUntouched(dir, 'foreign');
    expect(error.message).toContain('notes.txt');
  });

  it('refuses a LevelDB without the Vera marker and writes nothing into it', async () => {
    const foreign = new ClassicLevel<Buffer, Buffer>(join(dir, 'db'), { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await foreign.put(Buffer.from('someone'), Buffer.from('else'));
    await foreign.close();
    const error = await refusal(dir);
    expect(error.code).toBe('foreign');
    // LevelDB rotates its own info log when opened, so compare what the database holds.
    const reopened = new ClassicLevel<Buffer, Buffer>(join(dir, 'db'), { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    const pairs: string[] = [];
    for await (const [key, value] of reopened.iterator()) pairs.push(`${key.toString()}=${value.toString()}`);
    await reopened.close();
    expect(pairs).toEqual(['someone=else']);
  });

  it('refuses a store whose CURRENT file is corrupt and leaves it untouched', async () => {
    await openAndClose();
    await writeFile(join(dir, 'db', 'CURRENT'), 'not a manifest name');
    await expectRefusedUntouched(dir, 'corrupt');
  });

  it('refuses a store whose CURRENT file is missing instead of creating a new database', async () => {
    await openAndClose();
    await rm(join(dir, 'db', 'CURRENT'));
    await expectRefusedUntouched(dir, 'corrupt');
  });

  it('refuses a store whose MANIFEST is damaged, without overwriting its data', async () => {
    await openAndClose();
    const manifest = (await readFile(join(dir, 'db', 'CURRENT'), 'utf8')).trim();
    const good = await readFile(join(dir, 'db', manifest));
    await writeFile(join(dir, 'db', manifest), Buffer.alloc(good.length, 0x5a));
    expect((await refusal(dir)).code).toBe('corrupt');
    await writeFile(join(dir, 'db', manifest), good);
    expect((await open()).fresh).toBe(false);
  });

  it('refuses a store created for another node', async () => {
    await openAndClose();
    const error = await refusal(dir, { nodeId: 'n2', initialConfig: CONFIG });
    expect(error.code).toBe('wrongNode');
    expect(error.message).toContain('"n1"');
    expect((await open()).fresh).toBe(false);
  });

  it('refuses a store of another format version', async () => {
    await openAndClose();
    const db = new ClassicLevel<Buffer, Buffer>(join(dir, 'db'), { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.put(FORMAT_KEY, new Packr({ useRecords: false }).pack('vera-store-v99'));
    await db.close();
    expect((await refusal(dir)).code).toBe('unsupportedFormat');
  });

  it('refuses a second open in the same process while the first keeps working', async () => {
    const first = await open();
    expect((await refusal(dir)).code).toBe('locked');
    await first.storage.persist({ term: 1, vote: null, commit: 0 }, []);
    expect((await first.storage.load()).hardState.term).toBe(1);
    await first.close();
    toClose.splice(toClose.indexOf(first), 1);
    expect((await open()).fresh).toBe(false);
  });

  it('refuses a store held open by another process', async () => {
    await openAndClose();
    const child = spawn(process.execPath, ['--import', 'tsx', join(here, 'fixtures', 'hold-datadir.ts'), dir], {
      cwd: repoRoot,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.includes('ready\n')) resolve();
      });
      child.on('close', () => reject(new Error(`holder exited before opening the store: ${stderr}`)));
    });
    try {
      expect((await refusal(dir)).code).toBe('locked');
    } finally {
      child.stdin.end();
    }
    expect(await exited).toBe(0);
    expect((await open()).fresh).toBe(false);
  });

  it('refuses a path that is a file and leaves it untouched', async () => {
    await mkdir(dirname(dir), { recursive: true });
    await writeFile(dir, 'just a file');
    const error = await refusal(dir);
    expect(error.code).toBe('notADirectory');
    expect(await readFile(dir, 'utf8')).toBe('just a file');
  });

  it('starts over after a creation that was interrupted, removing its leftovers', async () => {
    // What a crash between creating the temporary store and renaming it leaves behind.
    const leftover = join(dir, '.db-creating-999-deadbeef');
    await mkdir(leftover, { recursive: true });
    await writeFile(join(leftover, 'CURRENT'), 'MANIFEST-000001\n');
    const opened = await open();
    expect(opened.fresh).toBe(true);
    expect((await readdir(dir)).sort()).toEqual(['acked', 'db']);
  });

  // The write-ahead log repeats the memtable: it is disk (and memory) the store holds for
  // nothing once the memtable is a table, and the memtable's size bounds it.
  it("bounds LevelDB's write-ahead log by a memtable of WRITE_BUFFER_BYTES", async () => {
    const opened = await open();
    const logs = async (): Promise<Array<{ number: number; bytes: number }>> => {
      const found = [];
      for (const f of await readdir(join(dir, 'db'))) {
        if (!f.endsWith('.log')) continue;
        // A log LevelDB has just replaced may be gone by the time it is looked at: it holds nothing then.
        found.push({ number: Number.parseInt(f, 10), bytes: (await stat(join(dir, 'db', f)).catch(() => ({ size: 0 }))).size });
      }
      return found;
    };
    const first = Math.max(...(await logs()).map((l) => l.number));
    let largest = 0;
    const value = Buffer.alloc(1000, 7);
    const batches = Math.ceil((1.5 * WRITE_BUFFER_BYTES) / (100 * value.length));
    for (let batch = 0; batch < batches; batch++) {
      const ops = Array.from({ length: 100 }, (_, n) => ({ type: 'put' as const, key: Buffer.from(`wal-${batch}-${n}`), value }));
      await opened.db.batch(ops);
      for (const l of await logs()) largest = Math.max(largest, l.bytes);
    }
    // 1.5 memtables written: LevelDB moved to a new log on the way (with its default of
    // 4 MiB it would not have), and no log grew past one memtable and a batch.
    expect(Math.max(...(await logs()).map((l) => l.number))).toBeGreaterThan(first);
    expect(largest).toBeLessThan(WRITE_BUFFER_BYTES + 2 * 100 * value.length);
  });

  it('rejects an empty node id with a typed error', async () => {
    const error = await refusal(dir, { nodeId: '', initialConfig: CONFIG });
    expect(error.code).toBe('invalidArgument');
    await expect(stat(dir)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
