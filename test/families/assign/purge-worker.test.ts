// Purge's clean-up jobs carry what a storage node's DELETE needs, and the purge
// worker (library and `vera assign purge-worker`) finishes them against a storage
// node: here a local HTTP server on 127.0.0.1 that records each DELETE.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { AssignClient } from '../../../src/families/assign/client.js';
import { fxaKidOf } from '../../../src/families/assign/client-cleanup.js';
import { runPurgeWorker } from '../../../src/families/assign/client-purge-worker.js';
import { JournalClient } from '../../../src/families/journal/client.js';
import { assignMember } from './assign-member.js';

const member = assignMember();
let storage: Server | null = null;
afterEach(async () => {
  await new Promise<void>((done) => (storage === null ? done() : storage.close(() => done())));
  storage = null;
});

/** A storage node: answers each DELETE with the status `answer` gives for its path, and records it. */
async function storageNode(answer: (path: string) => number): Promise<{ url: string; deletes: Array<{ method: string; path: string }> }> {
  const deletes: Array<{ method: string; path: string }> = [];
  storage = createServer((req: IncomingMessage, res) => {
    deletes.push({ method: req.method!, path: req.url! });
    res.statusCode = answer(req.url!);
    res.end();
  });
  await new Promise<void>((done) => storage!.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(storage.address() as AddressInfo).port}`, deletes };
}

async function start(): Promise<{ assign: AssignClient; journals: JournalClient }> {
  const assign = await member.start();
  return { assign, journals: new JournalClient(member.client()) };
}

/** Two users on the storage node, each re-keyed once: two replaced records to purge. */
async function twoReplaced(assign: AssignClient, node: string): Promise<number[]> {
  await assign.service('sync-1.5', { pattern: '{node}/1.5/{uid}' });
  await assign.addNode('sync-1.5', node, { capacity: 10 });
  const uids: number[] = [];
  for (const email of ['a@example.com', 'b@example.com']) {
    uids.push((await assign.user('sync-1.5', email, { generation: 10, keysChangedAt: 10, clientState: 'aabb' })).uid);
    await assign.user('sync-1.5', email, { generation: 20, keysChangedAt: 20, clientState: 'ccdd' });
  }
  return uids;
}

describe('purge clean-up jobs and the purge worker', () => {
  it('the key id is Tokenserver\'s: keys-changed-at (or generation) in 13 digits, then the client state in base64url', () => {
    expect(fxaKidOf({ generation: 5, keysChangedAt: 1234, clientState: 'aabb' })).toBe('0000000001234-qrs');
    expect(fxaKidOf({ generation: 5, keysChangedAt: 0, clientState: '' })).toBe('0000000000005-');
    expect(fxaKidOf({ generation: 5, keysChangedAt: 0, clientState: 'not-hex' })).toBeNull();
  });

  it('a job carries generation, keys-changed-at, client state, fxa uid and key id; the worker DELETEs on the node and finishes it', async () => {
    const { assign, journals } = await start();
    const node = await storageNode(() => 204);
    const uids = await twoReplaced(assign, node.url);
    await journals.create('cleanup');
    const purged = await assign.purge('sync-1.5', { graceMs: 0, journal: 'cleanup' });
    expect(purged.purged.map((p) => p.uid).sort((x, y) => x - y)).toEqual(uids);
    const claimed = await journals.claim('cleanup', { max: 10 });
    expect(claimed.items.map((i) => i.data).sort((x, y) => (x as { uid: number }).uid - (y as { uid: number }).uid)).toEqual(
      ['a', 'b'].map((who, i) =>
        expect.objectContaining({ uid: uids[i], email: `${who}@example.com`, fxaUid: who, node: node.url, endpoint: `${node.url}/1.5/${uids[i]!}`, generation: 10, keysChangedAt: 10, clientState: 'aabb', fxaKid: '0000000000010-qrs' }),
      ),
    );
    for (const item of claimed.items) await journals.release('cleanup', item.key, claimed.lease, undefined, { failure: false });
    const report = await runPurgeWorker(journals, 'cleanup', { untilEmpty: true });
    expect(report).toEqual({ deleted: 2, gone: 0, failed: 0, invalid: 0 });
    expect(node.deletes.map((d) => d.path).sort()).toEqual(uids.map((u) => `/1.5/${u}`).sort());
    expect(node.deletes.every((d) => d.method === 'DELETE')).toBe(true);
    expect((await journals.show('cleanup')).counts).toMatchObject({ waiting: 0, processing: 0, flagged: 0 });
  });

  it('vera assign purge-worker --once: 404 counts as done, a failing node is released to retry and stays queued', async () => {
    const { assign, journals } = await start();
    let failing = 0;
    const node = await storageNode((path) => (path.endsWith(`/${failing}`) ? 503 : 404));
    const uids = await twoReplaced(assign, node.url);
    failing = uids[1]!;
    await journals.create('cleanup');
    await assign.purge('sync-1.5', { graceMs: 0, journal: 'cleanup' });
    const run = await member.cli('purge-worker', 'cleanup', '--once');
    expect(run.code).toBe(0);
    expect(run.out).toContain(`gone uid ${uids[0]!}`);
    expect(run.out).toContain(`failed uid ${uids[1]!}`);
    expect(run.out).toContain('deleted 0, already gone 1, failed 1');
    // The failed job is still there, due after its backoff.
    const left = await journals.show('cleanup');
    expect(left.counts).toMatchObject({ waiting: 1, processing: 0 });
    expect((await member.cli('purge-worker', 'cleanup', '--max', '0')).code).toBe(2);
  });
});
