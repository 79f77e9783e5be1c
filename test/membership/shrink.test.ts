// Leadership transfer and removals on a 3-member cluster started with --peers:
// hand leadership to a chosen member, remove the leader (it steps down and another
// leads), remove a follower, and the removed processes are no longer part of it.
import { afterAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../support/poll.js';
import { Members } from './support.js';

let m: Members;
afterAll(async () => {
  await m?.cleanup();
});

describe('transfer and removal', () => {
  it('transfers leadership, removes the leader and then a follower, and refuses to remove the last voter', async () => {
    const all = ['n1', 'n2', 'n3'];
    m = await Members.plan(all);
    await Promise.all(all.map((id) => m.start(id, { peers: m.peersFlag(all) })));
    const first = await m.leader(all);
    await m.push(all, '/shrink', 'a');

    // Transfer to a chosen follower, asking through the other follower (the CLI follows NOT_LEADER).
    const chosen = all.find((id) => id !== first)!;
    const via = all.find((id) => id !== first && id !== chosen)!;
    const transfer = await m.cli(['leader', 'transfer', chosen, '--server', m.url(via)]);
    expect(transfer.err).toBe('');
    expect(transfer.out).toBe(`${chosen} is the leader now (${m.url(chosen)})\n`);
    expect(await m.leader(all)).toBe(chosen);

    // Remove the leader: it steps down once the change applies, and one of the others leads.
    const removed = await m.admin(chosen, 'POST', '/v1/members', { action: 'remove', id: chosen });
    expect(removed.status).toBe(200);
    const rest = all.filter((id) => id !== chosen);
    const next = await m.leader(rest, { not: chosen });
    await m.waitForLog(chosen, (l) => l.event === 'member-removed-self');
    await pollUntil(`${chosen} to stop leading`, async () => ((await m.status(chosen)).role !== 'leader' ? true : undefined));
    for (const id of rest) await m.waitForLog(id, (l) => l.event === 'peer-removed' && l.peer === chosen);
    await m.push(rest, '/shrink', 'b');
    for (const id of rest) await m.holds(id, '/shrink', ['a', 'b']);
    // The removed process is no longer part of the cluster: the others refuse it, and it gets no new writes.
    await m.waitForLog(next, (l) => l.event === 'peer.authFailed' && String(l.err).includes(`${chosen} is not a known member`));
    expect(await m.localItems(chosen, '/shrink')).toEqual(['a']);

    // Remove the follower that is left: one voter carries on alone.
    const follower = rest.find((id) => id !== next)!;
    const gone = await m.cli(['member', 'remove', follower, '--server', m.url(follower)]);
    expect(gone.err).toBe('');
    expect(gone.out).toMatch(new RegExp(`removed ${follower} at index \\d+`));
    expect(await m.leader([next])).toBe(next);
    await m.push([next], '/shrink', 'c');
    await m.holds(next, '/shrink', ['a', 'b', 'c']);
    const list = JSON.parse((await m.cli(['member', 'list', '--server', m.url(next), '--json'])).out) as { members: Array<{ id: string }> };
    expect(list.members.map((x) => x.id)).toEqual([next]);

    const last = await m.cli(['member', 'remove', next, '--server', m.url(next)]);
    expect(last.code).toBe(1);
    expect(last.err).toMatch(/CONFLICT: .* is the last voter/);
  });
});
