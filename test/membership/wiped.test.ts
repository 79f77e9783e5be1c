// A member restarted with a wiped data directory (same id, same flags) has lost
// its log and its votes. The others refuse it by its new store incarnation, so it
// can neither vote nor count toward a quorum, until an operator removes it and
// adds it again with a fresh store started with --join.
import { afterAll, describe, expect, it } from 'vitest';
import type { LogLine } from '../support/vera-process.js';
import { pollUntil } from '../support/poll.js';
import { Members } from './support.js';

let m: Members;
afterAll(async () => {
  await m?.cleanup();
});

const MESSAGE = 'member n3 came back with a new data directory; remove it and add it again';
const mismatch = (l: LogLine): boolean => l.event === 'peer.incarnationMismatch' && l.err === MESSAGE;

describe('a member restarted with a wiped data directory', () => {
  it('is refused by the others (no vote, no quorum) until it is removed and added again', async () => {
    const all = ['n1', 'n2', 'n3'];
    m = await Members.plan(all);
    const peers = m.peersFlag(all);
    await Promise.all(all.map((id) => m.start(id, { peers })));
    let leader = await m.leader(all);
    if (leader === 'n3') {
      expect((await m.cli(['leader', 'transfer', 'n1', '--server', m.url('n3')])).code).toBe(0);
      leader = await m.leader(all);
    }
    await m.push(all, '/w', 'before');
    await m.holds('n3', '/w', ['before']);
    // n1 and n2 have each met n3 in both directions, so they know its incarnation.
    for (const id of ['n1', 'n2']) {
      await m.waitForLog(id, (l) => l.event === 'peer.connected' && l.peer === 'n3');
      await m.waitForLog(id, (l) => l.event === 'peer.accepted' && l.peer === 'n3');
    }
    const before = await m.status(leader);

    await m.wipe('n3');
    await m.restart('n3'); // the very same command line, over an empty directory
    for (const id of ['n1', 'n2']) await m.waitForLog(id, mismatch);
    await m.waitForLog('n3', (l) => l.event === 'peer.refused' && String(l.reason).includes(MESSAGE));
    await m.waitForLog('n3', (l) => l.event === 'role-changed' && l.role === 'preCandidate');
    // It campaigned, but nobody heard it: the cluster's term and leader are what they were.
    const after = await m.status(leader);
    expect([after.term, after.leader]).toEqual([before.term, before.leader]);
    expect(await m.status('n3')).toMatchObject({ term: 0, leader: null, applied: 0 });
    await m.push(all, '/w', 'during');
    await m.holds('n2', '/w', ['before', 'during']);

    // With the other healthy member down, the wiped one must not make a majority.
    const other = leader === 'n1' ? 'n2' : 'n1';
    await m.kill(other);
    await expect(m.push([leader], '/w', 'lost', 3000)).rejects.toThrow();
    expect(await m.localItems('n3', '/w')).toEqual([]);
    await m.restart(other);
    // What it learned first about n3 survived its restart.
    await m.waitForLog(other, mismatch);
    leader = await m.leader(['n1', 'n2']);

    // The way back: remove it, start it with a fresh store and --join, add it, promote it.
    const remove = await m.cli(['member', 'remove', 'n3', '--server', m.url(leader)]);
    expect(remove.err).toBe('');
    await m.wipe('n3');
    await m.start('n3', { peers, args: ['--join'] });
    const n3 = m.spec('n3');
    const add = await m.cli(['member', 'add', 'n3', '--peer', `127.0.0.1:${n3.peerPort}`, '--client', `127.0.0.1:${n3.clientPort}`, '--server', m.url(leader)]);
    expect(add.err).toBe('');
    await m.caughtUp(leader, 'n3');
    expect((await m.cli(['member', 'promote', 'n3', '--server', m.url(leader)])).code).toBe(0);
    const items = await m.holds('n3', '/w', (await m.localItems(leader, '/w')) as unknown[]);
    expect(items.slice(0, 2)).toEqual(['before', 'during']);
    await pollUntil('n3 to see the leader', async () => ((await m.status('n3')).leader === leader ? true : undefined));
    await m.push(all, '/w', 'after');
    await m.holds('n3', '/w', [...items, 'after']);
  });
});
