// Backup and restore: GET /v1/snapshot on a running member, `vera snapshot save`
// (verified, atomic) and `vera snapshot restore` (verified first, never writes on
// a bad file, refuses a used directory), and the restored store served by
// `vera start` with every item at its original index.

import { createHash, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { connect, type VeraClient } from '../../src/client/index.js';
import { itemKey, ListsBucket } from '../../src/families/lists/keys.js';
import { readRecords } from '../../src/raft/state-transfer.js';
import { BACKUP_FORMAT, BackupError, backupBody, type BackupErrorCode, TRAILER_BYTES, verifyBackupFile, type VerifiedBackup } from '../../src/server/admin/backup.js';
import { captureIO } from '../client/cli-io.js';
import { freePort, killAll, VeraProcess } from '../support/vera-process.js';
import { listOf, statusOf, TestCluster, type ListBody } from './support.js';

let base: string;
let client: VeraClient | null = null;
const processes: VeraProcess[] = [];

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'vera-backup-'));
});

afterEach(async () => {
  await client?.close().catch(() => undefined);
  client = null;
  await killAll();
  for (const p of processes.splice(0)) p.removeData();
  await rm(base, { recursive: true, force: true });
});

async function vera(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = captureIO({ cwd: base });
  const code = await main(argv, io);
  return { code, out: io.out(), err: io.err() };
}

const exists = (path: string): Promise<boolean> => stat(path).then(() => true, () => false);
const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** Rewrites a backup's header and recomputes the trailer: a well-formed file with a lying header. */
function withHeader(file: Buffer, edit: (h: Record<string, unknown>) => void): Buffer {
  const newline = file.indexOf(0x0a);
  const header = JSON.parse(file.subarray(0, newline).toString('utf8')) as Record<string, unknown>;
  edit(header);
  const body = file.subarray(newline + 1, file.length - TRAILER_BYTES);
  const content = Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), body]);
  return Buffer.concat([content, Buffer.from(`sha256 ${sha(content)}\n`)]);
}

/** Verifies `bytes` as a backup file (the production check reads files only). */
async function verifyBytes(bytes: Buffer): Promise<VerifiedBackup> {
  const file = join(base, `check-${randomUUID()}.backup`);
  await writeFile(file, bytes);
  try {
    return await verifyBackupFile(file);
  } finally {
    await rm(file, { force: true });
  }
}

async function refusal(file: Buffer): Promise<BackupError> {
  try {
    await verifyBytes(file);
  } catch (error) {
    expect(error).toBeInstanceOf(BackupError);
    return error as BackupError;
  }
  throw new Error('expected the backup to be refused');
}

const PATHS = ['/app/config', '/app/members', '/queue/jobs', '/deep/a/b/c'];

describe('backup and restore', () => {
  it('save from a running member, restore into a new directory, start it: every item is there at its index', async () => {
    const source = await VeraProcess.start({ id: 'n1' });
    processes.push(source);
    client = await connect(source.url);
    let lastIndex = 0;
    for (let i = 0; i < 60; i++) {
      const item = await client.push(PATHS[i % PATHS.length]!, { i, text: `item ${i}`, nested: { ok: true } }, { persistent: true, watch: false });
      lastIndex = item.index;
    }
    const doomed = (await listOf(source.clientPort, '/queue/jobs')).items[0]!;
    await client.delete('/queue/jobs', doomed.index);
    const expected = new Map<string, ListBody['items']>();
    for (const path of PATHS) expected.set(path, (await listOf(source.clientPort, path)).items);
    expect(expected.get('/queue/jobs')!.some((item) => item.index === doomed.index)).toBe(false);

    const file = join(base, 'backups', 'vera.backup');
    await mkdir(join(base, 'backups'));
    const saved = await vera('snapshot', 'save', file, '--server', source.url, '--json');
    expect(saved.err).toBe('');
    expect(saved.code).toBe(0);
    const summary = JSON.parse(saved.out) as { index: number; term: number; bytes: number; sha256: string };
    // The barrier makes the backup hold every acknowledged write, the delete included.
    expect(summary.index).toBeGreaterThan(lastIndex);
    expect(await readdir(join(base, 'backups'))).toEqual(['vera.backup']); // no temporary left behind

    const bytes = await readFile(file);
    const verified = await verifyBytes(bytes);
    expect(verified.header).toMatchObject({ format: BACKUP_FORMAT, index: summary.index, term: summary.term, node: 'n1', config: { voters: ['n1'], learners: [] } });
    expect(verified.sha256).toBe(summary.sha256);
    expect(bytes.subarray(0, bytes.indexOf(0x0a)).toString()).toMatch(/^\{"format":"vera-backup-v1","index":\d+,"term":\d+,/);

    // What the source serves goes on changing; the restored store must hold the backup's state.
    await client.push('/app/config', 'after the backup', { persistent: true, watch: false });
    await client.close();
    client = null;

    const dir = join(base, 'restored');
    const [clientPort, peerPort] = [await freePort(), await freePort()];
    // Port 0 cannot go into the member list.
    expect((await vera('snapshot', 'restore', file, '--data', dir, '--id', 'r1', '--client', '127.0.0.1:0')).code).toBe(2);
    const restored = await vera('snapshot', 'restore', file, '--data', dir, '--id', 'r1', '--client', `127.0.0.1:${clientPort}`, '--peer', `127.0.0.1:${peerPort}`);
    expect(restored.err).toBe('');
    expect(restored.code).toBe(0);
    expect(restored.out).toContain(`index ${summary.index}`);
    expect(restored.out).toContain(`vera start --id r1 --data ${dir} --client 127.0.0.1:${clientPort} --peer 127.0.0.1:${peerPort}`);
    expect(await readdir(base)).not.toContainEqual(expect.stringContaining('restoring'));

    const copy = await VeraProcess.start({ id: 'r1', dataDir: dir, clientPort, peerPort });
    processes.push(copy);
    const opened = copy.logs.find((l) => l.event === 'node-opened')!;
    expect(opened.applied).toBe(summary.index);
    for (const path of PATHS) expect((await listOf(copy.clientPort, path)).items).toEqual(expected.get(path));
    const status = await statusOf(copy.clientPort);
    expect(status.applied).toBeGreaterThanOrEqual(summary.index);
    // A new single-member cluster: the source's member list did not come along.
    expect(status.members.map((m) => m.id)).toEqual(['r1']);
    // It is a working single-member cluster in a newer term (it leads itself once the lease window has passed):
    // new writes land after the backup's index.
    client = await connect(copy.url);
    const fresh = await client.push('/app/config', 'written to the restored cluster', { persistent: true, watch: false });
    expect(fresh.index).toBeGreaterThan(summary.index);
    expect((await statusOf(copy.clientPort)).term).toBeGreaterThan(summary.term);
    expect((await client.get('/app/config')).items.map((item) => item.data)).toEqual([...expected.get('/app/config')!.map((item) => item.data), 'written to the restored cluster']);

    // The saved file is refused when damaged in any part (unit-level checks of the same bytes).
    const newline = bytes.indexOf(0x0a);
    for (const cut of [0, 10, newline, newline + 1, newline + 100, bytes.length - TRAILER_BYTES, bytes.length - 1]) {
      const error = await refusal(bytes.subarray(0, cut));
      expect(['truncated', 'corrupt']).toContain(error.code);
    }
    expect((await refusal(bytes.subarray(0, newline + 100))).code).toBe('truncated');
    for (const at of [5, newline + 1, newline + 50, bytes.length - 10]) {
      const flipped = Buffer.from(bytes);
      flipped.writeUInt8(flipped.readUInt8(at) ^ 0x01, at);
      expect((await refusal(flipped)).code).toBe<BackupErrorCode>('corrupt');
    }
    expect((await refusal(Buffer.concat([bytes, Buffer.from('x')]))).code).toBe('corrupt');
    // A format of ours from another version is "unsupported" only when the file is intact.
    expect((await refusal(withHeader(bytes, (h) => (h.format = 'vera-backup-v9')))).code).toBe('unsupported');
    expect((await refusal(withHeader(bytes, (h) => (h.format = 'tarball')))).code).toBe('corrupt');
    expect((await refusal(withHeader(bytes, (h) => (h.index = Number(h.index) + 1)))).message).toMatch(/reflects index/);
    expect((await refusal(withHeader(bytes, (h) => (h.bytes = -1)))).message).toMatch(/non-negative integer/);
  });

  it('restore refuses a truncated or corrupt file and writes nothing; refuses a directory that already holds a store', async () => {
    const source = await VeraProcess.start({ id: 'n1' });
    processes.push(source);
    client = await connect(source.url);
    for (let i = 0; i < 20; i++) await client.push('/x', i, { persistent: true, watch: false });
    const file = join(base, 'good.backup');
    expect((await vera('snapshot', 'save', file, '--server', source.url)).code).toBe(0);
    const bytes = await readFile(file);

    const truncated = join(base, 'truncated.backup');
    await writeFile(truncated, bytes.subarray(0, bytes.length - 200));
    const flipped = join(base, 'flipped.backup');
    const damaged = Buffer.from(bytes);
    const at = bytes.indexOf(0x0a) + 40;
    damaged.writeUInt8(damaged.readUInt8(at) ^ 0x80, at);
    await writeFile(flipped, damaged);

    const target = join(base, 'target');
    const r1 = await vera('snapshot', 'restore', truncated, '--data', target);
    expect(r1.code).toBe(1);
    expect(r1.err).toMatch(/truncated/);
    expect(r1.err).toMatch(/nothing was written/);
    const r2 = await vera('snapshot', 'restore', flipped, '--data', target);
    expect(r2.code).toBe(1);
    expect(r2.err).toMatch(/checksum mismatch/);
    const r3 = await vera('snapshot', 'restore', join(base, 'missing.backup'), '--data', target);
    expect(r3.code).toBe(1);
    expect(await exists(target)).toBe(false);

    // An existing empty directory stays exactly as it was on refusal, and may then be restored into.
    await mkdir(target);
    expect((await vera('snapshot', 'restore', flipped, '--data', target)).code).toBe(1);
    expect(await readdir(target)).toEqual([]);
    expect((await vera('snapshot', 'restore', file, '--data', target)).code).toBe(0);
    expect((await readdir(target)).sort()).toEqual(['acked', 'db']);

    // A directory that holds a store (or anything else) is refused, untouched.
    const listing = async (dir: string): Promise<string[]> => (await readdir(dir, { recursive: true })).sort();
    const before = await listing(target);
    const again = await vera('snapshot', 'restore', file, '--data', target);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/already holds a Vera store/);
    expect(await listing(target)).toEqual(before);
    const other = join(base, 'other');
    await mkdir(other);
    await writeFile(join(other, 'notes.txt'), 'mine');
    const foreign = await vera('snapshot', 'restore', file, '--data', other);
    expect(foreign.code).toBe(1);
    expect(foreign.err).toMatch(/not empty/);
    expect(await readdir(other)).toEqual(['notes.txt']);

    // Usage errors exit 2.
    expect((await vera('snapshot', 'restore', file)).code).toBe(2);
    expect((await vera('snapshot', 'restore', file, '--data', join(base, 'x'), '--id', 'bad id!')).code).toBe(2);
    expect((await vera('snapshot', 'frobnicate')).code).toBe(2);
    expect(await exists(join(base, 'x'))).toBe(false);
  });

  it('save never leaves a partial or unverified file: a bad download keeps the old FILE; an unreachable server exits 3', async () => {
    // A server that answers /v1/snapshot with a damaged backup.
    const good = Buffer.concat([Buffer.from(`${JSON.stringify({ format: BACKUP_FORMAT, index: 0, term: 0, config: { voters: ['n1'], learners: [] }, bytes: 0, node: 'n1', created: 'now' })}\n`)]);
    const wellFormed = Buffer.concat([good, Buffer.from(`sha256 ${sha(good)}\n`)]);
    expect((await verifyBytes(wellFormed)).header.index).toBe(0);
    const damaged = Buffer.from(wellFormed);
    const inCreated = wellFormed.indexOf('"now"') + 2;
    damaged.writeUInt8(damaged.readUInt8(inCreated) ^ 0x02, inCreated);
    let body = damaged;
    const fake: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(body);
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    try {
      const address = fake.address();
      const url = `ws://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
      const file = join(base, 'keep.backup');
      await writeFile(file, 'the previous backup');

      const refused = await vera('snapshot', 'save', file, '--server', url);
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(/invalid: checksum mismatch/);
      expect(await readFile(file, 'utf8')).toBe('the previous backup');
      body = wellFormed.subarray(0, wellFormed.length - 5);
      expect((await vera('snapshot', 'save', file, '--server', url)).err).toMatch(/truncated/);
      expect(await readFile(file, 'utf8')).toBe('the previous backup');
      expect(await readdir(base)).toEqual(['keep.backup']);

      body = wellFormed;
      expect((await vera('snapshot', 'save', file, '--server', url)).code).toBe(0);
      expect((await readFile(file)).equals(wellFormed)).toBe(true);
    } finally {
      await new Promise<void>((resolve) => fake.close(() => resolve()));
    }
    const unreachable = await vera('snapshot', 'save', join(base, 'none.backup'), '--server', 'ws://127.0.0.1:1', '--timeout', '2000');
    expect(unreachable.code).toBe(3);
    expect(await exists(join(base, 'none.backup'))).toBe(false);
  });

  it('a backup taken from a follower holds every write acknowledged before it', async () => {
    const cluster = await TestCluster.start(3, []);
    try {
      const leader = await cluster.leader();
      const follower = cluster.specs.find((s) => s.id !== leader.id)!;
      client = await connect(`ws://127.0.0.1:${leader.clientPort}`);
      // The follower is frozen (SIGSTOP) while the writes are acknowledged by the other two, so it
      // is behind when the backup is asked of it: only the barrier makes it catch up first.
      const frozen = cluster.process(follower.id).proc;
      frozen.kill('SIGSTOP');
      const pushed: number[] = [];
      try {
        for (let i = 0; i < 30; i++) pushed.push((await client.push(`/f/${i % 3}`, i, { persistent: true, watch: false })).index);
      } finally {
        frozen.kill('SIGCONT');
      }
      const file = join(base, 'follower.backup');
      // The whole database is for operators: a member with a cluster secret refuses a caller without it.
      const refused = await vera('snapshot', 'save', file, '--server', `ws://127.0.0.1:${follower.clientPort}`);
      expect(refused.code).not.toBe(0);
      expect(refused.err).toMatch(/401.*cluster secret/);
      expect(await exists(file)).toBe(false);
      expect((await fetch(`http://127.0.0.1:${follower.clientPort}/v1/snapshot`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      const saved = await vera('snapshot', 'save', file, '--server', `ws://127.0.0.1:${follower.clientPort}`, '--secret', cluster.secret, '--json');
      expect(saved.code).toBe(0);
      const backup = await verifyBackupFile(file);
      const { header } = backup;
      expect(header.node).toBe(follower.id);
      expect(header.config.voters.slice().sort()).toEqual(['n1', 'n2', 'n3']);
      expect(header.index).toBeGreaterThanOrEqual(pushed[pushed.length - 1]!);
      const keys = new Set<string>();
      for await (const [key] of readRecords(backupBody(backup))) keys.add(key.toString('hex'));
      pushed.forEach((index, i) => expect(keys.has(itemKey(`/f/${i % 3}`, index).toString('hex'))).toBe(true));
      expect([...keys].filter((k) => k.startsWith(ListsBucket.item.toString(16).padStart(4, '0'))).length).toBe(30);
    } finally {
      await cluster.stopAll();
      cluster.removeData();
    }
  });
});
