import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ClassicLevel } from 'classic-level';
import { Packr } from 'msgpackr';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { internalPropertyKey, logKey, propertyKey } from '../../src/keys/index.js';
import { itemKey } from '../../src/families/lists/keys.js';
import { openDataDir } from '../../src/raft/datadir.js';
import { LAST_LOG_INDEX_KEY, type LevelDb, LevelLogStorage, SNAPSHOT_KEY } from '../../src/raft/leveldb-storage.js';
import { MemoryLogStorage } from '../../src/raft/memory-storage.js';
import { StorageError } from '../../src/raft/storage.js';
import type { ClusterConfig } from '../../src/raft/types.js';
import { crashPlanState } from './fixtures/crash-plan.js';
import { CONFIG, type StorageHarness, entry, hard, run, runLogStorageContract } from './storage-contract.js';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..', '..');
const packr = new Packr({ useRecords: false });

function openLevel(path: string): LevelDb {
  return new ClassicLevel<Buffer, Buffer>(path, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
}

async function makeLevelHarness(initialConfig: ClusterConfig): Promise<StorageHarness> {
  const dir = await mkdtemp(join(tmpdir(), 'vera-logstore-'));
  let db = openLevel(dir);
  let storage = await LevelLogStorage.open(db, { initialConfig });
  let failNext = false;
  // Fault injection at the database boundary: the next batch fails before LevelDB sees it.
  const injectFaults = (target: LevelDb): void => {
    const realBatch = target.batch.bind(target) as (...args: unknown[]) => Promise<void>;
    Object.defineProperty(target, 'batch', {
      configurable: true,
      value: (...args: unknown[]) => {
        if (!failNext) return realBatch(...args);
        failNext = false;
        return Promise.reject(new Error('EIO: injected write failure'));
      },
    });
  };
  injectFaults(db);
  return {
    storage,
    async reopen() {
      await storage.close();
      await db.close();
      db = openLevel(dir);
      injectFaults(db);
      storage = await LevelLogStorage.open(db, { initialConfig });
      return storage;
    },
    failNextWrite() {
      failNext = true;
    },
    async dispose() {
      await storage.close();
      await db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function makeMemoryHarness(initialConfig: ClusterConfig): Promise<StorageHarness> {
  const storage = new MemoryLogStorage({ initialConfig });
  return {
    storage,
    async reopen() {
      await storage.close();
      storage.restart();
      return storage;
    },
    failNextWrite: () => storage.failNextWrite(),
    dispose: async () => undefined,
  };
}

runLogStorageContract('MemoryLogStorage', makeMemoryHarness);
runLogStorageContract('LevelLogStorage', makeLevelHarness);

describe('LevelLogStorage on a shared database', () => {
  let dir: string;
  let db: LevelDb;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vera-logstore-'));
    db = openLevel(dir);
  });
  afterEach(async () => {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function reopenDb(): Promise<void> {
    await db.close();
    db = openLevel(dir);
  }

  async function corruptionOf(action: () => Promise<unknown>): Promise<StorageError> {
    const error: unknown = await action().then(
      () => new Error('expected corruption to be reported'),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StorageError);
    expect((error as StorageError).code).toBe('corrupt');
    return error as StorageError;
  }

  async function allPairs(): Promise<[string, string][]> {
    const out: [string, string][] = [];
    for await (const [key, value] of db.iterator()) out.push([key.toString('hex'), value.toString('hex')]);
    return out;
  }

  it('rejects a malformed initial config, as MemoryLogStorage does', async () => {
    const bad = { voters: 'n1', learners: [] } as unknown as ClusterConfig;
    await expect(LevelLogStorage.open(db, { initialConfig: bad })).rejects.toMatchObject({ name: 'StorageError', code: 'invalidArgument' });
    expect(() => new MemoryLogStorage({ initialConfig: bad })).toThrow(expect.objectContaining({ code: 'invalidArgument' }) as Error);
    expect(await db.get(SNAPSHOT_KEY)).toBeUndefined();
  });

  it('writes the initial config on the first open only', async () => {
    await (await LevelLogStorage.open(db, { initialConfig: CONFIG })).close();
    const later = await LevelLogStorage.open(db, { initialConfig: { voters: ['other'], learners: [] } });
    expect((await later.load()).snapshot.config).toEqual(CONFIG);
  });

  it('leaves state-machine keys alone and ignores them when loading', async () => {
    const foreignKeys: [Buffer, Buffer][] = [
      [itemKey('/a', 1), Buffer.from('item')],
      [internalPropertyKey('applied'), packr.pack(1)],
      [propertyKey('somethingElse'), Buffer.from('x')],
    ];
    for (const [key, value] of foreignKeys) await db.put(key, value);
    const storage = await LevelLogStorage.open(db, { initialConfig: CONFIG });
    await storage.persist(hard(1, 'n1', 0), run(1, 5, 1));
    await storage.persist(null, run(2, 2, 2)); // truncates 3..5
    expect((await storage.load()).entries).toEqual([entry(1, 1), entry(2, 2)]);
    for (const [key, value] of foreignKeys) expect(await db.get(key)).toEqual(value);
    expect(await db.get(logKey(3))).toBeUndefined();
    expect(packr.unpack((await db.get(LAST_LOG_INDEX_KEY))!)).toBe(2);
  });

  it('makes each persist exactly one synced batch (group commit)', async () => {
    const storage = await LevelLogStorage.open(db, { initialConfig: CONFIG });
    await storage.persist(null, run(1, 5, 1));
    const calls: { ops: { type: string; key: Buffer }[]; options: { sync?: boolean } }[] = [];
    const realBatch = db.batch.bind(db) as (...args: unknown[]) => Promise<void>;
    Object.defineProperty(db, 'batch', {
      configurable: true,
      value: (ops: { type: string; key: Buffer }[], options: { sync?: boolean }) => {
        calls.push({ ops, options });
        return realBatch(ops, options);
      },
    });
    await storage.persist(hard(2, 'n2', 1), run(2, 3, 2)); // replaces 2..5 with 2..3
    expect(calls).toHaveLength(1);
    expect(calls[0]!.options.sync).toBe(true);
    const written = calls[0]!.ops.map((op) => `${op.type} ${op.key.toString('hex')}`).sort();
    const expected = [
      `put ${propertyKey('hardState').toString('hex')}`,
      `put ${logKey(2).toString('hex')}`,
      `put ${logKey(3).toString('hex')}`,
      `del ${logKey(4).toString('hex')}`,
      `del ${logKey(5).toString('hex')}`,
      `put ${LAST_LOG_INDEX_KEY.toString('hex')}`,
    ].sort();
    expect(written).toEqual(expected);
  });

  it('writes extra operations in the same batch, but not over its own keys', async () => {
    const storage = await LevelLogStorage.open(db, { initialConfig: CONFIG });
    const applied = internalPropertyKey('applied');
    await storage.persistWith([{ type: 'put', key: applied, value: packr.pack(1) }], hard(1, 'n1', 1), run(1, 1, 1));
    expect(packr.unpack((await db.get(applied))!)).toBe(1);
    const error: unknown = await storage.persistWith([{ type: 'del', key: logKey(1) }], null, []).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'StorageError', code: 'invalidArgument' });
    expect((await storage.load()).entries).toEqual(run(1, 1, 1));
  });

  it('runs overlapping persist calls in call order', async () => {
    const storage = await LevelLogStorage.open(db, { initialConfig: CONFIG });
    await Promise.all([
      storage.persist(null, run(1, 3, 1)),
      storage.persist(null, run(4, 6, 1)),
      storage.persist(hard(2, 'n2', 0), run(3, 3, 2)),
    ]);
    expect(await storage.load()).toMatchObject({ hardState: hard(2, 'n2', 0), entries: [...run(1, 2, 1), entry(3, 2)] });
  });

  it('starts a call at once when idle, and a refused one leaves the queue to the next; closed, it refuses', async () => {
    const storage = await LevelLogStorage.open(db, { initialConfig: CONFIG });
    const refused = storage.persist(null, run(5, 6, 1)); // a gap after an empty log: refused by the bounds check
    const next = storage.persist(null, run(1, 2, 1)); // made in the same turn: queued behind, sees the old bounds
    await expect(refused).rejects.toBeInstanceOf(StorageError);
    await next;
    expect((await storage.load()).entries).toEqual(run(1, 2, 1));
    await storage.close();
    await expect(storage.persist(null, run(3, 3, 1))).rejects.toMatchObject({ code: 'closed' });
  });

  it('loads a long log in runs of entries, not with one trip (and one promise) per entry', async () => {
    const storage = await LevelLogStorage.open(db, { initialConfig: CONFIG });
    await storage.persist(hard(1, 'n1', 0), run(1, 2_500, 1));
    // Counts the iterator's calls: a restart on a long log must not pay a promise per entry (issue 32, rejoin).
    const calls = { next: 0, nextv: 0 };
    const realIterator = db.iterator.bind(db) as (...args: unknown[]) => ReturnType<LevelDb['iterator']>;
    Object.defineProperty(db, 'iterator', {
      configurable: true,
      value: (...args: unknown[]) => {
        const it = realIterator(...args);
        const next = it.next.bind(it);
        const nextv = it.nextv.bind(it);
        Object.assign(it, { next: () => (calls.next++, next()), nextv: (size: number) => (calls.nextv++, nextv(size)) });
        return it;
      },
    });
    const loaded = await storage.load();
    expect(loaded.entries).toHaveLength(2_500);
    expect(loaded.entries.at(-1)).toEqual(entry(2_500, 1));
    expect(calls.next).toBe(0);
    expect(calls.nextv).toBeLessThanOrEqual(4);
  });

  it('names the damaged entry itself when a long log is loaded in runs', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'vera-logstore-damaged-'));
    const opened = await openDataDir(dataDir, { nodeId: 'n1', initialConfig: { voters: ['n1'], learners: [] } });
    try {
      await opened.storage.persist(hard(1, 'n1', 0), run(1, 2_500, 1));
      // One byte of entry 1,700 changed on disk: its checksum fails, in the middle of the second run.
      const stored = (await opened.db.get(logKey(1_700), { valueEncoding: 'buffer' }))!;
      stored[3] = stored[3]! ^ 0xff;
      await opened.db.put(logKey(1_700), stored, { valueEncoding: 'buffer' });
      const error = await corruptionOf(() => opened.storage.load());
      expect(error.message).toContain(`log entry 1700 (key ${logKey(1_700).toString('hex')}): a stored value failed its checksum`);
    } finally {
      await opened.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses a log with a hole, without repairing it', async () => {
    const storage = await LevelLogStorage.open(db, { initialConfig: CONFIG });
    await storage.persist(null, run(1, 4, 1));
    await db.del(logKey(2));
    const before = await allPairs();
    const error = await corruptionOf(() => storage.load());
    expect(error.message).toMatch(/not contiguous: expected entry 2, found 3/);
    expect(await allPairs()).toEqual(before);
  });

  it('refuses a lastLogIndex that disagrees with the entries, at open and at load', async () => {
    const storage = await LevelLogStorage.open(db, { initialConfig: CONFIG });
    await storage.persist(null, run(1, 3, 1));
    await db.put(LAST_LOG_INDEX_KEY, packr.pack(5));
    const before = await allPairs();
    expect((await corruptionOf(() => storage.load())).message).toMatch(/lastLogIndex is 5 but the log ends at 3/);
    await reopenDb();
    await corruptionOf(() => LevelLogStorage.open(db, { initialConfig: CONFIG }));
    expect(await allPairs()).toEqual(before);
  });

  it('refuses an entry stored under the wrong index, or that is not MessagePack', async () => {
    const storage = await LevelLogStorage.open(db, { initialConfig: CONFIG });
    await storage.persist(null, run(1, 3, 1));
    const good = (await db.get(logKey(2)))!;
    await db.put(logKey(2), (await db.get(logKey(3)))!);
    expect((await corruptionOf(() => storage.load())).message).toMatch(/stored under index 2 says it is 3/);
    await db.put(logKey(2), Buffer.from([0xc1])); // 0xc1 is never used in MessagePack
    await corruptionOf(() => storage.load());
    await db.put(logKey(2), good);
    expect((await storage.load()).entries).toEqual(run(1, 3, 1));
  });

  it('refuses log entries without a snapshot meta instead of starting over', async () => {
    await db.put(logKey(1), Buffer.from('orphan'));
    await corruptionOf(() => LevelLogStorage.open(db, { initialConfig: CONFIG }));
    expect(await db.get(SNAPSHOT_KEY)).toBeUndefined();
  });

  it('loads only entries after the snapshot index', async () => {
    // Stands in for compaction (issue 5): a snapshot at 2 covers entries 1..2.
    const storage = await LevelLogStorage.open(db, { initialConfig: CONFIG });
    await storage.persist(hard(1, 'n1', 2), run(1, 4, 1));
    await storage.close();
    await db.put(SNAPSHOT_KEY, packr.pack({ index: 2, term: 1, config: CONFIG }));
    const reopened = await LevelLogStorage.open(db, { initialConfig: CONFIG });
    expect(await reopened.load()).toEqual({ hardState: hard(1, 'n1', 2), snapshot: { index: 2, term: 1, config: CONFIG }, entries: run(3, 4, 1) });
    const error: unknown = await reopened.persist(null, [entry(2, 2)]).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'StorageError', code: 'compacted' });
  });
});

describe('LevelLogStorage crash recovery', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vera-crash-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function runUntilKilled(batches: number): Promise<{ acked: number; signal: NodeJS.Signals | null; stderr: string }> {
    const child: ChildProcess = spawn(
      process.execPath,
      ['--import', 'tsx', join(here, 'fixtures', 'persist-until-killed.ts'), dir, String(batches)],
      { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    return new Promise((resolve, reject) => {
      child.on('error', reject);
      child.on('close', (_code, signal) => {
        const acked = stdout.split('\n').filter((line) => line.startsWith('acked ')).length;
        resolve({ acked, signal, stderr });
      });
    });
  }

  it('keeps every acknowledged batch after kill -9, and the in-flight one entirely or not at all', async () => {
    const batches = 40;
    const result = await runUntilKilled(batches);
    expect(result.stderr).toBe('');
    expect(result.signal).toBe('SIGKILL');
    expect(result.acked).toBe(batches);

    const opened = await openDataDir(dir, { nodeId: 'n1', initialConfig: { voters: ['n1'], learners: [] } });
    try {
      const loaded = await opened.storage.load();
      const acknowledged = crashPlanState(batches);
      const withInFlight = crashPlanState(batches + 1);
      const survived = { hardState: loaded.hardState, entries: loaded.entries };
      expect([acknowledged, withInFlight]).toContainEqual(survived);
    } finally {
      await opened.close();
    }
  });
});

describe('MemoryLogStorage crashes', () => {
  function storage(): MemoryLogStorage {
    const s = new MemoryLogStorage({ initialConfig: CONFIG });
    s.persistSync(hard(1, 'n1', 0), run(1, 3, 1));
    s.persistSync(hard(2, 'n2', 1), run(4, 5, 2));
    return s;
  }

  it('loses exactly the unsynced writes', () => {
    const s = storage();
    const synced = s.loadSync();
    s.persistSync(hard(3, 'n3', 1), run(3, 4, 3), { sync: false }); // replaces 3..5
    s.persistSync(null, run(5, 6, 3), { sync: false });
    expect(s.unsyncedWriteCount).toBe(2);
    expect(s.loadSync().entries).toEqual([...run(1, 2, 1), ...run(3, 6, 3)]);
    s.crash();
    expect(s.loadSync()).toEqual(synced);
    expect(s.unsyncedWriteCount).toBe(0);
    // The end of the log is back at 5: appending 6 works, 7 would be a gap.
    expect(() => s.persistSync(null, [entry(7, 3)])).toThrow(StorageError);
    s.persistSync(null, [entry(6, 3)]);
    expect(s.loadSync().entries.map((e) => e.index)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('can keep a prefix of the unsynced writes, never a later one without an earlier one', () => {
    const s = storage();
    s.persistSync(hard(3, 'n3', 1), run(3, 4, 3), { sync: false });
    const afterFirst = s.loadSync();
    s.persistSync(hard(4, 'n4', 1), run(5, 6, 4), { sync: false });
    s.crash({ survivingUnsyncedWrites: 1 });
    expect(s.loadSync()).toEqual(afterFirst);
    expect(() => s.crash({ survivingUnsyncedWrites: 1 })).toThrow(StorageError);
  });

  it('makes earlier unsynced writes durable with the next synced one', () => {
    const s = storage();
    s.persistSync(null, run(6, 6, 2), { sync: false });
    s.persistSync(hard(2, 'n2', 6), []);
    const synced = s.loadSync();
    s.crash();
    expect(s.loadSync()).toEqual(synced);
    expect(synced.entries.length).toBe(6);
  });

  it('keeps unsynced writes across a restart without power loss', async () => {
    const s = storage();
    s.persistSync(null, run(6, 6, 2), { sync: false });
    await s.close();
    expect(() => s.loadSync()).toThrow(StorageError);
    s.restart();
    s.crash();
    expect(s.loadSync().entries.length).toBe(6);
  });

  it('fails an injected write without writing it, in the synchronous form too', () => {
    const s = storage();
    const before = s.loadSync();
    s.failNextWrite();
    expect(() => s.persistSync(hard(3, 'n3', 1), run(6, 6, 3))).toThrow(expect.objectContaining({ code: 'io' }) as Error);
    expect(s.loadSync()).toEqual(before);
    s.persistSync(null, run(6, 6, 3));
    expect(s.loadSync().entries.length).toBe(6);
  });
});
