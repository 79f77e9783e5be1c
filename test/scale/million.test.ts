// A million items, end to end, with real processes: what a cluster meets as it
// grows. Before snapshots were staged on disk and installed in batches, a
// member receiving a snapshot of more than about 125,000 keys died of a stack
// overflow (a spread of every state op into one call) and again on every
// restart; a backup of that size could not be restored for the same reason.
//
// One backup file of 10^6 persistent items (written here from the documented
// vera-backup-v1 format, an oracle independent of the server's writer) goes
// through: `vera snapshot restore` (peak RSS measured) -> n1 serves it ->
// `vera snapshot save` from n1 -> n2 and n3 join with --join (each receives the
// whole state as a snapshot; peak RSS measured) -> promoted to a 3-member
// cluster -> n2 killed -9 and restarted -> every member serves the same lists.
// The figures are printed; memory is asserted only against bounds far below
// what holding the snapshot in memory would take.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, open, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { itemKey } from '../../src/families/lists/keys.js';
import { encodeHeader, encodeTrailer, BACKUP_FORMAT } from '../../src/server/admin/backup.js';
import { encodeAppliedValue } from '../../src/statemachine/codec.js';
import { encodeItemValue } from '../../src/families/lists/codec.js';
import { APPLIED_KEY } from '../../src/statemachine/applied.js';
import { Members } from '../membership/support.js';
import { pollUntil, withTimeout } from '../support/poll.js';
import { connect } from '../../src/client/index.js';

// VERA_SCALE_ITEMS (a multiple of 1000) runs the same test at another size, e.g. to see that peak memory does not grow with it.
const ITEMS = Number(process.env.VERA_SCALE_ITEMS ?? 1_000_000);
const LISTS = 1000;
const PER_LIST = ITEMS / LISTS;
const BIN = resolve(import.meta.dirname, '../../bin/vera.js');
const PEAK_RSS = resolve(import.meta.dirname, 'report-peak-rss.cjs');
/**
 * Far below the ~100 MiB snapshot plus the op objects a one-batch install would hold, and what that install
 * needed to fail. 384, not the 320 it was: since list lengths are counted at load (issue 32: a push no longer
 * scans its list), a member that installs or restarts walks every item key once, and the garbage of that walk
 * put n2's peaks at 272 to 326 MiB over this session's runs (252 to 287 before). Persisting the counts would
 * take that back (docs/scale.md).
 */
const RSS_BOUND_MIB = 384;

let base: string;
let m: Members | null = null;
afterAll(async () => {
  await m?.cleanup();
  if (base !== undefined) await rm(base, { recursive: true, force: true });
});

const listPath = (list: number): string => `/scale/${String(list).padStart(3, '0')}`;
/** Item i (1-based) lives in list floor((i-1)/PER_LIST) with raft index i: keys come out in key order. */
const dataOf = (i: number): string => createHash('sha256').update(String(i)).digest('hex');

function record(key: Buffer, value: Buffer): Buffer {
  const out = Buffer.allocUnsafe(8 + key.length + value.length);
  out.writeUInt32BE(key.length, 0);
  key.copy(out, 4);
  out.writeUInt32BE(value.length, 4 + key.length);
  value.copy(out, 8 + key.length);
  return out;
}

/** A vera-backup-v1 file holding ITEMS persistent items at applied index ITEMS; returns its size. */
async function writeBackup(file: string): Promise<number> {
  const body: Buffer[] = [];
  body.push(record(APPLIED_KEY, encodeAppliedValue(ITEMS)));
  for (let i = 1; i <= ITEMS; i++) {
    const list = Math.floor((i - 1) / PER_LIST);
    body.push(record(itemKey(listPath(list), i), encodeItemValue({ owner: null, data: dataOf(i) })));
  }
  let bytes = 0;
  for (const part of body) bytes += part.length;
  const header = encodeHeader({ format: BACKUP_FORMAT, index: ITEMS, term: 1, config: { voters: ['seed'], learners: [] }, bytes, node: 'seed', created: new Date().toISOString() });
  const hash = createHash('sha256').update(header);
  const handle = await open(file, 'w');
  try {
    await handle.write(header);
    // Written in 4 MiB slices; the test process may hold the parts, the server must not.
    let slice: Buffer[] = [];
    let size = 0;
    const flush = async (): Promise<void> => {
      const joined = Buffer.concat(slice);
      hash.update(joined);
      await handle.write(joined);
      slice = [];
      size = 0;
    };
    for (const part of body) {
      slice.push(part);
      size += part.length;
      if (size >= 4 * 1024 * 1024) await flush();
    }
    await flush();
    await handle.write(encodeTrailer(hash.digest('hex')));
  } finally {
    await handle.close();
  }
  return (await stat(file)).size;
}

/** Runs `vera ARGS` in a child process; its exit code, output and peak RSS. */
function veraChild(args: readonly string[]): Promise<{ code: number | null; out: string; err: string; peakMiB: number }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['-r', PEAK_RSS, BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', fail);
    child.on('close', (code) => {
      const peak = /PEAK_RSS_KIB=(\d+)/.exec(err);
      done({ code, out, err, peakMiB: peak === null ? NaN : Number(peak[1]) / 1024 });
    });
  });
}

/** Peak RSS so far of a running process (VmHWM), in MiB. */
async function peakRssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const match = /VmHWM:\s+(\d+) kB/.exec(status);
  if (match === null) throw new Error(`no VmHWM for ${pid}`);
  return Number(match[1]) / 1024;
}

async function timed<T>(what: string, figures: Record<string, string>, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await work();
  figures[what] = `${((performance.now() - started) / 1000).toFixed(1)} s`;
  return result;
}

/** Asks `id` for one list (stale, local) and checks it holds exactly that list's items. */
async function expectList(members: Members, id: string, list: number): Promise<void> {
  const items = await members.localItems(id, listPath(list));
  expect(items.length).toBe(PER_LIST);
  expect(items[0]).toBe(dataOf(list * PER_LIST + 1));
  expect(items[PER_LIST - 1]).toBe(dataOf((list + 1) * PER_LIST));
}

describe('10^6 items', () => {
  it('restore, serve, save, join two members by snapshot, restart: bounded memory throughout', { timeout: 600_000 }, async () => {
    base = await mkdtemp(join(tmpdir(), 'vera-million-'));
    const figures: Record<string, string> = {};
    const backup = join(base, 'million.backup');
    const fileBytes = await timed('write the backup file (test side)', figures, () => writeBackup(backup));
    figures['backup file'] = `${(fileBytes / 2 ** 20).toFixed(0)} MiB`;

    m = await Members.plan(['n1', 'n2', 'n3']);
    const members = m;
    const n1 = members.spec('n1');
    const n1Dir = join(base, 'n1');
    const restored = await timed('vera snapshot restore', figures, () =>
      veraChild(['snapshot', 'restore', backup, '--data', n1Dir, '--id', 'n1', '--client', `127.0.0.1:${n1.clientPort}`, '--peer', `127.0.0.1:${n1.peerPort}`, '--json']),
    );
    expect(restored.err.replace(/\s*PEAK_RSS_KIB=\d+\s*/, '')).toBe('');
    expect(restored.code).toBe(0);
    expect(JSON.parse(restored.out)).toMatchObject({ index: ITEMS, records: ITEMS + 1 });
    figures['restore peak RSS'] = `${restored.peakMiB.toFixed(0)} MiB`;
    expect(restored.peakMiB).toBeLessThan(RSS_BOUND_MIB);

    members.useDataDir('n1', n1Dir);
    await timed('n1 start on 10^6 items', figures, () => members.start('n1', { startTimeoutMs: 60_000 }));
    await members.waitForLog('n1', (l) => l.event === 'role-changed' && l.role === 'leader');
    await expectList(members, 'n1', 0);
    await expectList(members, 'n1', LISTS - 1);

    const saved = join(base, 'saved.backup');
    const save = await timed('vera snapshot save', figures, () => veraChild(['snapshot', 'save', saved, '--server', members.url('n1'), '--secret', members.secret, '--json']));
    expect(save.code).toBe(0);
    expect(JSON.parse(save.out)).toMatchObject({ index: expect.any(Number) as number });
    figures['save peak RSS (CLI)'] = `${save.peakMiB.toFixed(0)} MiB`;
    expect(save.peakMiB).toBeLessThan(RSS_BOUND_MIB);

    // n2 and n3: learners with empty stores; the leader's log starts at 10^6, so each needs the whole state as a snapshot.
    for (const id of ['n2', 'n3']) {
      const spec = members.spec(id);
      const add = await members.cli(['member', 'add', id, '--peer', `127.0.0.1:${spec.peerPort}`, '--client', `127.0.0.1:${spec.clientPort}`, '--server', members.url('n1')]);
      expect(add.code).toBe(0);
      const peers = members.peersFlag(id === 'n2' ? ['n1', 'n2'] : ['n1', 'n2', 'n3']);
      await timed(`${id} --join: snapshot received and installed`, figures, async () => {
        await members.start(id, { peers, args: ['--join'] });
        await members.waitForLog(id, (l) => l.event === 'snapshot-installed', 300_000);
      });
      const installed = members.proc(id).logs.find((l) => l.event === 'snapshot-installed')!;
      expect(installed.index).toBeGreaterThanOrEqual(ITEMS);
      figures[`${id} snapshot bytes`] = `${(Number(installed.bytes) / 2 ** 20).toFixed(0)} MiB`;
      const peak = await peakRssMiB(members.proc(id).proc.pid!);
      figures[`${id} peak RSS after install`] = `${peak.toFixed(0)} MiB`;
      expect(peak).toBeLessThan(RSS_BOUND_MIB);
      expect(Number(installed.bytes)).toBeGreaterThan(ITEMS * 100); // every item's record is over 100 bytes
      await pollUntil(`${id} to catch up`, async () => {
        const r = await members.admin('n1', 'GET', '/v1/members');
        const view = (r.body.members as Array<{ id: string; lag?: number; match?: number }>).find((x) => x.id === id);
        return view !== undefined && (view.match ?? 0) >= ITEMS && view.lag === 0 ? view : undefined;
      }, 60_000);
      expect((await members.admin('n1', 'POST', '/v1/members', { action: 'promote', id })).status).toBe(200);
      await expectList(members, id, 0);
      await expectList(members, id, 517);
    }
    const leaderPeak = await peakRssMiB(members.proc('n1').proc.pid!);
    figures['n1 (sender) peak RSS'] = `${leaderPeak.toFixed(0)} MiB`;
    expect(leaderPeak).toBeLessThan(RSS_BOUND_MIB);

    // A write through the 3-member cluster, then kill -9 and restart a member holding 10^6 items.
    const index = await members.push(['n1'], listPath(3), 'after the join');
    expect(index).toBeGreaterThan(ITEMS);
    await members.kill('n2');
    await timed('n2 restart after kill -9', figures, () => members.start('n2', { peers: members.peersFlag(['n1', 'n2', 'n3']), startTimeoutMs: 60_000 }));
    for (const id of ['n1', 'n2', 'n3']) {
      await pollUntil(`${id} to hold the write made after the join`, async () => ((await members.localItems(id, listPath(3))).length === PER_LIST + 1 ? true : undefined), 60_000);
      await expectList(members, id, 999);
    }

    // A watcher of everything follows the leadership from n1 to n2. n2 holds no event log for
    // its session, so resuming there brings every item as a resync, in frames of at most 8 MiB.
    const watcher = await connect(['n1', 'n2', 'n3'].map((id) => members.url(id)), { requestTimeoutMs: 120_000, timeoutMs: 60_000, connectTimeoutMs: 60_000 });
    try {
      await watcher.watch('/', { prefix: true });
      const resynced = new Promise<number>((done) => watcher.on('resync', (lists) => done(lists.reduce((n, l) => n + l.items.length, 0))));
      await timed('resync of every item after a leadership transfer', figures, async () => {
        expect((await members.admin('n1', 'POST', '/v1/leader/transfer', { to: 'n2' })).status).toBe(200);
        expect(await withTimeout(resynced, 300_000, 'the resync of every item')).toBe(ITEMS + 1);
      });
    } finally {
      await watcher.close();
    }
    const resyncPeak = await peakRssMiB(members.proc('n2').proc.pid!);
    figures['n2 peak RSS after sending the resync'] = `${resyncPeak.toFixed(0)} MiB`;
    expect(resyncPeak).toBeLessThan(RSS_BOUND_MIB);
    console.log(`10^6 items (${ITEMS} items over ${LISTS} lists):\n${Object.entries(figures).map(([k, v]) => `  ${k}: ${v}`).join('\n')}`);
  });
});
