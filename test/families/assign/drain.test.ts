// Draining a node from the CLI, paced at a rate, and a node's users page by page
// over the CLI and HTTP, on a real server.
import { describe, expect, it } from 'vitest';
import type { AssignClient, DrainClock } from '../../../src/families/assign/client.js';
import { assignMember } from './assign-member.js';

const member = assignMember();

async function start(): Promise<AssignClient> {
  const assign = await member.start();
  await assign.service('sync-1.5');
  await assign.addNode('sync-1.5', 'https://a', { capacity: 100 });
  await Promise.all(Array.from({ length: 30 }, (_, i) => assign.user('sync-1.5', `u${i}@example.com`)));
  await assign.addNode('sync-1.5', 'https://b', { capacity: 100 });
  return assign;
}

const run = (...argv: string[]): ReturnType<typeof member.cli> => member.cli(...argv);

describe('drain and node users', () => {
  it('vera assign node users pages through a node; GET /v1/assign/services/S/nodes/N/users does too', async () => {
    await start();
    const first = await run('node', 'users', 'sync-1.5', 'https://a', '--limit', '20', '--json');
    const page = JSON.parse(first.out) as { users: Array<{ uid: number; email: string }>; next: number };
    expect(page.users).toHaveLength(20);
    expect(page.next).toBe(page.users[19]!.uid);
    const second = await run('node', 'users', 'sync-1.5', 'https://a', '--after', String(page.next));
    expect(second.out.trim().split('\n')).toHaveLength(10);
    expect(second.out).not.toContain('more:');
    const res = await fetch(`${member.httpUrl()}/v1/assign/services/sync-1.5/nodes/${encodeURIComponent('https://a')}/users?limit=25&after=${page.users[4]!.uid}`);
    const body = (await res.json()) as { users: Array<{ uid: number }>; next: number | null };
    expect(body.users.map((u) => u.uid)).toEqual([...page.users.slice(5).map((u) => u.uid), ...body.users.slice(15).map((u) => u.uid)]);
    expect(body.users).toHaveLength(25);
    expect((await run('node', 'users', 'sync-1.5', 'https://a', '--limit', '0')).code).toBe(2);
    expect((await run('node', 'users', 'sync-1.5', 'https://nowhere')).code).not.toBe(0);
  });

  it('vera assign drain: closes the node, replaces its users a batch at a time no faster than --rate, with progress', async () => {
    const assign = await start();
    const started = Date.now();
    const r = await run('drain', 'sync-1.5', 'https://a', '--rate', '20', '--batch', '10');
    const elapsedMs = Date.now() - started;
    expect(r.code).toBe(0);
    expect(r.out).toContain('batch 1: 10 users replaced so far, 20 still on https://a');
    expect(r.out).toContain('batch 3: 30 users replaced so far, 0 still on https://a');
    expect(r.out).toContain('drained https://a: 30 users replaced');
    expect(r.out).not.toContain('batch 4');
    // 30 users at 20 a second: the third batch no sooner than a second after the start.
    expect(elapsedMs).toBeGreaterThanOrEqual(1000);
    expect(await assign.nodes('sync-1.5')).toMatchObject([{ node: 'https://a', load: 0, downed: false, backoff: 1 }, { node: 'https://b', load: 0 }]);
    expect((await assign.user('sync-1.5', 'u0@example.com')).node).toBe('https://b');
    expect((await run('drain', 'sync-1.5', 'https://a', '--batch', '5000')).code).toBe(2);
  });

  it('the client paces its drain: after each step the log is left free at least as long as the step took', async () => {
    const assign = await start();
    // The drain's clock is injected: the waits it asks for are compared with the step times it
    // measured, exactly (a real timer would truncate fractional ms and make wall-clock gaps flake).
    const events: string[] = [];
    const waits: number[] = [];
    const clock: DrainClock = {
      now: () => performance.now(),
      sleep: async (ms) => {
        waits.push(ms);
        events.push('sleep');
        await new Promise<void>((resolve) => setImmediate(resolve));
        events.push('woke');
      },
    };
    const steps: Array<{ stepMs: number; batch: number }> = [];
    const r = await assign.drain('sync-1.5', 'https://a', {
      ratePerSecond: 1_000_000,
      batch: 10,
      clock,
      onBatch: (p) => {
        steps.push({ stepMs: p.stepMs, batch: p.batch });
        events.push('step');
      },
    });
    expect(r).toMatchObject({ replaced: 30, done: true });
    // The third step empties the node (its load is 0), so it is the last: no fourth step to find none left.
    expect(steps.map((s) => s.batch)).toEqual([10, 10, 10]);
    // A wait after every step but the last, each over before the next step starts.
    expect(events).toEqual(['step', 'sleep', 'woke', 'step', 'sleep', 'woke', 'step']);
    for (let i = 0; i < waits.length; i++) {
      expect(steps[i]!.stepMs).toBeGreaterThan(0);
      expect(waits[i]).toBeGreaterThanOrEqual(steps[i]!.stepMs);
    }
  });
});
