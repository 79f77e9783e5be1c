// The audit log on a real server: authentication failures, denials and admin
// acts are written through Raft as a hash chain; `vera audit --verify` accepts
// the log as written and names the record an attacker edited in LevelDB.
import { ClassicLevel } from 'classic-level';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { verifyChain, type AuditRecord } from '../../src/families/audit/chain.js';
import { decodeRecord, encodeRecord, recordKey } from '../../src/families/audit/index.js';
import { checkedValueEncoding } from '../../src/raft/checked-values.js';
import { captureIO } from '../client/cli-io.js';
import { waitForLeadership } from '../server/fixture.js';
import { WireClient } from '../server/wire-client.js';
import { VeraProcess } from '../support/vera-process.js';
import { securedServer } from './secured.js';

let vp: VeraProcess | null = null;
const wires: WireClient[] = [];
afterEach(async () => {
  for (const w of wires.splice(0)) w.terminate();
  await vp?.stop();
  vp?.removeData();
  vp = null;
});

async function as(p: VeraProcess, hello: Record<string, unknown>): Promise<WireClient> {
  const w = await WireClient.connect(p.url, 'json');
  wires.push(w);
  const r = await w.request('hello', { timeoutMs: 30_000, ...hello });
  if (r.ok !== true) throw new Error(JSON.stringify(r.error));
  return w;
}

/** Polls the log until `done` holds for it (the leader writes gathered facts every 200 ms). */
async function auditUntil(root: WireClient, done: (records: AuditRecord[]) => boolean): Promise<AuditRecord[]> {
  const deadline = Date.now() + 10_000;
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
});
