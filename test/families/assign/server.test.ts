// Node assignment end to end on a real `vera` process: its ops over the
// WebSocket in both encodings, the client library, the HTTP API, the CLI,
// Tokenserver's refusals with their reason, purge through a journal, metrics.
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../../src/client/client.js';
import { AssignClient } from '../../../src/families/assign/client.js';
import { JournalClient } from '../../../src/families/journal/client.js';
import { main } from '../../../src/cli/main.js';
import { captureIO } from '../../client/cli-io.js';
import { ENCODINGS, openSession, startLeader, untilCommandVersion } from '../../server/fixture.js';
import type { VeraProcess } from '../../support/vera-process.js';

let vp: VeraProcess | null = null;
let client: VeraClient | null = null;
afterEach(async () => {
  await client?.close();
  client = null;
  await vp?.stop();
  vp = null;
});

async function start(): Promise<{ assign: AssignClient; vp: VeraProcess }> {
  vp = await startLeader();
  client = await connect(vp.url, { timeoutMs: 10_000 });
  const assign = new AssignClient(client);
  await untilCommandVersion(() => assign.services());
  return { assign, vp };
}

async function post(vp: VeraProcess, op: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${vp.httpUrl}/v1/assign/${op}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function get(vp: VeraProcess, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${vp.httpUrl}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('node assignment on a server', () => {
  it('answers its ops in both encodings and refuses bad requests before proposing anything', async () => {
    const { assign } = await start();
    expect(await assign.service('sync-1.5', { pattern: '{node}/1.5/{uid}' })).toMatchObject({ created: true, pattern: '{node}/1.5/{uid}', releaseRate: 0.1, newUsers: true, topN: 1 });
    await assign.addNode('sync-1.5', 'https://node1', { capacity: 100 });
    for (const encoding of ENCODINGS) {
      const { client: wire } = await openSession(vp!, encoding);
      try {
        const first = await wire.call('assign.user', { service: 'sync-1.5', email: `${encoding}@example.com`, generation: 5, keysChangedAt: 3, clientState: 'aa' });
        expect(first).toMatchObject({ node: 'https://node1', generation: 5, clientState: 'aa', created: true, allocated: true, oldClientStates: [] });
        expect(first.endpoint).toBe(`https://node1/1.5/${first.uid as number}`);
        const refused = await wire.request('assign.user', { service: 'sync-1.5', email: `${encoding}@example.com`, generation: 4, keysChangedAt: 3, clientState: 'aa' });
        expect(refused.error).toMatchObject({ code: 'CONFLICT', reason: 'invalid-generation' });
        for (const bad of [
          { service: 'sync 1.5', email: 'a@x' },
          { service: 'sync-1.5', email: '' },
          { service: 'sync-1.5', email: 'a@x', generation: -1 },
          { service: 'sync-1.5', email: 'a@x', generation: 2 ** 53 },
          { service: 'sync-1.5', email: 'a@x', clientState: 'zz zz' },
          { service: 'sync-1.5', email: 'a@x', colour: 'red' },
        ]) {
          expect((await wire.request('assign.user', bad)).error?.code, JSON.stringify(bad)).toBe('BAD_REQUEST');
        }
        expect((await wire.request('assign.addNode', { service: 'sync-1.5', node: 'https://x' })).error?.code).toBe('BAD_REQUEST');
        expect((await wire.request('assign.service', { service: 'sync-1.5', releaseRate: 0 })).error?.code).toBe('BAD_REQUEST');
        expect((await wire.request('assign.user', { service: 'nope-1.0', email: 'a@x' })).error?.code).toBe('NOT_FOUND');
      } finally {
        wire.terminate();
      }
    }
    // Nothing the bad requests named exists.
    expect(await assign.nodes('sync-1.5')).toEqual([{ node: 'https://node1', capacity: 100, load: 2, available: 98, downed: false, backoff: 0 }]);
  });

  it('the client library runs the whole life of a user: create, key change, decommission, move, retire, purge into a journal', async () => {
    const { assign } = await start();
    const journals = new JournalClient(client!);
    await assign.service('sync-1.5');
    await assign.addNode('sync-1.5', 'https://a', { capacity: 10 });
    const created = await assign.user('sync-1.5', 'u@example.com', { generation: 1, keysChangedAt: 1, clientState: 'aa' });
    expect(created).toMatchObject({ node: 'https://a', created: true });
    const rekeyed = await assign.user('sync-1.5', 'u@example.com', { generation: 2, keysChangedAt: 2, clientState: 'bb' });
    expect(rekeyed).toMatchObject({ node: 'https://a', oldClientStates: ['aa'], created: false, allocated: false });
    expect(rekeyed.uid).toBeGreaterThan(created.uid);
    await expect(assign.user('sync-1.5', 'u@example.com', { generation: 3, keysChangedAt: 3, clientState: 'aa' })).rejects.toMatchObject({ code: 'CONFLICT', hints: { reason: 'invalid-client-state' } });
    expect(await assign.lookup('sync-1.5', 'u@example.com')).toMatchObject({ current: { uid: rekeyed.uid, replacedAt: 0 }, oldClientStates: ['aa'], records: [{ uid: rekeyed.uid }, { uid: created.uid }] });
    // Decommission: the next request moves the user to the new node with the same values.
    await assign.addNode('sync-1.5', 'https://b', { capacity: 10 });
    await assign.updateNode('sync-1.5', 'https://a', { downed: true });
    expect(await assign.decommission('sync-1.5', 'https://a')).toEqual({ replaced: 1, closed: false });
    const moved = await assign.user('sync-1.5', 'u@example.com', { generation: 2, keysChangedAt: 2, clientState: 'bb' });
    expect(moved).toMatchObject({ node: 'https://b', allocated: true, clientState: 'bb', oldClientStates: ['aa'], firstSeenAt: created.firstSeenAt });
    expect(await assign.count('sync-1.5')).toBe(1);
    expect(await assign.count('sync-1.5', created.createdAt - 1)).toBe(0);
    // Purge with no grace: the two replaced records on node a; with a journal, their cleanup is queued first.
    await journals.create('purges');
    // What a purge would take, as a read: both replaced records (on a downed node too), bounded by max, none within the grace.
    expect(await assign.purgeable('sync-1.5', { graceMs: 0 })).toMatchObject({ service: 'sync-1.5', records: 2, capped: false });
    expect(await assign.purgeable('sync-1.5', { graceMs: 0, max: 1 })).toMatchObject({ records: 1, capped: true });
    expect(await assign.purgeable('sync-1.5')).toMatchObject({ records: 0, capped: false });
    await expect(assign.purgeable('sync-1.5', { max: 10_001 })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(assign.purgeable('nope-1.0')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await assign.purge('sync-1.5', { graceMs: 0, dryRun: true })).toMatchObject({ dryRun: true, purged: [], skipped: 2 });
    const purged = await assign.purge('sync-1.5', { graceMs: 0, force: true, journal: 'purges' });
    expect(purged.purged.map((p) => p.uid).sort((x, y) => x - y)).toEqual([created.uid, rekeyed.uid]);
    const queued = await journals.claim('purges', { max: 10 });
    expect(queued.items.map((i) => i.data).sort((x, y) => (x as { uid: number }).uid - (y as { uid: number }).uid)).toEqual([
      expect.objectContaining({ service: 'sync-1.5', uid: created.uid, email: 'u@example.com', node: 'https://a', endpoint: `https://a/1.5/${created.uid}`, generation: 1, keysChangedAt: 1, clientState: 'aa' }),
      expect.objectContaining({ service: 'sync-1.5', uid: rekeyed.uid, email: 'u@example.com', node: 'https://a', endpoint: `https://a/1.5/${rekeyed.uid}`, generation: 2, keysChangedAt: 2, clientState: 'bb' }),
    ]);
    // Remove the empty node; retire the user; events on an unknown user change nothing.
    expect(await assign.removeNode('sync-1.5', 'https://a')).toEqual({ replaced: 0 });
    expect((await assign.nodes('sync-1.5')).map((n) => n.node)).toEqual(['https://b']);
    expect(await assign.retire('u@example.com')).toEqual({ services: 1 });
    await expect(assign.user('sync-1.5', 'u@example.com', { generation: 9, keysChangedAt: 9, clientState: 'bb' })).rejects.toMatchObject({ hints: { reason: 'invalid-generation' } });
    expect(await assign.event('reset', 'nobody@example.com', 10)).toEqual({ changed: 0 });
    expect(await assign.nodes('sync-1.5')).toMatchObject([{ node: 'https://b', load: 0 }]);
  });

  it('a node decommissioned while up takes no new users until an operator reopens it: its users go elsewhere', async () => {
    const { assign } = await start();
    await assign.service('sync-1.5');
    await assign.addNode('sync-1.5', 'https://a', { capacity: 10 });
    const users = ['x@example.com', 'y@example.com'];
    for (const e of users) await assign.user('sync-1.5', e, { generation: 1 });
    await assign.addNode('sync-1.5', 'https://b', { capacity: 10 });
    // a (now empty, so ranked first) is closed by the decommission: both users land on b.
    expect(await assign.decommission('sync-1.5', 'https://a')).toEqual({ replaced: 2, closed: true });
    for (const e of users) expect((await assign.user('sync-1.5', e, { generation: 1 })).node).toBe('https://b');
    expect((await assign.user('sync-1.5', 'new@example.com')).node).toBe('https://b');
    expect(await assign.nodes('sync-1.5')).toMatchObject([{ node: 'https://a', load: 0, backoff: 1 }, { node: 'https://b', load: 3 }]);
    // Reopened, it is the least loaded again.
    await assign.updateNode('sync-1.5', 'https://a', { backoff: 0 });
    expect((await assign.user('sync-1.5', 'later@example.com')).node).toBe('https://a');
  });

  it('answers a returning user whose request changes nothing from a linearizable read, appending nothing to the log', async () => {
    const { assign, vp } = await start();
    await assign.service('sync-1.5');
    await assign.addNode('sync-1.5', 'https://a', { capacity: 10 });
    const first = await assign.user('sync-1.5', 'r@example.com', { generation: 5, keysChangedAt: 5, clientState: 'aa' });
    // What the member proposed for logins: other entries (the audit log's record of the admin acts above,
    // written by the leader in the background) may land in the log meanwhile, and are not the login's.
    const lastIndex = async (): Promise<number> => {
      const text = await fetch(`${vp.httpUrl}/metrics`).then((r) => r.text());
      const line = /^vera_proposals_total\{op="login"\} (\d+)$/m.exec(text);
      return line === null ? 0 : Number(line[1]);
    };
    const before = await lastIndex();
    expect(before).toBe(1); // the first login, which created the user
    // Unchanged: the same values, or an absent generation (0), which moves nothing.
    for (const login of [{ generation: 5, keysChangedAt: 5, clientState: 'aa' }, { keysChangedAt: 5, clientState: 'aa' }]) {
      expect(await assign.user('sync-1.5', 'r@example.com', login)).toEqual({ ...first, created: false, allocated: false });
    }
    expect(await lastIndex()).toBe(before);
    // A change is an entry, and the next unchanged login sees it.
    const bumped = await assign.user('sync-1.5', 'r@example.com', { generation: 6, keysChangedAt: 5, clientState: 'aa' });
    expect(bumped).toMatchObject({ uid: first.uid, generation: 6 });
    expect(await lastIndex()).toBe(before + 1);
    expect(await assign.user('sync-1.5', 'r@example.com', { generation: 6, keysChangedAt: 5, clientState: 'aa' })).toMatchObject({ generation: 6 });
    // Refusals still go through the log's answer (and change nothing).
    await expect(assign.user('sync-1.5', 'r@example.com', { generation: 7, keysChangedAt: 5, clientState: 'bb' })).rejects.toMatchObject({ hints: { reason: 'invalid-client-state' } });
    expect((await assign.lookup('sync-1.5', 'r@example.com')).records).toHaveLength(1);
  });

  it('removing a node moves its users off in bounded batches; no node left is a clear UNAVAILABLE', async () => {
    const { assign } = await start();
    await assign.service('sync-1.5');
    await assign.addNode('sync-1.5', 'https://a', { capacity: 5000 });
    const emails = Array.from({ length: 2500 }, (_, i) => `user${i}@example.com`);
    for (let i = 0; i < emails.length; i += 250) await Promise.all(emails.slice(i, i + 250).map((e) => assign.user('sync-1.5', e)));
    expect(await assign.removeNode('sync-1.5', 'https://a')).toEqual({ replaced: 2500 });
    expect(await assign.nodes('sync-1.5')).toEqual([]);
    await expect(assign.user('sync-1.5', emails[0]!)).rejects.toMatchObject({ code: 'UNAVAILABLE', hints: { reason: 'no-node-available' } });
    await assign.service('sync-1.5', { newUsers: false });
    await expect(assign.user('sync-1.5', 'new@example.com')).rejects.toMatchObject({ code: 'FORBIDDEN', hints: { reason: 'new-users-disabled' } });
  }, 60_000);

  it('has an HTTP JSON API for services, nodes, users, events and purge', async () => {
    const { vp } = await start();
    expect(await post(vp, 'service', { service: 'sync-1.5', pattern: '{node}/1.5/{uid}' })).toMatchObject({ status: 200, body: { created: true } });
    expect(await post(vp, 'addNode', { service: 'sync-1.5', node: 'https://n', capacity: 10 })).toEqual({ status: 200, body: {} });
    const user = await post(vp, 'user', { service: 'sync-1.5', email: 'h@example.com', generation: 3, clientState: 'ab' });
    expect(user).toMatchObject({ status: 200, body: { node: 'https://n', generation: 3 } });
    expect(await post(vp, 'user', { service: 'sync-1.5', email: 'h@example.com', generation: 2, clientState: 'ab' })).toMatchObject({ status: 409, body: { error: { code: 'CONFLICT', reason: 'invalid-generation' } } });
    expect(await post(vp, 'user', { service: 'sync-1.5', email: 'h@example.com', generation: 'x' })).toMatchObject({ status: 400, body: { error: { code: 'BAD_REQUEST' } } });
    expect(await post(vp, 'frobnicate', {})).toMatchObject({ status: 404 });
    expect((await fetch(`${vp.httpUrl}/v1/assign/user`, { method: 'POST', body: 'not json' })).status).toBe(400);
    expect((await fetch(`${vp.httpUrl}/v1/assign/user`, { method: 'DELETE' })).status).toBe(405);
    expect(await post(vp, 'event', { kind: 'passwordChange', email: 'h@example.com', generation: 10 })).toEqual({ status: 200, body: { changed: 1 } });
    expect(await post(vp, 'purge', { service: 'sync-1.5', dryRun: true })).toEqual({ status: 200, body: { dryRun: true, purged: [], skipped: 0, next: null } });
    expect(await get(vp, '/v1/assign/services')).toMatchObject({ status: 200, body: { services: [{ service: 'sync-1.5', nodes: 1 }] } });
    expect(await get(vp, '/v1/assign/services/sync-1.5')).toMatchObject({ status: 200, body: { nodes: [{ node: 'https://n', load: 1 }] } });
    expect(await get(vp, `/v1/assign/services/sync-1.5/users/${encodeURIComponent('h@example.com')}`)).toMatchObject({ status: 200, body: { current: { generation: 9, email: 'h@example.com' } } });
    expect(await get(vp, '/v1/assign/services/sync-1.5/count')).toMatchObject({ status: 200, body: { users: 1 } });
    expect(await get(vp, '/v1/assign/services/nope-1.0')).toMatchObject({ status: 404 });
    // Metrics per node.
    const metrics = await (await fetch(`${vp.httpUrl}/metrics`)).text();
    expect(metrics).toContain('vera_assign_node_load{service="sync-1.5",node="https://n"} 1');
    expect(metrics).toContain('vera_assign_node_capacity{service="sync-1.5",node="https://n"} 10');
    expect(metrics).toContain('vera_assign_allocations_total{service="sync-1.5",node="https://n"} 1');
    expect(metrics).toContain('vera_assign_refusals_total{service="sync-1.5",reason="invalid-generation"} 1');
  });

  it('a user past 100 records is 429 over HTTP (QUOTA_EXCEEDED, too-many-records); purge lets it go on', async () => {
    const { vp, assign } = await start();
    await assign.service('sync-1.5');
    await assign.addNode('sync-1.5', 'https://n', { capacity: 10 });
    for (let i = 1; i <= 100; i++) await assign.user('sync-1.5', 'm@example.com', { generation: i, keysChangedAt: i, clientState: `s${i}` });
    const refused = await post(vp, 'user', { service: 'sync-1.5', email: 'm@example.com', generation: 101, keysChangedAt: 101, clientState: 's101' });
    expect(refused).toMatchObject({ status: 429, body: { error: { code: 'QUOTA_EXCEEDED', reason: 'too-many-records' } } });
    await assign.purge('sync-1.5', { graceMs: 0, max: 1000 });
    expect(await post(vp, 'user', { service: 'sync-1.5', email: 'm@example.com', generation: 101, keysChangedAt: 101, clientState: 's101' })).toMatchObject({ status: 200 });
  });

  it('has a CLI: vera assign service|node|user|lookup|retire|decommission|purge|events|count, with --json', async () => {
    const { vp } = await start();
    const run = async (...argv: string[]): Promise<{ code: number; out: string; err: string }> => {
      const io = captureIO();
      const code = await main(['assign', ...argv, '--server', vp.url], io);
      return { code, out: io.out(), err: io.err() };
    };
    expect(await run('service', 'sync-1.5', '--pattern', '{node}/1.5/{uid}')).toMatchObject({ code: 0, out: expect.stringContaining('created sync-1.5') });
    expect(await run('node', 'add', 'sync-1.5', 'https://n', '--capacity', '10')).toMatchObject({ code: 0 });
    const user = await run('user', 'sync-1.5', 'c@example.com', '--generation', '4', '--client-state', 'ab', '--json');
    expect(user.code).toBe(0);
    expect(JSON.parse(user.out)).toMatchObject({ node: 'https://n', generation: 4, clientState: 'ab', created: true });
    expect(await run('user', 'sync-1.5', 'c@example.com', '--generation', '3', '--client-state', 'ab')).toMatchObject({ code: 1, err: expect.stringContaining('invalid-generation') });
    expect(await run('lookup', 'sync-1.5', 'c@example.com')).toMatchObject({ code: 0, out: expect.stringContaining('current: uid') });
    expect(JSON.parse((await run('node', 'ls', 'sync-1.5', '--json')).out)).toEqual([{ node: 'https://n', capacity: 10, load: 1, available: 9, downed: false, backoff: 0 }]);
    expect(await run('node', 'set', 'sync-1.5', 'https://n', '--downed', 'yes')).toMatchObject({ code: 0 });
    expect(await run('decommission', 'sync-1.5', 'https://n')).toMatchObject({ code: 0, out: expect.stringContaining('replaced 1 users') });
    expect(await run('purge', 'sync-1.5', '--grace', '0', '--dry-run')).toMatchObject({ code: 0, out: expect.stringContaining('skipped 1 on downed nodes') });
    expect(await run('events', 'reset', 'c@example.com', '--generation', '50')).toMatchObject({ code: 0 });
    expect(await run('retire', 'c@example.com')).toMatchObject({ code: 0, out: 'retired c@example.com from 1 service\n' });
    const retired = await run('lookup', 'sync-1.5', 'c@example.com');
    expect(retired.out).toContain('(retired: every request is refused)');
    expect(retired.out).not.toContain('moves');
    expect(JSON.parse((await run('count', 'sync-1.5', '--json')).out)).toEqual({ users: 0 });
    expect(await run('services')).toMatchObject({ code: 0, out: expect.stringContaining('sync-1.5') });
    // Usage errors are caught before connecting.
    expect((await run('user', 'sync 1.5', 'a@x')).code).toBe(2);
    expect((await run('node', 'add', 'sync-1.5', 'https://m')).code).toBe(2);
    expect((await run('events', 'reset', 'a@x')).code).toBe(2);
    expect((await run('node', 'frob')).code).toBe(2);
  });
});
