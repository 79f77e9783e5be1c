// Importing a Tokenserver database (its services, nodes and users tables as CSV) on a
// real server: uids kept, bounded batches, the load derived from the records, a
// repeated run changing nothing, and the check that every user resolves as in the dump.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AssignClient } from '../../../src/families/assign/client.js';
import { assignMember } from './assign-member.js';
import { csvFields } from '../../../src/families/assign/import-dump.js';

const member = assignMember('vera-import-');

const T0 = 1_600_000_000_000;

/** A dump: one service, two nodes, 250 users (uids from 1001, gaps), some re-keyed, one with two current records. */
function writeDump(): { services: string; nodes: string; users: string } {
  const dir = member.dir();
  const services = join(dir, 'services.csv');
  const nodes = join(dir, 'nodes.csv');
  const users = join(dir, 'users.csv');
  writeFileSync(services, 'id,service,pattern\n1,sync-1.5,"{node}/1.5/{uid}"\n');
  writeFileSync(nodes, 'id,service,node,available,current_load,capacity,downed,backoff\n10,1,https://a.example.com,5,999,1000,0,0\n11,1,https://b.example.com,0,999,1000,0,0\n');
  const rows = ['uid,service,email,generation,client_state,created_at,replaced_at,nodeid,keys_changed_at'];
  let uid = 1000;
  for (let i = 0; i < 250; i++) {
    uid += 1 + (i % 3);
    const node = i % 2 === 0 ? 10 : 11;
    if (i % 5 === 0) {
      // Re-keyed: an older record replaced, then the current one.
      rows.push(`${uid},1,u${i}@example.com,1,aa,${T0 + i},${T0 + i + 50},${node},\\N`);
      uid++;
      rows.push(`${uid},1,u${i}@example.com,2,bb,${T0 + i + 50},NULL,${node},2`);
    } else {
      rows.push(`${uid},1,u${i}@example.com,${i},${i % 7 === 0 ? '' : 'cc'},${T0 + i},,${node},${i}`);
    }
  }
  // Upstream's race: two current records for one email; the newer (higher generation) wins.
  rows.push(`5001,1,twice@example.com,3,dd,${T0},,10,3`, `5002,1,twice@example.com,4,ee,${T0 + 1},,11,4`);
  writeFileSync(users, `${rows.join('\n')}\n`);
  return { services, nodes, users };
}

const start = (): Promise<AssignClient> => member.start();
const run = (...argv: string[]): ReturnType<typeof member.cli> => member.cli('import', ...argv);

describe('importing a Tokenserver database', () => {
  it('reads CSV fields: quotes, doubled quotes, empty fields', () => {
    expect(csvFields('1,"a,b","say ""hi""",,x')).toEqual(['1', 'a,b', 'say "hi"', '', 'x']);
    expect(() => csvFields('"open')).toThrow(/unterminated/);
  });

  it('vera assign import: uids kept, batches of --batch, loads from the records, then every user checked; a second run changes nothing', async () => {
    const assign = await start();
    const files = writeDump();
    const first = await run('--services', files.services, '--nodes', files.nodes, '--users', files.users, '--batch', '100');
    expect(first.err).toBe('');
    expect(first.code).toBe(0);
    expect(first.out).toContain('users: batch 1: 100 imported');
    expect(first.out).toContain('imported 1 services, 2 nodes, 302 user records in 4 batches (0 already there, 1 duplicate current records replaced)');
    expect(first.out).toContain('checked 251 users: each resolves to the dump');
    // uids kept; the re-keyed user's history and old client state kept; the race repaired to one current record.
    const u0 = await assign.lookup('sync-1.5', 'u0@example.com');
    expect(u0).toMatchObject({ current: { uid: 1002, generation: 2, clientState: 'bb', keysChangedAt: 2, node: 'https://a.example.com' }, oldClientStates: ['aa'] });
    expect(u0.records.map((r) => r.uid)).toEqual([1002, 1001]);
    const twice = await assign.lookup('sync-1.5', 'twice@example.com');
    expect(twice.current).toMatchObject({ uid: 5002, replacedAt: 0, node: 'https://b.example.com' });
    expect(twice.records.filter((r) => r.replacedAt === 0)).toHaveLength(1);
    // Load is the current records, not the dump's current_load; available and capacity as dumped.
    const nodes = await assign.nodes('sync-1.5');
    expect(nodes).toEqual([
      { node: 'https://a.example.com', capacity: 1000, load: 125, available: 5, downed: false, backoff: 0 },
      { node: 'https://b.example.com', capacity: 1000, load: 126, available: 0, downed: false, backoff: 0 },
    ]);
    // New users get uids after the highest imported.
    expect((await assign.user('sync-1.5', 'new@example.com')).uid).toBe(5003);
    // Again: nothing new, the check still holds.
    const second = await run('--services', files.services, '--nodes', files.nodes, '--users', files.users, '--json');
    expect(second.err).toBe('');
    expect(JSON.parse(second.out)).toMatchObject({ imported: 0, present: 302, repaired: 0, mismatched: 0, checked: 251 });
  }, 60_000);

  it('refuses a batch whose uid is another record, and names what does not resolve as in the dump', async () => {
    const assign = await start();
    const files = writeDump();
    await assign.service('sync-1.5');
    await assign.addNode('sync-1.5', 'https://a.example.com', { capacity: 1000 });
    await expect(assign.importUsers('sync-1.5', [{ uid: 7, email: 'x@example.com', generation: 1, clientState: '', keysChangedAt: 0, createdAt: T0, replacedAt: 0, node: 'https://nowhere' }])).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    await assign.importUsers('sync-1.5', [{ uid: 1001, email: 'someone@example.com', generation: 1, clientState: '', keysChangedAt: 0, createdAt: T0, replacedAt: 0, node: 'https://a.example.com' }]);
    const r = await run('--services', files.services, '--nodes', files.nodes, '--users', files.users);
    expect(r.code).toBe(1);
    expect(r.err).toContain('uid 1001 is already another record');
    expect(await assign.importUsers('sync-1.5', [{ uid: 1001, email: 'someone@example.com', generation: 1, clientState: '', keysChangedAt: 0, createdAt: T0, replacedAt: 0, node: 'https://a.example.com' }])).toEqual({ imported: 0, present: 1, repaired: 0 });
    expect((await run('--services', files.services)).code).toBe(2);
  });
});
