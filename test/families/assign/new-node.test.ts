// A new node and the `available` ramp (Tokenserver's add_node.py --available and the
// release rate): without a ramp a new, empty node takes every new user until it is
// as loaded as the others; with one it takes that many, then shares.
import { afterEach, describe, expect, it } from 'vitest';
import { AssignHarness } from './harness.js';

let h: AssignHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

async function newUsers(n: number, prefix: string): Promise<Record<string, number>> {
  const where: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const node = (await h!.login(`${prefix}${i}@x`)).user.node;
    where[node] = (where[node] ?? 0) + 1;
  }
  return where;
}

describe('a new node', () => {
  it('takes every new user until it is as loaded as the others', async () => {
    h = await AssignHarness.open();
    await h.service();
    await h.addNode('https://old', 1000);
    await newUsers(100, 'old');
    await h.addNode('https://new', 1000);
    // The next 100 all go to the new node, until its load is the old one's; then they alternate
    // (equal ratios go by URL, and https://new sorts first).
    expect(await newUsers(100, 'a')).toEqual({ 'https://new': 100 });
    expect(await newUsers(2, 'b')).toEqual({ 'https://new': 1, 'https://old': 1 });
    await h.checkInvariants();
  });

  it('with available N takes N, then the others take theirs, then capacity is released on each at the release rate', async () => {
    h = await AssignHarness.open();
    await h.service({ releaseRate: 0.01 });
    await h.addNode('https://old', 1000, { available: 1000 });
    await newUsers(100, 'old');
    await h.addNode('https://new', 1000, { available: 10 });
    // Ten to the new node (it ranks first while it has slots), then the old one takes the rest.
    expect(await newUsers(30, 'a')).toEqual({ 'https://new': 10, 'https://old': 20 });
    expect(h.node('https://new')).toMatchObject({ load: 10, available: 0 });
    // Once no node has a slot, each gets ceil(1000 x 0.01) = 10 more.
    await h.ok({ op: 'updateNode', service: 'sync-1.5', node: 'https://old', available: 0 });
    expect(await newUsers(1, 'c')).toEqual({ 'https://new': 1 });
    expect(h.node('https://new')).toMatchObject({ load: 11, available: 9 });
    expect(h.node('https://old')).toMatchObject({ available: 10 });
    await h.checkInvariants();
  });
});
