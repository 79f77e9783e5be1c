// One VeraNode in-process (no transport): config entries reach the address book
// and the members hook, and a change about this member that its own
// configuration refuses stops it (its store is not the cluster's view of it).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_COMPACTION, MembershipDivergedError, VeraNode } from '../../src/server/node/vera-node.js';
import { initialMembers, type Member } from '../../src/statemachine/index.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function openNode(): Promise<{ node: VeraNode; books: Array<readonly Member[]>; fatal: Promise<unknown> }> {
  const dir = await mkdtemp(join(tmpdir(), 'vera-node-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const books: Array<readonly Member[]> = [];
  let onFatal!: (err: unknown) => void;
  const fatal = new Promise<unknown>((resolve) => (onFatal = resolve));
  let onLeader!: () => void;
  const leading = new Promise<void>((resolve) => (onLeader = resolve));
  const node = await VeraNode.open(
    {
      id: 'n1',
      dataDir: dir,
      initialMembers: initialMembers([{ id: 'n1', host: '127.0.0.1', peerPort: 2919, clientPort: 1919 }]),
      clusterId: 'c-test',
      timing: { tickMs: 10, electionTicks: 5, heartbeatTicks: 1 },
      logger: pino({ level: 'silent' }),
      eventLogCapacity: 100,
      compaction: DEFAULT_COMPACTION,
    },
    {
      onApplied: () => undefined,
      onSoftState: (s) => (s.role === 'leader' ? onLeader() : undefined),
      onMembersChanged: (members) => void books.push(members),
      onFatal,
    },
  );
  cleanups.push(() => node.close());
  node.start();
  await leading;
  return { node, books, fatal };
}

describe('VeraNode and membership', () => {
  it('records the seeded book, then reports each applied change to the book', async () => {
    const { node, books } = await openNode();
    expect(node.identity.clusterId).toBe('c-test');
    expect(node.members()).toEqual([{ id: 'n1', voter: true, address: { host: '127.0.0.1', peerPort: 2919, clientPort: 1919 } }]);
    const address = { host: '127.0.0.1', peerPort: 2920, clientPort: 1920 };
    await node.proposeConfigChange({ type: 'addLearner', node: 'n2', address });
    expect(books).toHaveLength(1);
    expect(books[0]).toEqual([...node.members()]);
    expect(node.members().find((m) => m.id === 'n2')).toEqual({ id: 'n2', voter: false, address });
    expect(node.status().config).toEqual({ voters: ['n1'], learners: ['n2'] });
  });

  it('stops when the cluster changes this member in a way its own configuration refuses', async () => {
    const { node, books, fatal } = await openNode();
    // Adding n1, which this store already counts as a voter: a leader would only do that if
    // this store's idea of the membership were not the cluster's.
    await node.proposeConfigChange({ type: 'addLearner', node: 'n1', address: { host: '127.0.0.1', peerPort: 2921, clientPort: 1921 } });
    const err = await fatal;
    expect(err).toBeInstanceOf(MembershipDivergedError);
    expect(String((err as Error).message)).toMatch(/start it with --join/);
    expect(books).toEqual([]);
  });
});
