// The audit log on a real server: authentication failures, denials and admin
// acts are written through Raft as a hash chain; `vera audit --verify` accepts
// the log as written and names the record an attacker edited in LevelDB.
import { ClassicLevel } from 'classic-level';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { verifyChain, type AuditRecord } from '../../src/families/audit/chain.js';
import { decodeRecord, encodeHead, encodeRecord, HEAD_KEY, recordKey } from '../../src/families/audit/index.js';
import { checkedValueEncoding } from '../../src/raft/checked-values.js';
import { captureIO } from '../client/cli-io.js';
import { waitForLeadership } from '../server/fixture.js';
import { WireClient } from '../server/wire-client.js';
import { VeraProcess } from '../support/vera-process.js';
import { endEachTest, securedServer } from './secured.js';

let vp: VeraProcess | null = null;
const wires: WireClient[] = [];
endEachTest(wires, () => vp, () => (vp = null));

async function as(p: VeraProcess, hello: Record<string, unknown>): Promise<WireClient> {
  const w = await WireClient.connect(p.url, 'json');
  wires.push(w);
  const r = await w.request('hello', { timeoutMs: 30_000, ...hello });
  if (r.ok !== true) throw new Error(JSON.stringify(r.error));
  return w;
}

/** Polls the log until `done` holds for it (the leader writes gathered facts every 200 ms). */
async function auditUntil(root: WireClient, done: (records: AuditRecord[]) => boolean, waitMs = 10_000): Promise<AuditRecord[]> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const records = (await root.call('audit.list', {})).records as AuditRecord[];
    if (done(records)) return records;
    if (Date.now() > deadline) throw new Error(`the audit log never held what was expected: ${JSON.stringify(records)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the audit log', () => {
  it('records failures, denials and admin acts in a chain that verifies, and names an edited record', async () => {
    vp = await securedServer();
    const wrong = await WireClient.connect(vp.url, 'json');
    wires.push(wrong);
    expect((await wrong.request('hello', { user: 'alice', password: 'guess' })).error?.code).toBe('UNAUTHORIZED');
    const alice = await as(vp, { user: 'alice', password: 'alice-pw' });
    expect((await alice.request('push', { path: '/app/x', data: 1 })).error?.code).toBe('FORBIDDEN');
    const root = await as(vp, { user: 'root', password: 'root-pw' });
    await root.call('auth.userAdd', { name: 'carol', password: 'carol-pw' });
    expect((await alice.request('audit.list', {})).error?.code).toBe('FORBIDDEN');

    const records = await auditUntil(root, (rs) => rs.some((r) => r.what.startsWith('auth.userAdd') && r.principal === 'root'));
    expect(records).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'auth-failed', principal: 'alice', what: 'wrong user name or password' }),
        expect.objectContaining({ kind: 'denied', principal: 'alice', what: 'push: write on /app/x' }),
        expect.objectContaining({ kind: 'admin', principal: 'root', what: 'auth.userAdd {"name":"carol"}' }),
      ]),
    );
    expect(records.some((r) => r.what.includes('carol-pw'))).toBe(false); // passwords never reach the log
    expect(verifyChain(records)).toBeNull();
    const { token } = await root.call('auth.login', { user: 'root', password: 'root-pw' });
    const ok = captureIO();
    expect(await main(['audit', '--verify', '--server', vp.url, '--token', String(token)], ok)).toBe(0);
    expect(ok.out()).toMatch(/the audit log verifies: \d+ records/);

    // An attacker with the data directory rewrites the denial to hide it.
    const denial = records.find((r) => r.kind === 'denied')!;
    for (const w of wires.splice(0)) w.terminate();
    await vp.stop();
    // The attacker knows the store's format: each value carries its CRC-32C, recomputed here, so only the chain can tell.
    const db = new ClassicLevel<Buffer, Buffer>(join(vp.dataDir, 'db'), { keyEncoding: 'buffer', valueEncoding: checkedValueEncoding });
    const stored = decodeRecord(recordKey(denial.seq), (await db.get(recordKey(denial.seq)))!);
    await db.put(recordKey(denial.seq), encodeRecord({ ...stored, what: 'push: nothing to see' }));
    await db.close();
    vp = await VeraProcess.start({ dataDir: vp.dataDir });
    await waitForLeadership(vp);
    const bad = captureIO({ env: { VERA_PASSWORD: 'root-pw' } });
    expect(await main(['audit', '--verify', '--server', vp.url, '--user', 'root'], bad)).not.toBe(0);
    expect(bad.err()).toContain(`record ${denial.seq} its hash does not match its contents: it was changed`);
  });

  it('keeps a denial that comes after a flood of failed hellos, and records the flood as a count', async () => {
    vp = await securedServer();
    // Failed hellos by a bad token cost the member no hash, so they come as fast as a client sends them.
    // One hello at a time per connection: 64 at once, each trying 40 times (a connection must succeed within 10 s), 4 in turn.
    const started = Date.now();
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        for (let turn = 0; turn < 4; turn++) {
          const w = await WireClient.connect(vp!.url, 'json');
          wires.push(w);
          for (let round = 0; round < 40; round++) expect((await w.request('hello', { token: 'vt1.forged.token' })).error?.code).toBe('UNAUTHORIZED');
          w.terminate();
        }
      }),
    );
    const floodMs = Date.now() - started;
    const alice = await as(vp, { user: 'alice', password: 'alice-pw' });
    expect((await alice.request('push', { path: '/app/after-flood', data: 1 })).error?.code).toBe('FORBIDDEN');
    const root = await as(vp, { user: 'root', password: 'root-pw' });
    // Each record of a failure stands for itself, or for as many as it counts ("N more like this").
    const counted = (rs: AuditRecord[]): number =>
      rs.filter((r) => r.kind === 'auth-failed' && r.principal === null).reduce((n, r) => n + Number(/^(\d+) more like this/.exec(r.what)?.[1] ?? 1), 0);
    // The repeats of one address are counted into one record when their window closes (REPEAT_WINDOW_MS, 10 s).
    const records = await auditUntil(root, (rs) => rs.some((r) => r.what === 'push: write on /app/after-flood') && counted(rs) === 64 * 160, 40_000);
    // Two records (the first, and the count of the rest) per address per 10 s window, not one per failure.
    const failures = records.filter((r) => r.kind === 'auth-failed' && r.principal === null);
    expect(failures.length).toBeLessThanOrEqual(2 * (Math.ceil(floodMs / 10_000) + 1));
    expect(verifyChain(records)).toBeNull();
  }, 90_000);

  it('fails --verify when the oldest record is removed with the window moved to hide it, or the newest with the head rewound', async () => {
    vp = await securedServer();
    const wrong = await WireClient.connect(vp.url, 'json');
    wires.push(wrong);
    for (const guess of ['a', 'b', 'c']) expect((await wrong.request('hello', { user: `mallory-${guess}`, password: guess })).error?.code).toBe('UNAUTHORIZED');
    const alice = await as(vp, { user: 'alice', password: 'alice-pw' });
    for (const path of ['/app/1', '/app/2', '/app/3']) expect((await alice.request('push', { path, data: 1 })).error?.code).toBe('FORBIDDEN');
    const root = await as(vp, { user: 'root', password: 'root-pw' });
    const records = await auditUntil(root, (rs) => rs.filter((r) => r.kind === 'denied').length === 3 && rs.filter((r) => r.kind === 'auth-failed').length === 3);
    const verify = async (): Promise<{ code: number; err: string }> => {
      const io = captureIO({ env: { VERA_PASSWORD: 'root-pw' } });
      const code = await main(['audit', '--verify', '--server', vp!.url, '--user', 'root'], io);
      return { code, err: io.err() };
    };
    expect((await verify()).code).toBe(0);
    const tamper = async (edit: (db: ClassicLevel<Buffer, Buffer>) => Promise<void>): Promise<void> => {
      for (const w of wires.splice(0)) w.terminate();
      await vp!.stop();
      const db = new ClassicLevel<Buffer, Buffer>(join(vp!.dataDir, 'db'), { keyEncoding: 'buffer', valueEncoding: checkedValueEncoding });
      await edit(db);
      await db.close();
      vp = await VeraProcess.start({ dataDir: vp!.dataDir });
      await waitForLeadership(vp);
    };
    const newest = records.at(-1)!;

    // The two newest records removed and the head set back to the one before them: the Raft log still says what was applied.
    await tamper(async (db) => {
      await db.del(recordKey(newest.seq));
      await db.del(recordKey(newest.seq - 1));
      const kept = records.find((r) => r.seq === newest.seq - 2)!;
      await db.put(HEAD_KEY, encodeHead(kept.seq, kept.hash, 1));
    });
    const rewound = await verify();
    expect(rewound.code).not.toBe(0);
    expect(rewound.err).toContain('the audit log was cut back or rewritten');

    // The oldest record removed and the head's start moved past it: the window keeps exactly the newest 100,000.
    await tamper(async (db) => {
      for (const r of records) await db.put(recordKey(r.seq), encodeRecord(r));
      await db.put(HEAD_KEY, encodeHead(newest.seq, newest.hash, 1));
      await db.del(recordKey(1));
      await db.put(HEAD_KEY, encodeHead(newest.seq, newest.hash, 2));
    });
    const trimmed = await verify();
    expect(trimmed.code).not.toBe(0);
    expect(trimmed.err).toContain('record 2 is named the oldest, but with');
  }, 60_000);
});
