// A leader killed -9 closes its sockets and its peer port refuses connections at
// once: the followers take that as the end of the leader (RaftNode.leaderUnreachable)
// and elect a new one without waiting out an election timeout. Here on real
// processes with direct peer links (no proxy in between, unlike test/cluster).

import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_RAFT_TIMING } from '../../src/server/node/vera-node.js';
import { killAll } from '../support/vera-process.js';
import { Cluster } from './cluster.js';

let cluster: Cluster | null = null;

afterAll(async () => {
  await killAll();
  cluster?.removeData();
});

describe('a crashed leader', () => {
  it('is noticed by the followers through its refused port, and they elect a new leader', async () => {
    cluster = await Cluster.start(3);
    const leader = await cluster.leader();
    const followers = cluster.members.filter((m) => m !== leader);
    const killedAt = Date.now();
    await leader.process.kill9();
    for (const f of followers) {
      const line = await f.process.waitForLog((l) => l.event === 'leader-unreachable', 10_000);
      expect(line.peer).toBe(leader.id);
    }
    const next = await cluster.leader({ not: leader.id });
    expect(followers).toContain(next);
    // The winner gave up on the dead leader before it campaigned.
    const since = next.process.logs.filter((l) => typeof l.time === 'number' && l.time >= killedAt);
    const gaveUp = since.findIndex((l) => l.event === 'leader-unreachable');
    const campaigned = since.findIndex((l) => l.event === 'role-changed' && l.role === 'preCandidate');
    expect(gaveUp).toBeGreaterThanOrEqual(0);
    expect(campaigned).toBeGreaterThan(gaveUp);
    // Not a speed target but which path ran: waiting out the timeout, a follower campaigns no sooner
    // than the shortest election timeout after the last heartbeat it got, i.e. at least
    // (electionTicks - heartbeatTicks) ticks after the kill.
    const { tickMs, electionTicks, heartbeatTicks } = DEFAULT_RAFT_TIMING;
    expect(Number(since[campaigned]!.time) - killedAt).toBeLessThan((electionTicks - heartbeatTicks) * tickMs);
  });
});
