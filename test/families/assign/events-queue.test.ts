// Account events applied once per event id: on the state machine (a repeat changes
// nothing; ids are forgotten after the retention, a few per entry), and on a real
// server through a journal (HTTP enqueue, the events worker, a worker that died
// between applying and finishing).
import { afterEach, describe, expect, it } from 'vitest';
import { bucketRange } from '../../../src/keys/index.js';
import { AssignBucket } from '../../../src/families/assign/keys.js';
import { EVENT_ID_RETENTION_MS } from '../../../src/families/assign/wire.js';
import { JournalClient } from '../../../src/families/journal/client.js';
import { AssignHarness } from './harness.js';
import { AssignState } from '../../../src/families/assign/state.js';
import { assign } from '../../../src/families/assign/index.js';
import { assignMember } from './assign-member.js';

const member = assignMember();
let h: AssignHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

async function metaKeys(): Promise<number> {
  let n = 0;
  for await (const _ of h!.temp.db.keys(bucketRange(AssignBucket.meta))) n++;
  return n;
}

describe('account events once per id', () => {
  it('a repeated id changes nothing; ids are dropped after the retention, a few per event entry', async () => {
    h = await AssignHarness.open();
    await h.service();
    await h.addNode('https://a', 10);
    await h.login('u@x', { generation: 5 });
    expect(await h.ok({ op: 'event', kind: 'passwordChange', email: 'u@x', generation: 11, eventId: 'e1' })).toEqual({ op: 'event', email: 'u@x', changed: 1 });
    // The user logs in on the new generation; the same event delivered again must not count as new.
    await h.login('u@x', { generation: 10 });
    const before = await h.users();
    expect(await h.ok({ op: 'event', kind: 'passwordChange', email: 'u@x', generation: 11, eventId: 'e1' })).toEqual({ op: 'event', email: 'u@x', changed: 0, duplicate: true });
    expect(await h.ok({ op: 'event', kind: 'delete', email: 'u@x', eventId: 'e1' })).toMatchObject({ duplicate: true });
    expect(await h.users()).toEqual(before);
    for (let i = 2; i <= 20; i++) {
      h.now += 1;
      await h.ok({ op: 'event', kind: 'reset', email: 'nobody@x', generation: i, eventId: `e${i}` });
    }
    expect(await metaKeys()).toBe(1 + 2 * 20);
    // The oldest id's time, kept in memory (so an event entry scans the ids only when some are due), is what a reload finds.
    const oldest = async (): Promise<number | null> => (await h!.sm.read('reload', (db, snapshot) => AssignState.load(db, snapshot))).oldestEventAt;
    expect(h.sm.stateOf(assign).oldestEventAt).toBe(h.now - 19);
    expect(await oldest()).toBe(h.now - 19);
    // Past the retention, each event entry drops up to 16 old ids.
    h.now += EVENT_ID_RETENTION_MS + 1;
    await h.ok({ op: 'event', kind: 'reset', email: 'nobody@x', generation: 2, eventId: 'late-1' });
    expect(await metaKeys()).toBe(1 + 2 * (20 - 16 + 1));
    expect(h.sm.stateOf(assign).oldestEventAt).toBe(await oldest());
    await h.ok({ op: 'event', kind: 'reset', email: 'nobody@x', generation: 2, eventId: 'late-2' });
    expect(await metaKeys()).toBe(1 + 2 * 2);
    expect(h.sm.stateOf(assign).oldestEventAt).toBe(h.now);
    expect(await oldest()).toBe(h.now);
    // e1 is forgotten: applied again (harmless: events never move a generation back).
    expect(await h.ok({ op: 'event', kind: 'passwordChange', email: 'u@x', generation: 11, eventId: 'e1' })).toEqual({ op: 'event', email: 'u@x', changed: 0 });
    await h.checkInvariants();
  });

  it('through a journal: HTTP enqueue, vera assign events-worker, and a worker that died after applying', async () => {
    const assign = await member.start();
    const journals = new JournalClient(member.client());
    await assign.service('sync-1.5');
    await assign.addNode('sync-1.5', 'https://a', { capacity: 10 });
    await assign.user('sync-1.5', 'p@example.com', { generation: 5 });
    await assign.user('sync-1.5', 'd@example.com', { generation: 5 });
    await journals.create('fxa-events');
    const enqueue = async (body: unknown): Promise<number> =>
      (await fetch(`${member.httpUrl()}/v1/assign/enqueueEvent`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })).status;
    expect(await enqueue({ journal: 'fxa-events', eventId: 'msg-1', kind: 'passwordChange', email: 'p@example.com', generation: 9 })).toBe(200);
    expect(await enqueue({ journal: 'fxa-events', eventId: 'msg-2', kind: 'delete', email: 'd@example.com' })).toBe(200);
    // Bad events never reach the queue.
    expect(await enqueue({ journal: 'fxa-events', eventId: 'msg-3', kind: 'reset', email: 'p@example.com' })).toBe(400);
    expect(await enqueue({ journal: 'fxa-events', kind: 'delete', email: 'p@example.com' })).toBe(400);
    // A worker claims msg-1, applies it, and dies before finishing: the item comes back.
    const claim = await journals.claim('fxa-events', { max: 1 });
    expect(claim.items[0]!.key).toBe('msg-1');
    expect(await assign.event('passwordChange', 'p@example.com', 9, 'msg-1')).toEqual({ changed: 1 });
    await journals.release('fxa-events', 'msg-1', claim.lease, undefined, { failure: false });
    const worker = await member.cli('events-worker', 'fxa-events', '--once');
    expect(worker.code).toBe(0);
    expect(worker.out).toContain('repeat msg-1');
    expect(worker.out).toContain('applied msg-2: delete d@example.com: 1 changed');
    expect(worker.out).toContain('applied 1, repeats 1, failed 0');
    expect((await journals.show('fxa-events')).counts).toMatchObject({ waiting: 0, processing: 0 });
    expect((await assign.lookup('sync-1.5', 'p@example.com')).current.generation).toBe(8);
    await expect(assign.user('sync-1.5', 'p@example.com', { generation: 7 })).rejects.toMatchObject({ hints: { reason: 'invalid-generation' } });
    await expect(assign.user('sync-1.5', 'd@example.com', { generation: 6 })).rejects.toMatchObject({ hints: { reason: 'invalid-generation' } });
    // The CLI: apply with an id (a repeat says so), or queue.
    const again = await member.cli('events', 'delete', 'd@example.com', '--event-id', 'msg-2');
    expect(again.out).toContain('was applied before; nothing changed');
    expect((await member.cli('events', 'reset', 'p@example.com', '--generation', '12', '--event-id', 'msg-4', '--queue', 'fxa-events')).code).toBe(0);
    expect((await journals.show('fxa-events')).counts.waiting).toBe(1);
    expect((await member.cli('events', 'reset', 'p@example.com', '--generation', '12', '--queue', 'fxa-events')).code).toBe(2);
  });
});
