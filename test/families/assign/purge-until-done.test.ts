// Purge until done on a real server: bounded batches, each going on from the last
// one's cursor, with the grace period, downed nodes passed over unless forced, a
// uid range, and an override node for data copied off a downed node.
import { describe, expect, it } from 'vitest';
import type { AssignClient } from '../../../src/families/assign/client.js';
import { assignMember } from './assign-member.js';
import { JournalClient } from '../../../src/families/journal/client.js';
import { pollUntil } from '../../support/poll.js';

const member = assignMember();

async function start(): Promise<AssignClient> {
  const assign = await member.start();
  await assign.service('sync-1.5');
  return assign;
}

/** `n` users on the service's nodes, each re-keyed once: n replaced records. */
async function rekeyed(assign: AssignClient, prefix: string, n: number): Promise<void> {
  const emails = Array.from({ length: n }, (_, i) => `${prefix}${i}@example.com`);
  await Promise.all(emails.map((e) => assign.user('sync-1.5', e, { generation: 1, keysChangedAt: 1, clientState: 'aa' })));
  await Promise.all(emails.map((e) => assign.user('sync-1.5', e, { generation: 2, keysChangedAt: 2, clientState: 'bb' })));
}

describe('purge until done', () => {
  it('vera assign purge --until-done: batch after batch with progress, records on a downed node left until --force', async () => {
    const assign = await start();
    await assign.addNode('sync-1.5', 'https://a', { capacity: 1000 });
    await rekeyed(assign, 'a', 120);
    await assign.addNode('sync-1.5', 'https://c', { capacity: 1000 });
    await assign.updateNode('sync-1.5', 'https://a', { backoff: 1 });
    await rekeyed(assign, 'c', 7);
    await assign.updateNode('sync-1.5', 'https://c', { downed: true });
    const run = (...argv: string[]): ReturnType<typeof member.cli> => member.cli('purge', 'sync-1.5', ...argv);
    // The grace period holds them all back.
    expect((await run('--until-done', '--grace', '1h')).out).toContain('done: 0 records purged in 1 batches');
    const first = await run('--until-done', '--grace', '0', '--max', '50');
    expect(first.code).toBe(0);
    expect(first.out).toContain('batch 1: purged 50');
    expect(first.out).toContain('batch 3: purged 20');
    expect(first.out).toContain('done: 120 records purged in 3 batches, 7 on downed nodes left (--force purges them)');
    // The records on the downed node stay until forced.
    expect(JSON.parse((await run('--until-done', '--grace', '0', '--force', '--json')).out)).toEqual({ batches: 1, purged: 7, skipped: 0, done: true });
    expect((await assign.purge('sync-1.5', { graceMs: 0, dryRun: true })).purged).toEqual([]);
    expect((await run('--until-done', '--after', '1:1')).code).toBe(2);
    expect((await run('--override-node', 'https://x')).code).toBe(2);
  }, 60_000);

  it('a uid range purges only those uids; purgeAll in the library reports each batch', async () => {
    const assign = await start();
    await assign.addNode('sync-1.5', 'https://a', { capacity: 1000 });
    await rekeyed(assign, 'u', 30);
    const replaced = (await assign.purge('sync-1.5', { graceMs: 0, dryRun: true, max: 1000 })).purged.map((p) => p.uid).sort((x, y) => x - y);
    expect(replaced).toHaveLength(30);
    const [lo, hi] = [replaced[5]!, replaced[14]!];
    const batches: number[] = [];
    const total = await assign.purgeAll('sync-1.5', { graceMs: 0, max: 4, uidMin: lo, uidMax: hi }, (p) => batches.push(p.batch.purged.length));
    expect(total).toEqual({ batches: 3, purged: 10, skipped: 0, done: true });
    expect(batches).toEqual([4, 4, 2]);
    const left = (await assign.purge('sync-1.5', { graceMs: 0, dryRun: true, max: 1000 })).purged.map((p) => p.uid).sort((x, y) => x - y);
    expect(left).toEqual(replaced.filter((u) => u < lo || u > hi));
    await expect(assign.purge('sync-1.5', { uidMin: 5, uidMax: 4 })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });

  it('--override-node sends a downed node\'s clean-up to the node its data was copied to, except the user\'s current data', async () => {
    const assign = await start();
    const journals = new JournalClient(member.client());
    await journals.create('cleanup');
    await assign.addNode('sync-1.5', 'https://a', { capacity: 100 });
    // x: one record on a. y: re-keyed on a, so an older record (aa) and a newer one (bb).
    await assign.user('sync-1.5', 'x@example.com', { generation: 1, keysChangedAt: 1, clientState: 'aa' });
    const yOld = await assign.user('sync-1.5', 'y@example.com', { generation: 1, keysChangedAt: 1, clientState: 'aa' });
    await assign.user('sync-1.5', 'y@example.com', { generation: 2, keysChangedAt: 2, clientState: 'bb' });
    // a goes down; its users move to b keeping their values: x's and y's newest data is their current data.
    await assign.addNode('sync-1.5', 'https://b', { capacity: 100 });
    await assign.updateNode('sync-1.5', 'https://a', { downed: true });
    await assign.decommission('sync-1.5', 'https://a');
    for (const [e, g, s] of [['x@example.com', 1, 'aa'], ['y@example.com', 2, 'bb']] as const) await assign.user('sync-1.5', e, { generation: g, keysChangedAt: g, clientState: s });
    const r = await assign.purge('sync-1.5', { graceMs: 0, force: true, journal: 'cleanup', overrideNode: 'https://copy' });
    expect(r.purged).toHaveLength(3);
    expect(r).toMatchObject({ overridden: 1, activeData: 2 });
    const jobs = await journals.claim('cleanup', { max: 10 });
    expect(jobs.items.map((i) => i.data)).toEqual([expect.objectContaining({ uid: yOld.uid, node: 'https://copy', endpoint: `https://copy/1.5/${yOld.uid}`, clientState: 'aa' })]);
  });

  it('a purge job with force and an override node: the same clean-ups as a batch, counted in its progress', async () => {
    const assign = await start();
    const journals = new JournalClient(member.client());
    await journals.create('cleanup');
    await assign.addNode('sync-1.5', 'https://a', { capacity: 100 });
    await assign.user('sync-1.5', 'x@example.com', { generation: 1, keysChangedAt: 1, clientState: 'aa' });
    const yOld = await assign.user('sync-1.5', 'y@example.com', { generation: 1, keysChangedAt: 1, clientState: 'aa' });
    await assign.user('sync-1.5', 'y@example.com', { generation: 2, keysChangedAt: 2, clientState: 'bb' });
    await assign.addNode('sync-1.5', 'https://b', { capacity: 100 });
    await assign.updateNode('sync-1.5', 'https://a', { downed: true });
    await assign.decommission('sync-1.5', 'https://a');
    for (const [e, g, s] of [['x@example.com', 1, 'aa'], ['y@example.com', 2, 'bb']] as const) await assign.user('sync-1.5', e, { generation: g, keysChangedAt: g, clientState: s });
    await expect(assign.purgeStart('sync-1.5', { graceMs: 0, journal: 'cleanup', overrideNode: 'https://copy' })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await assign.purgeStart('sync-1.5', { graceMs: 0, force: true, max: 2, journal: 'cleanup', overrideNode: 'https://copy' });
    const done = await pollUntil('the job to finish', async () => {
      const j = await assign.purgeStatus('sync-1.5');
      return j.state === 'running' ? undefined : j;
    }, 30_000);
    expect(done).toMatchObject({ state: 'done', purged: 3, skipped: 0, overridden: 1, activeData: 2, force: true, overrideNode: 'https://copy' });
    const jobs = await journals.claim('cleanup', { max: 10 });
    expect(jobs.items.map((i) => i.data)).toEqual([expect.objectContaining({ uid: yOld.uid, node: 'https://copy', clientState: 'aa' })]);
  });

  it('vera assign purge-job: the leader purges until done with the same options, progress readable; a job whose journal is gone fails', async () => {
    const assign = await start();
    const journals = new JournalClient(member.client());
    await assign.addNode('sync-1.5', 'https://a', { capacity: 1000 });
    await rekeyed(assign, 'j', 45);
    await assign.addNode('sync-1.5', 'https://d', { capacity: 1000 });
    await assign.updateNode('sync-1.5', 'https://a', { backoff: 1 });
    await rekeyed(assign, 'd', 5);
    await assign.updateNode('sync-1.5', 'https://d', { downed: true });
    const run = (...argv: string[]): ReturnType<typeof member.cli> => member.cli('purge-job', ...argv);
    await journals.create('cleanup');
    const started = await run('start', 'sync-1.5', '--grace', '0', '--max', '10', '--journal', 'cleanup', '--json');
    expect(started.code, started.err).toBe(0);
    expect(JSON.parse(started.out)).toMatchObject({ seq: 1, state: 'running', max: 10, journal: 'cleanup', graceMs: 0 });
    const done = await pollUntil('the job to finish', async () => {
      const j = await assign.purgeStatus('sync-1.5');
      return j.state === 'running' ? undefined : j;
    }, 30_000);
    expect(done).toMatchObject({ state: 'done', purged: 45, skipped: 5, batches: 5 });
    const status = await run('status', 'sync-1.5');
    expect(status.out).toContain('purge job 1 of sync-1.5: done');
    expect(status.out).toContain('5 batches: 45 purged, 5 on downed nodes left');
    expect((await journals.show('cleanup')).counts.waiting).toBe(45);
    expect((await run('stop', 'sync-1.5', '--json')).out).toContain('"stopped":false');
    // A journal dropped under a running job: it fails, saying why, instead of purging without clean-ups.
    await journals.create('gone');
    await journals.drop('gone');
    expect((await run('start', 'sync-1.5', '--journal', 'gone')).code).not.toBe(0);
    await assign.updateNode('sync-1.5', 'https://a', { backoff: 0 });
    await rekeyed(assign, 'k', 30);
    await journals.create('brief');
    // One record a batch: 30 batches, so the drop lands while it runs.
    await assign.purgeStart('sync-1.5', { graceMs: 0, max: 1, journal: 'brief' });
    await journals.drop('brief');
    const failed = await pollUntil('the job to fail', async () => {
      const j = await assign.purgeStatus('sync-1.5');
      return j.state === 'failed' ? j : undefined;
    }, 30_000);
    expect(failed.error).toContain('journal brief');
    expect(failed.purged).toBeLessThan(30);
    expect((await run('start', 'sync-1.5', '--dry-run')).code).toBe(2);
    expect((await run('stop', 'sync-1.5', '--max', '3')).code).toBe(2);
  }, 60_000);
});

