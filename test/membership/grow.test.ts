// Growing a cluster from one member to three with the CLI, as docs/operations.md
// tells an operator to: add a learner, start it with --join, promote it once it
// has caught up. n2 learns the cluster by replaying n1's log from its start, n3
// (after n1 compacted its log) from a snapshot. Then the grown cluster survives
// losing its first member, and members restart from what their stores hold (not
// from their start flags).
import { afterAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../support/poll.js';
import { Members } from './support.js';

let m: Members;
afterAll(async () => {
  await m?.cleanup();
});

describe('growing a cluster from 1 to 3', () => {
  it('adds learners that join with empty stores, promotes them once caught up, and keeps working without n1', async () => {
    m = await Members.plan(['n1', 'n2', 'n3']);
    const all = ['n1', 'n2', 'n3'];
    // Compacting early makes the second joiner catch up by snapshot.
    await m.start('n1', { args: ['--snapshot-entries', '20', '--snapshot-keep', '2'] });
    await m.waitForLog('n1', (l) => l.event === 'role-changed' && l.role === 'leader');
    await m.push(['n1'], '/grow', 'one');

    // n2: added as a learner before it runs; it cannot be promoted until it has caught up.
    const n2 = m.spec('n2');
    const add = await m.cli(['member', 'add', 'n2', '--peer', `127.0.0.1:${n2.peerPort}`, '--client', `127.0.0.1:${n2.clientPort}`, '--server', m.url('n1')]);
    expect(add.err).toBe('');
    expect(add.code).toBe(0);
    expect(add.out).toMatch(/added n2 as a learner/);
    expect(add.out).toMatch(/n2\s+learner\s+peer=127\.0\.0\.1:\d+/);
    const early = await m.cli(['member', 'promote', 'n2', '--server', m.url('n1')]);
    expect(early.code).toBe(1);
    expect(early.err).toMatch(/CONFLICT: n2 has not caught up/);

    await m.start('n2', { peers: m.peersFlag(['n1', 'n2']), args: ['--join'] });
    await m.waitForLog('n2', (l) => l.event === 'peer.clusterLearned' && l.from === 'n1');
    await m.caughtUp('n1', 'n2');
    await m.holds('n2', '/grow', ['one']);
    // Asked through the follower-to-be n2, the CLI follows NOT_LEADER to n1.
    const promote = await m.cli(['member', 'promote', 'n2', '--server', m.url('n2')]);
    expect(promote.err).toBe('');
    expect(promote.out).toMatch(/promoted n2 to voter/);

    // n3 the same way, this time through the HTTP API directly, once n1 has compacted its log.
    const filler = Array.from({ length: 30 }, (_, i) => `f${i}`);
    await m.pushAll(['n1', 'n2'], '/fill', filler);
    await m.waitForLog('n1', (l) => l.event === 'snapshot-compacted');
    const n3 = m.spec('n3');
    const added = await m.admin('n1', 'POST', '/v1/members', { action: 'add', id: 'n3', peer: `127.0.0.1:${n3.peerPort}`, client: `127.0.0.1:${n3.clientPort}` });
    expect(added.status).toBe(200);
    await m.start('n3', { peers: m.peersFlag(all), args: ['--join'] });
    await m.waitForLog('n3', (l) => l.event === 'snapshot-installed');
    await m.caughtUp('n1', 'n3');
    await m.holds('n3', '/fill', filler);
    expect((await m.admin('n1', 'POST', '/v1/members', { action: 'promote', id: 'n3' })).status).toBe(200);

    const list = await m.cli(['member', 'list', '--server', m.url('n3'), '--json']);
    const listed = JSON.parse(list.out) as { role: string; members: Array<{ id: string; role: string }> };
    expect(listed.role).toBe('leader'); // asked n3, answered by the leader
    expect(listed.members.map((x) => [x.id, x.role])).toEqual([['n1', 'voter'], ['n2', 'voter'], ['n3', 'voter']]);
    // Every member knows every other's client URL (from the replicated address book).
    const expected = JSON.stringify(all.map((id) => [id, true, m.url(id)]));
    for (const id of all) {
      await pollUntil(`${id} to list every member as a voter with its URL`, async () => {
        const st = await m.status(id);
        return JSON.stringify(st.members.map((x) => [x.id, x.voter, x.clientUrl])) === expected ? st : undefined;
      });
    }

    await m.push(all, '/grow', 'two');
    for (const id of all) await m.holds(id, '/grow', ['one', 'two']);

    // The first member dies: the two that joined elect a leader between them.
    await m.kill('n1');
    const next = await m.leader(['n2', 'n3']);
    expect(['n2', 'n3']).toContain(next);
    await m.push(['n2', 'n3'], '/grow', 'three');

    // n1 restarts with its original command line (no --peers): its store knows the cluster.
    await m.restart('n1');
    await m.holds('n1', '/grow', ['one', 'two', 'three']);
    expect((await m.status('n1')).leader).toBe(next);
    // So does a member that joined: restarted with its --join command line, it simply rejoins.
    const joined = next === 'n2' ? 'n3' : 'n2';
    await m.kill(joined);
    await m.push(['n1', next], '/grow', 'four');
    await m.restart(joined);
    await m.holds(joined, '/grow', ['one', 'two', 'three', 'four']);
    expect(m.proc(joined).logs.some((l) => l.event === 'peer.clusterLearned')).toBe(false);
  });
});
