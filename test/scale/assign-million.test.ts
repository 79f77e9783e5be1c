// Node assignment at 10^6 users on a real state machine over a real LevelDB:
// a million get-or-create entries spread over ten nodes, a lookup among them,
// a node of 100,000 users decommissioned in bounded entries, its users moved on
// their next request, their old records purged in bounded batches, users
// counted, and the state reloaded as a restarted member would. What a unit test
// at a few users cannot show: a one-shot batch or a scan per entry would show
// here as time or memory (figures printed; the bounds asserted are on work per
// entry and on the counters, not on time).
import { afterAll, describe, expect, it } from 'vitest';
import type { AssignValue } from '../../src/families/assign/apply.js';
import { assign } from '../../src/families/assign/index.js';
import { byNodeRange } from '../../src/families/assign/keys.js';
import { countUsers, replacedBefore, userRecords } from '../../src/families/assign/reads.js';
import { StateMachine } from '../../src/statemachine/state-machine.js';
import { AssignHarness, SERVICE } from '../families/assign/harness.js';
import { lap } from './lap.js';
import { REGISTRY } from '../../src/families/registry.js';

// VERA_SCALE_ITEMS runs it at another size (a multiple of 10,000).
const USERS = Number(process.env.VERA_SCALE_ITEMS ?? 1_000_000);
const NODES = Array.from({ length: 10 }, (_, k) => `https://sync-${k}.example.com`);
const MOVED = Math.min(1000, USERS / 10);
const email = (i: number): string => `user-${i}@example.com`;

let h: AssignHarness | null = null;
afterAll(async () => {
  await h?.close();
});

describe('10^6 assigned users', () => {
  it('allocates, decommissions, moves, purges, counts and reloads in bounded entries', { timeout: 600_000 }, async () => {
    h = await AssignHarness.open();
    const harness = h;
    const t0 = performance.now();
    await harness.service();
    for (const n of NODES) await harness.addNode(n, USERS);
    for (let i = 0; i < USERS; i++) {
      await harness.login(email(i), { generation: 1, keysChangedAt: 1, clientState: 'aa' });
      if (i % 1000 === 999) harness.now += 1;
    }
    let t = lap(`${USERS} users created`, t0);
    // Equal capacities: least loaded first keeps the nodes within one user of each other.
    const loads = NODES.map((n) => harness.node(n)!.load);
    expect(loads.reduce((a, b) => a + b, 0)).toBe(USERS);
    expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(1);
    const found = await harness.sm.readNow('lookup', (db, snapshot) => userRecords(db, snapshot, email(USERS / 2), SERVICE));
    expect(found).toMatchObject([{ email: email(USERS / 2), replacedAt: 0 }]);

    // Decommission the first node: at most 1000 records per entry.
    const gone = NODES[0]!;
    const onGone = harness.node(gone)!.load;
    harness.now += 1000;
    let entries = 0;
    let replaced = 0;
    for (;;) {
      const v = (await harness.ok({ op: 'decommission', service: SERVICE, node: gone, max: 1000 })) as Extract<AssignValue, { op: 'decommission' }>;
      entries++;
      expect(v.replaced).toBeLessThanOrEqual(1000);
      replaced += v.replaced;
      if (!v.more) break;
    }
    expect(replaced).toBe(onGone);
    expect(entries).toBeLessThanOrEqual(Math.ceil(onGone / 1000) + 1);
    expect(harness.node(gone)!.load).toBe(0);
    t = lap(`decommissioned ${onGone} users in ${entries} entries`, t);

    // Their next request moves them (to a node that is up: the decommissioned one is downed first).
    await harness.ok({ op: 'updateNode', service: SERVICE, node: gone, downed: true });
    const movedEmails: string[] = [];
    for (let i = 0; movedEmails.length < MOVED; i++) {
      const records = await harness.sm.readNow('lookup', (db, snapshot) => userRecords(db, snapshot, email(i), SERVICE));
      if (records[0]!.node !== gone) continue;
      const v = await harness.login(email(i), { generation: 1, keysChangedAt: 1, clientState: 'aa' });
      expect(v.user.node).not.toBe(gone);
      expect(v.allocated).toBe(true);
      movedEmails.push(email(i));
    }
    t = lap(`moved ${MOVED} users`, t);

    // Purge every replaced record, forced (the node is down), in batches of at most 1000.
    harness.now += 1000;
    let purged = 0;
    let batches = 0;
    for (;;) {
      const candidates = await harness.sm.read('purge', (db, snapshot) => replacedBefore(db, snapshot, SERVICE, harness.now, 1000));
      if (candidates.length === 0) break;
      const v = (await harness.ok({ op: 'purge', service: SERVICE, before: harness.now, uids: candidates.map((c) => c.uid), force: true })) as Extract<AssignValue, { op: 'purge' }>;
      expect(v.purged.length).toBe(candidates.length);
      purged += v.purged.length;
      batches++;
    }
    expect(purged).toBe(onGone);
    t = lap(`purged ${purged} records in ${batches} entries`, t);

    // Count: one pass over the records, without holding them.
    const users = await harness.sm.read('count', (db, snapshot) => countUsers(db, snapshot, SERVICE, harness.now));
    expect(users).toBe(USERS - onGone + MOVED);
    t = lap(`counted ${users} users`, t);

    // Each node's load equals its current records (the by-node index), counted key by key.
    for (const n of NODES) {
      let current = 0;
      for await (const _ of harness.temp.db.keys(byNodeRange(SERVICE, n))) current++;
      expect(harness.node(n)!.load, n).toBe(current);
    }
    // A restarted member loads the same services and nodes.
    const reloaded = await StateMachine.open(harness.temp.db, REGISTRY);
    const state = reloaded.stateOf(assign);
    for (const n of NODES) expect(state.services.get(SERVICE)!.nodes.get(n)).toEqual(harness.node(n));
    expect(state.nextUid).toBe(harness.sm.stateOf(assign).nextUid);
    lap('checked and reloaded', t);
  });
});
