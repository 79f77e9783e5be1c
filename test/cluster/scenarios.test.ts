// The fault-injection scenarios of issue 4, short versions for CI: real `vera`
// processes, a fault proxy on every peer link, recorded client load, and the five
// checkers (checkers.ts) after every scenario. The checkers themselves are
// exercised first on small hand-written evidence, so a broken checker cannot let
// a scenario pass silently. Long randomized runs: `npm run test:chaos`.

import { afterAll, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../src/client/index.js';
import {
  checkConvergence,
  checkLinearizable,
  checkNoLostWrites,
  checkSessionExpiry,
  checkWatchStreams,
  type NodeSnapshot,
  type WatcherEvidence,
} from './checkers.js';
import { describeTrial, runTrial, type TrialPlan, type TrialResult } from './chaos.js';
import { pollUntil } from '../support/poll.js';
import { ChaosCluster, ELECTION_TIMEOUT_MAX_MS } from './harness.js';
import { HistoryRecorder, type HistoryItem } from './history.js';
import type { ObservedEvent } from './workload.js';
import { killAll } from '../support/vera-process.js';

afterAll(async () => {
  await killAll();
});

// ------------------------------------------------------------------ the checkers on hand-written evidence

/** A recorder on a fake clock: each begin/complete takes one tick, so the order written is the real-time order. */
function recorder(): HistoryRecorder {
  let now = 0;
  return new HistoryRecorder({ now: () => ++now });
}

const item = (index: number, data: string, owner: string | null = null): HistoryItem & { owner: string | null } => ({ index, data, owner });
const node = (name: string, applied: number, lists: Record<string, HistoryItem[]>, sessions = 0): NodeSnapshot => ({
  node: name,
  applied,
  sessions,
  lists: new Map(Object.entries(lists).map(([path, items]) => [path, { index: applied, items: items.map((i) => ({ ...i, owner: i.owner ?? null })) }])),
});

describe('checkers on hand-written evidence', () => {
  it('no acknowledged write lost: flags a missing acked push, a phantom item and a surviving acked delete', () => {
    const r = recorder();
    r.begin('c1', 'push', '/a', { data: 'x' }).ok(item(5, 'x'));
    r.begin('c1', 'push', '/a', { data: 'y' }).ok(item(6, 'y'));
    r.begin('c2', 'delete', '/a', { index: 6 }).unknown(); // y may be gone: not required
    r.begin('c2', 'push', '/a', { data: 'z' }).ok(item(7, 'z'));
    r.begin('c2', 'delete', '/a', { index: 7 }).ok(null);
    const history = r.history();
    const good = checkNoLostWrites(history, [node('n1', 9, { '/a': [item(5, 'x')] }), node('n2', 9, { '/a': [item(5, 'x'), item(6, 'y')] })]);
    expect(good.problems).toEqual([]);
    expect(good.checked).toBe(2);
    const bad = checkNoLostWrites(history, [node('n1', 9, { '/a': [item(6, 'y'), item(7, 'z'), item(8, 'ghost')] })]);
    expect(bad.problems).toEqual([
      'n1: acknowledged push #0 (#5 "x", by c1) is missing from /a',
      'n1: /a still holds #7, whose delete was acknowledged',
      'n1: /a holds #8 "ghost", which no push of the history wrote',
    ]);
  });

  it('convergence: flags different applied indexes and different items', () => {
    const same = checkConvergence([node('n1', 9, { '/a': [item(5, 'x')] }), node('n2', 9, { '/a': [item(5, 'x')] })], ['/a']);
    expect(same.problems).toEqual([]);
    const differ = checkConvergence([node('n1', 9, { '/a': [item(5, 'x')] }), node('n2', 8, { '/a': [] })], ['/a']);
    expect(differ.problems).toEqual(['n2 applied 8, n1 applied 9', '/a: n2 answered as of 8, n1 as of 9', '/a: n2 holds [], n1 holds [#5 "x"]']);
  });

  describe('watch streams', () => {
    const r = recorder();
    r.begin('c1', 'push', '/a', { data: 'x' }).ok(item(5, 'x'));
    r.begin('c1', 'push', '/a', { data: 'y' }).ok(item(6, 'y'));
    r.begin('c1', 'delete', '/a', { index: 5 }).ok(null);
    const history = r.history();
    const final = new Map([['/a', { index: 9, items: [item(6, 'y')] }]]);
    let seq = 0;
    const ev = (connection: number, index: number, type: 'push' | 'delete', it: HistoryItem): ObservedEvent => ({ seq: seq++, connection, index, type, path: '/a', item: it });
    const watcher = (name: string, events: ObservedEvent[], start = 4): WatcherEvidence => ({
      name,
      starts: new Map([['/a', { path: '/a', index: start, items: [] }]]),
      events,
      resyncs: [],
      ended: null,
    });
    const complete = [ev(1, 5, 'push', item(5, 'x')), ev(1, 6, 'push', item(6, 'y')), ev(1, 7, 'delete', item(5, 'x'))];

    it('passes a complete stream, and a resend on a later connection', () => {
      expect(checkWatchStreams([watcher('w1', complete)], history, final).problems).toEqual([]);
      const resent = [ev(1, 5, 'push', item(5, 'x')), ev(2, 5, 'push', item(5, 'x')), ev(2, 6, 'push', item(6, 'y')), ev(2, 7, 'delete', item(5, 'x'))];
      expect(checkWatchStreams([watcher('w1', resent)], history, final).problems).toEqual([]);
    });

    it('flags a gap, a duplicate on one connection, a step back and a fabricated item', () => {
      const gap = checkWatchStreams([watcher('w1', [ev(1, 5, 'push', item(5, 'x')), ev(1, 7, 'delete', item(5, 'x'))])], history, final).problems;
      expect(gap).toContain('watcher w1 on /a: replaying its events gives [], but the list ended as [#6 "y"]');
      expect(gap).toContain('watcher w1 on /a: no push event for acknowledged push #1 (#6 "y")');
      const dup = checkWatchStreams([watcher('w1', [...complete.slice(0, 2), ev(1, 6, 'push', item(6, 'y')), complete[2]!])], history, final).problems;
      expect(dup).toContain('watcher w1 on /a: push of #6 (entry 6) arrived twice on connection 1');
      const back = checkWatchStreams([watcher('w1', [complete[1]!, complete[0]!, complete[2]!])], history, final).problems;
      expect(back).toContain('watcher w1 on /a: entry 5 arrived after entry 6 on connection 1');
      const ghost = checkWatchStreams([watcher('w1', [...complete, ev(1, 8, 'push', item(8, 'ghost')), ev(1, 9, 'delete', item(8, 'ghost'))])], history, final).problems;
      expect(ghost).toContain('watcher w1: push event #8 "ghost" on /a matches no push of the history');
    });

    it('flags two watchers that saw different changes', () => {
      // w2 never saw the push of x nor its delete: its view still ends right, but the sequences differ.
      const w2 = watcher('w2', [ev(1, 6, 'push', item(6, 'y'))]);
      const problems = checkWatchStreams([watcher('w1', complete), w2], history, final).problems;
      expect(problems).toContain('/a: watchers w1 and w2 saw different changes after entry 4: change 0 is push#5@5 vs push#6@6');
    });

    it('judges a prefix watcher\'s lists across a resync, a list the walk leaves out counting as empty (issue 34)', () => {
      const prefixWatcher = (lists: Array<{ path: string; index: number; items: HistoryItem[] }>): WatcherEvidence => ({
        ...watcher('p', [ev(1, 5, 'push', item(5, 'x')), ev(1, 6, 'push', item(6, 'y'))]),
        resyncs: [{ seq: seq++, connection: 2, lists: lists.map((l) => ({ ...l, items: l.items.map((i) => ({ ...i, owner: null })) })) }],
        prefix: '/',
      });
      // Away while x was deleted; the resync after a restart carries /a as it is.
      expect(checkWatchStreams([prefixWatcher([{ path: '/a', index: 8, items: [item(6, 'y')] }, { path: '/b', index: 8, items: [] }])], history, final).problems).toEqual([]);
      // A walk that left /a out (a list of a frozen unit the resync did not read) says it was empty: the view ends wrong.
      expect(checkWatchStreams([prefixWatcher([{ path: '/b', index: 8, items: [item(1, 'b')] }])], history, final).problems).toContain('watcher p on /a: replaying its events gives [], but the list ended as [#6 "y"]');
    });
  });

  it('session expiry: flags items gone too late, never gone, or left on a node', () => {
    const base = { session: 's1', path: '/e', items: [item(3, 'e', 's1')], timeoutMs: 2000, killedAt: 10_000, lastElectionAt: 0 };
    const bound = 2000 + ELECTION_TIMEOUT_MAX_MS + 500;
    const clean = [node('n1', 9, { '/e': [] })];
    expect(checkSessionExpiry([{ ...base, goneAt: 10_000 + bound }], clean, 500).problems).toEqual([]);
    expect(checkSessionExpiry([{ ...base, goneAt: 10_000 + bound + 1 }], clean, 500).problems).toHaveLength(1);
    // An election after the kill restarts the clock: the same delay is then fine.
    expect(checkSessionExpiry([{ ...base, goneAt: 10_000 + bound + 1, lastElectionAt: 11_000 }], clean, 500).problems).toEqual([]);
    expect(checkSessionExpiry([{ ...base, goneAt: null }], clean, 500).problems).toHaveLength(1);
    expect(checkSessionExpiry([{ ...base, goneAt: 11_000 }], [node('n2', 9, { '/e': [item(3, 'e', 's1')] })], 500).problems).toEqual([
      'n2: /e still holds [#3 "e" (owner s1)] of expired session s1',
    ]);
  });

  it('linearizability: flags a read that misses an acknowledged push', () => {
    const r = recorder();
    r.begin('c1', 'push', '/a', { data: 'x' }).ok(item(5, 'x'));
    r.begin('c2', 'get', '/a', {}).ok([]);
    expect(checkLinearizable(r.history()).problems).toHaveLength(1);
    const fine = recorder();
    fine.begin('c1', 'push', '/a', { data: 'x' }).ok(item(5, 'x'));
    fine.begin('c2', 'get', '/a', {}).ok([item(5, 'x')]);
    expect(checkLinearizable(fine.history()).problems).toEqual([]);
  });
});

// ------------------------------------------------------------------ the scenarios

/** Runs a scenario trial and fails with its whole report (and where its evidence went) unless every check passed. */
async function scenario(plan: Omit<TrialPlan, 'seed'> & { seed?: number }): Promise<TrialResult> {
  const result = await runTrial({ seed: plan.seed ?? hashName(plan.name), ...plan });
  console.info(`${describeTrial(result)}\n  faults: ${result.faults.map((f) => f.what).join('; ')}\n  ${result.notes.join('\n  ')}`);
  expect(result.error, describeTrial(result)).toBeNull();
  expect(result.reports.filter((r) => r.problems.length > 0).map((r) => `${r.name}: ${r.problems.join('; ')}`)).toEqual([]);
  expect(result.reports).toHaveLength(5 + (plan.journal === false ? 0 : 1) + (plan.assign === false ? 0 : 1));
  return result;
}

function hashName(name: string): number {
  let h = 2166136261;
  for (const ch of name) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
  return h % 2 ** 31;
}

/**
 * A push through `client` (pinned to one member; it still follows a NOT_LEADER to
 * the leader named). Resolves with the URL of the member that acknowledged it, or the error code.
 */
async function pushVia(client: VeraClient, path: string, data: string): Promise<{ ackedBy: string | null; error: string | null }> {
  try {
    await client.push(path, data, { persistent: true, watch: false });
    return { ackedBy: client.serverUrl, error: null };
  } catch (error) {
    return { ackedBy: null, error: String((error as { code?: unknown }).code ?? error) };
  }
}

/** Waits until member `i` no longer says it leads (CheckQuorum: within an election timeout of losing its majority). */
async function stepsDown(cluster: ChaosCluster, i: number): Promise<void> {
  await pollUntil(`${cluster.member(i).id} to step down`, async () => ((await cluster.status(i)).role !== 'leader' ? true : undefined), ELECTION_TIMEOUT_MAX_MS + 3000);
}

const SCENARIO_TIMEOUT_MS = 120_000;

describe('fault scenarios on a real cluster (short versions)', () => {
  it('kill -9 of the leader under load: a new leader takes over, nothing acknowledged is lost', { timeout: SCENARIO_TIMEOUT_MS }, async () => {
    await scenario({
      name: 'kill-leader',
      size: 3,
      faults: async (t) => {
        const c = t.cluster;
        const leader = await c.waitForLeader();
        await c.kill9(leader);
        const next = await c.waitForLeader({ not: leader });
        expect(next).not.toBe(leader);
        await t.progress(20); // clients moved on to the new leader
        await c.restart(leader);
        await t.progress(10);
      },
    });
  });

  it('the leader partitioned from the majority stops acknowledging; clients move on', { timeout: SCENARIO_TIMEOUT_MS }, async () => {
    let pinnedResult: { ackedBy: string | null; error: string | null } | null = null;
    let oldUrl = '';
    await scenario({
      name: 'partition-leader',
      size: 3,
      faults: async (t) => {
        const c = t.cluster;
        const leader = await c.waitForLeader();
        oldUrl = c.member(leader).url;
        const pinned = await connect([oldUrl], { requestTimeoutMs: 4000, maxRedirects: 0, timeoutMs: 10_000 });
        try {
          c.isolate(leader);
          // Sent while the old leader still believes it leads: it must not acknowledge it on its own.
          const attempt = pushVia(pinned, '/chaos/pinned', 'during-partition');
          const rest = c.members.map((m) => m.index).filter((i) => i !== leader);
          const next = await c.waitForLeader({ among: rest });
          expect(next).not.toBe(leader);
          await stepsDown(c, leader);
          await t.progress(20);
          pinnedResult = await attempt;
          t.note(`push sent to the isolated old leader: ${JSON.stringify(pinnedResult)}`);
        } finally {
          await pinned.close().catch(() => undefined);
        }
        c.heal();
      },
    });
    expect(pinnedResult).not.toBeNull();
    expect(pinnedResult!.ackedBy).not.toBe(oldUrl);
  });

  it('a minority partition: the majority side keeps serving, the minority catches up after healing', { timeout: SCENARIO_TIMEOUT_MS }, async () => {
    await scenario({
      name: 'minority-partition',
      size: 5,
      clients: 5,
      faults: async (t) => {
        const c = t.cluster;
        const leader = await c.waitForLeader();
        // Two followers on their own; the leader keeps its majority of three.
        const followers = c.members.map((m) => m.index).filter((i) => i !== leader);
        const minority = followers.slice(0, 2);
        c.partition([minority, c.members.map((m) => m.index).filter((i) => !minority.includes(i))]);
        await t.progress(40);
        expect(await c.waitForLeader({ among: c.members.map((m) => m.index).filter((i) => !minority.includes(i)) })).toBe(leader);
        for (const i of minority) expect((await c.status(i)).role).not.toBe('leader');
        c.heal();
      },
    });
  });

  it('a paused leader wakes after a new one was elected and steps down', { timeout: SCENARIO_TIMEOUT_MS }, async () => {
    await scenario({
      name: 'paused-leader',
      size: 3,
      faults: async (t) => {
        const c = t.cluster;
        const leader = await c.waitForLeader();
        c.pause(leader);
        const next = await c.waitForLeader({ among: c.live });
        expect(next).not.toBe(leader);
        await t.progress(20);
        c.resume(leader);
        await stepsDown(c, leader);
        await t.progress(10);
        const st = await c.status(leader);
        expect(st.leader).not.toBe(c.member(leader).id);
      },
    });
  });

  it('flapping links keep dropping and restoring connections under load', { timeout: SCENARIO_TIMEOUT_MS }, async () => {
    await scenario({
      name: 'flapping-links',
      size: 3,
      faults: async (t) => {
        const c = t.cluster;
        const leader = await c.waitForLeader();
        const [a, b] = c.members.map((m) => m.index).filter((i) => i !== leader) as [number, number];
        c.delay(leader, b, 20);
        await Promise.all([c.flap(leader, a, 300, 5000), c.flap(a, b, 450, 5000), t.progress(10, 30_000)]);
        c.cut(leader, b);
        c.oneWay(b, leader);
        await t.progress(10);
        c.heal();
      },
    });
  });

  it('a rolling restart of every member keeps the cluster serving', { timeout: SCENARIO_TIMEOUT_MS }, async () => {
    await scenario({
      name: 'rolling-restart',
      size: 3,
      faults: async (t) => {
        const c = t.cluster;
        for (const m of c.members) {
          expect(await c.stop(m.index)).toBe(0); // a clean SIGTERM shutdown
          await t.progress(10);
          await c.restart(m.index);
          await c.waitForLeader();
          await t.progress(10);
        }
      },
    });
  });

  it('a wiped data directory is refused until it is removed and added back', { timeout: SCENARIO_TIMEOUT_MS }, async () => {
    await scenario({
      name: 'wiped-member',
      size: 3,
      faults: async (t) => {
        const c = t.cluster;
        const leader = await c.waitForLeader();
        const wiped = leader; // the hardest case: the member that held the most recent log
        const id = c.member(wiped).id;
        await c.wipe(wiped);
        const rest = c.members.map((m) => m.index).filter((i) => i !== wiped);
        await c.waitForLeader({ among: rest });
        // Both others refuse the new incarnation; the wiped member never learns a leader nor any data.
        for (const i of rest) await c.process(i).waitForLog((l) => l.event === 'peer.incarnationMismatch' && JSON.stringify(l).includes(`member ${id} came back`), 20_000);
        await t.progress(20);
        const st = await c.status(wiped);
        expect({ applied: st.applied, leader: st.leader }).toEqual({ applied: 0, leader: null });
        for (const i of rest) expect((await c.status(i)).leader).not.toBe(id);
        await c.rejoin(wiped);
        await t.progress(10);
      },
    });
  });
});
