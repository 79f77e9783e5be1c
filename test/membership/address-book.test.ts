// The replicated address book (0x0001 'members') as the state machine keeps it,
// and the store identity (incarnation, cluster id, peers' incarnations) in 0x0000.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeConfigChange, type MemberChange } from '../../src/raft/config.js';
import { openDataDir, readPeerIncarnations, rememberClusterId, writePeerIncarnations } from '../../src/raft/datadir.js';
import type { ClusterConfig, Entry } from '../../src/raft/types.js';
import { bookOf, configOf, encodeMembers, initialMembers, MEMBERS_KEY, type Member } from '../../src/statemachine/index.js';
import { StateMachine } from '../../src/statemachine/state-machine.js';
import { openTempDb, type TempDb } from '../statemachine/helpers.js';
import { peersFlagDisagreements } from '../../src/server/admin/membership.js';
import { REGISTRY } from '../../src/families/registry.js';

const SEED = [
  { id: 'n1', host: '127.0.0.1', peerPort: 2919, clientPort: 1919 },
  { id: 'n2', host: '127.0.0.1', peerPort: 2920, clientPort: 1920 },
];
const N3 = { host: '127.0.0.1', peerPort: 2921, clientPort: 1921 };

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function machine(seed: readonly Member[]): Promise<{ tmp: TempDb; sm: StateMachine }> {
  const tmp = await openTempDb();
  cleanups.push(() => tmp.cleanup());
  if (seed.length > 0) await tmp.db.put(MEMBERS_KEY, encodeMembers(seed));
  return { tmp, sm: await StateMachine.open(tmp.db, REGISTRY) };
}

function configEntry(index: number, change: MemberChange): Entry {
  return { index, term: 1, kind: 'config', data: encodeConfigChange(change) };
}

/** The changes a leader would propose, each with the base and book it had applied. */
function proposals(sm: StateMachine, ...changes: MemberChange[]): MemberChange[] {
  return changes.map((c) => ({ ...c, base: configOf(sm.members()), book: bookOf(sm.members()) }));
}

describe('the address book', () => {
  it('follows applied config entries, in the same batch as the applied index, and survives a restart', async () => {
    const { tmp, sm } = await machine(initialMembers(SEED));
    expect(configOf(sm.members())).toEqual({ voters: ['n1', 'n2'], learners: [] });
    const [add] = proposals(sm, { type: 'addLearner', node: 'n3', address: N3 });
    await sm.apply(configEntry(1, add!));
    expect(sm.members().find((m) => m.id === 'n3')).toEqual({ id: 'n3', voter: false, address: N3 });
    const [promote] = proposals(sm, { type: 'promote', node: 'n3' });
    await sm.apply(configEntry(2, promote!));
    const [remove] = proposals(sm, { type: 'remove', node: 'n1' });
    await sm.apply(configEntry(3, remove!));
    const expected = [
      { id: 'n2', voter: true, address: { host: '127.0.0.1', peerPort: 2920, clientPort: 1920 } },
      { id: 'n3', voter: true, address: N3 },
    ];
    expect(sm.members()).toEqual(expected);
    const reopened = await StateMachine.open(await tmp.reopen(), REGISTRY);
    expect(reopened.members()).toEqual(expected);
    expect(reopened.appliedIndex).toBe(3);
  });

  it('a change the configuration refuses changes nothing (as in the core), and garbage is ignored', async () => {
    const { sm } = await machine(initialMembers(SEED));
    const before = sm.members();
    await sm.apply(configEntry(1, { type: 'addLearner', node: 'n1', address: N3 })); // already a member
    await sm.apply(configEntry(2, { type: 'promote', node: 'n9' })); // not a learner
    await sm.apply({ index: 3, term: 1, kind: 'config', data: new Uint8Array([0xff]) });
    expect(sm.members()).toBe(before);
    expect(sm.appliedIndex).toBe(3);
  });

  it('a member that joined with an empty store replays the log into byte-identical state', async () => {
    const leader = await machine(initialMembers(SEED));
    const joiner = await machine([]);
    expect(joiner.sm.members()).toEqual([]);
    const steps: MemberChange[] = [
      { type: 'addLearner', node: 'n3', address: N3 },
      { type: 'promote', node: 'n3' },
      { type: 'remove', node: 'n2' },
      { type: 'addLearner', node: 'n4', address: { host: 'vera-4.internal', peerPort: 2919, clientPort: 1919 } },
    ];
    let index = 0;
    for (const step of steps) {
      const [entry] = proposals(leader.sm, step).map((c) => configEntry(++index, c));
      await leader.sm.apply(entry!);
      await joiner.sm.apply(entry!);
      expect(joiner.sm.members()).toEqual(leader.sm.members());
    }
    expect(await joiner.tmp.db.get(MEMBERS_KEY)).toEqual(await leader.tmp.db.get(MEMBERS_KEY));
    const final: ClusterConfig = configOf(joiner.sm.members());
    expect(final).toEqual({ voters: ['n1', 'n3'], learners: ['n4'] });
  });

  it('a reload (installed snapshot) picks the book up from the db', async () => {
    const { tmp, sm } = await machine([]);
    await tmp.db.put(MEMBERS_KEY, encodeMembers(initialMembers(SEED)));
    await sm.reload();
    expect(sm.members().map((m) => m.id)).toEqual(['n1', 'n2']);
  });
});

describe('store identity in 0x0000', () => {
  async function tempDir(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'vera-identity-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    return dir;
  }
  const config: ClusterConfig = { voters: ['n1'], learners: [] };

  it('draws an incarnation at creation, keeps it across restarts, and a recreated directory gets a new one', async () => {
    const dir = await tempDir();
    const first = await openDataDir(join(dir, 'a'), { initialConfig: config, nodeId: 'n1', clusterId: 'c1' });
    const incarnation = first.identity.incarnation;
    expect(incarnation).toMatch(/^[0-9a-f]{32}$/);
    expect(first.identity.clusterId).toBe('c1');
    await first.close();
    const again = await openDataDir(join(dir, 'a'), { initialConfig: config, nodeId: 'n1', clusterId: 'ignored' });
    expect(again.identity).toEqual({ incarnation, clusterId: 'c1' });
    await again.close();
    await rm(join(dir, 'a'), { recursive: true });
    const wiped = await openDataDir(join(dir, 'a'), { initialConfig: config, nodeId: 'n1', clusterId: 'c1' });
    expect(wiped.identity.incarnation).not.toBe(incarnation);
    await wiped.close();
  });

  it('a joining store has no cluster id until it learns one, and then keeps it', async () => {
    const dir = await tempDir();
    const joining = await openDataDir(dir, { initialConfig: { voters: [], learners: [] }, nodeId: 'n4', clusterId: null });
    expect(joining.identity.clusterId).toBeNull();
    await rememberClusterId(joining.db, 'c1');
    await expect(rememberClusterId(joining.db, 'c2')).rejects.toThrow(/already belongs to cluster c1/);
    await joining.close();
    // A restart with a cluster id derived from other flags does not replace the learned one.
    const reopened = await openDataDir(dir, { initialConfig: config, nodeId: 'n4', clusterId: 'from-flags' });
    expect(reopened.identity.clusterId).toBe('c1');
    await reopened.close();
  });

  it('stores the incarnations first seen for other members', async () => {
    const dir = await tempDir();
    const opened = await openDataDir(dir, { initialConfig: config, nodeId: 'n1', clusterId: 'c1' });
    expect(await readPeerIncarnations(opened.db)).toEqual(new Map());
    await writePeerIncarnations(opened.db, new Map([['n3', 'i3'], ['n2', 'i2']]));
    expect([...(await readPeerIncarnations(opened.db))]).toEqual([['n2', 'i2'], ['n3', 'i3']]);
    await opened.close();
  });

  it('writes the initial state (the seeded book) in the batch that creates the store', async () => {
    const dir = await tempDir();
    const book = encodeMembers(initialMembers(SEED));
    const opened = await openDataDir(dir, { initialConfig: config, nodeId: 'n1', clusterId: 'c1', initialState: [{ key: MEMBERS_KEY, value: book }] });
    expect(await opened.db.get(MEMBERS_KEY)).toEqual(book);
    await opened.close();
  });
});

describe('peersFlagDisagreements', () => {
  const contacts = SEED.map((s) => ({ ...s }));
  const book = initialMembers(SEED);

  it('finds nothing when --peers matches the book, or when there is no book with this member yet', () => {
    expect(peersFlagDisagreements('n1', contacts, book)).toEqual([]);
    expect(peersFlagDisagreements('n1', contacts, [])).toEqual([]);
    expect(peersFlagDisagreements('n9', [{ id: 'n9', host: 'h', peerPort: 1, clientPort: 2 }], book)).toEqual([]);
  });

  it('names each member with another address, each listed one that is no member, and each member left out', () => {
    const moved = [contacts[0]!, { ...contacts[1]!, peerPort: 3920 }, { id: 'n7', host: '127.0.0.1', peerPort: 2927, clientPort: 1927 }];
    expect(peersFlagDisagreements('n1', moved, book)).toEqual([
      '--peers gives n2 as 127.0.0.1:3920/1920, the address book as 127.0.0.1:2920/1920',
      '--peers lists n7, which is not a member (the address book has n1, n2)',
    ]);
    expect(peersFlagDisagreements('n1', [contacts[0]!], book)).toEqual(['member n2 is missing from --peers']);
  });
});
