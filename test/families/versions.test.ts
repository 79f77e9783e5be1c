// Rolling upgrades: members advertise the command version they apply in the
// peer handshake (bound into its proof), the leader raises the cluster's active
// version only once every voter has it, and refuses commands above it naming
// the members behind. The rules are pure functions and a family; each is
// tested here on its own, the handshake with the real handshake classes.
import { Packr } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { cluster } from '../../src/families/cluster/index.js';
import { versionProblem, versionToActivate } from '../../src/families/cluster/versions.js';
import { DialerHandshake, ListenerHandshake, PeerAuthError, type HandshakeOptions } from '../../src/raft/transport/auth.js';
import type { AnyFamily } from '../../src/statemachine/family.js';
import { plugin as clusterPlugin } from '../../src/families/cluster/server.js';
import { pluginPart } from '../../src/server/front/plugin-part.js';
import { COMMAND_VERSION, FAMILIES, REGISTRY } from '../../src/families/registry.js';
import { VeraError } from '../../src/protocol/index.js';
import type { FrontEnd } from '../../src/server/front/context.js';
import { encodeCommand, requiredVersion, versionOf } from '../../src/families/commands.js';
import { StateMachine } from '../../src/statemachine/state-machine.js';
import { dumpDb, EntryFeed, openTempDb, type TempDb } from '../statemachine/helpers.js';

const packr = new Packr({ useRecords: false, variableMapSize: true });

/** The gate the cluster family's instance on `fe` runs before every proposal. */
function assertCommandVersion(fe: FrontEnd, what: string, required: number): void {
  const part = pluginPart(cluster, clusterPlugin);
  part.bind(fe);
  part.versionGate!(what, required);
}

describe('which version the cluster may run', () => {
  const peers = new Map([
    ['n2', 3],
    ['n3', 2],
  ]);

  it('is the lowest any voter applies, once every voter has been heard from', () => {
    expect(versionToActivate(['n1', 'n2', 'n3'], 'n1', 3, peers)).toBe(2);
    expect(versionToActivate(['n1', 'n2'], 'n1', 3, peers)).toBe(3);
    expect(versionToActivate(['n1', 'n2', 'n4'], 'n1', 3, peers)).toBeNull();
  });

  it('refuses a command above the active version, naming the members behind', () => {
    expect(versionProblem('journal.add', 2, 2, ['n1', 'n2', 'n3'], 'n1', 3, peers)).toBeNull();
    const problem = versionProblem('journal.add', 3, 2, ['n1', 'n2', 'n3', 'n4'], 'n1', 3, peers);
    expect(problem).toBe('journal.add needs command version 3, and the cluster runs version 2: members behind: n3 (version 2), n4 (not heard from); upgrade them first');
    expect(versionProblem('journal.add', 3, 2, ['n1', 'n2'], 'n1', 3, peers)).toMatch(/raised within a second/);
  });

  it('counts a field added to an op after it: an entry carrying it needs the field\u2019s version', () => {
    const base = FAMILIES.find((f) => f.name === 'lists')!;
    const withTtl = { ...base, ops: { ...base.ops, push: { ...base.ops.push!, fieldsSince: { ttl: 2 } } } } as AnyFamily;
    const push = { op: 'push', session: 's', path: '/a', data: 1, persistent: false, watch: true };
    expect(versionOf(withTtl, push)).toBe(1);
    const withField = { ...push, ttl: 5 } as object & { op: string };
    expect(versionOf(withTtl, withField)).toBe(2);
  });

  it('knows what each command needs', () => {
    expect(requiredVersion({ op: 'push', session: 's', path: '/a', data: 1, persistent: false, watch: true })).toBe(1);
    expect(requiredVersion({ family: 'cluster', op: 'setCommandVersion', version: 2 })).toBe(1);
    expect(requiredVersion({ family: 'journal', op: 'claim', name: 'jobs', max: 1 })).toBe(2);
    expect(() => requiredVersion({ family: 'frobs', op: 'add' })).toThrow(/unknown command frobs.add/);
  });
});

describe('the proposal gate', () => {
  it('passes commands the cluster runs and refuses newer ones with UNAVAILABLE, naming the members behind, learners included', () => {
    const fe = {
      node: {
        status: () => ({ id: 'n1', config: { voters: ['n1', 'n2'], learners: ['n3'] } }),
        stateMachine: { stateOf: () => ({ active: COMMAND_VERSION }) },
      },
      peerCommandVersions: new Map([['n2', COMMAND_VERSION + 1]]),
    } as unknown as FrontEnd;
    expect(() => assertCommandVersion(fe, 'lists.push', COMMAND_VERSION)).not.toThrow();
    let refused: unknown = null;
    try {
      assertCommandVersion(fe, 'journal.add', COMMAND_VERSION + 1);
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(VeraError);
    expect((refused as VeraError).code).toBe('UNAVAILABLE');
    expect((refused as VeraError).message).toMatch(new RegExp(`members behind: n1 \\(version ${COMMAND_VERSION}\\), n3 \\(not heard from\\)`));
  });
});

describe('the active version', () => {
  const temps: TempDb[] = [];
  afterEach(async () => {
    for (const t of temps.splice(0)) await t.cleanup();
  });

  it('is raised by setCommandVersion, never lowered, the same on every member and after a restart', async () => {
    const [a, b] = [await openTempDb(), await openTempDb()];
    temps.push(a, b);
    const [smA, smB] = [await StateMachine.open(a.db, REGISTRY), await StateMachine.open(b.db, REGISTRY)];
    const feed = new EntryFeed();
    const set = (version: number) => feed.raw(encodeCommand({ family: 'cluster', op: 'setCommandVersion', version }, 0));
    const seen: number[] = [];
    for (const entry of [set(3), set(2), set(3), set(4)]) {
      await smA.apply(entry);
      await smB.apply(entry);
      seen.push(smA.stateOf(cluster).active);
    }
    expect(seen).toEqual([3, 3, 3, 4]);
    expect(smB.stateOf(cluster).active).toBe(4);
    expect(await dumpDb(b.db)).toEqual(await dumpDb(a.db));
    expect(await smB.digest()).toBe(await smA.digest());
    const reopened = await StateMachine.open(await a.reopen(), REGISTRY);
    expect(reopened.stateOf(cluster).active).toBe(4);
  });
});

describe('the handshake', () => {
  const CLUSTER = 'vera-test-cluster';
  const SECRET = 'correct horse battery staple';
  const options = (selfId: string, commandVersion: number, noted: Map<string, number>): HandshakeOptions => ({
    secret: SECRET,
    clusterId: CLUSTER,
    selfId,
    commandVersion,
    notePeerCommandVersion: (peer, version) => noted.set(peer, version),
  });

  it('tells each side the command version the other applies, once it has proven the secret', () => {
    const [byDialer, byListener] = [new Map<string, number>(), new Map<string, number>()];
    const d = new DialerHandshake(options('n1', 2, byDialer), 'n2');
    const l = new ListenerHandshake(options('n2', 5, byListener), (id) => id === 'n1');
    const challenge = l.receive(d.hello());
    expect(byDialer.size).toBe(0);
    const proof = d.receive(challenge)!;
    expect(byListener.size).toBe(0);
    expect(d.receive(l.receive(proof))).toBeNull();
    expect(byDialer.get('n2')).toBe(5);
    expect(byListener.get('n1')).toBe(2);
  });

  it('binds the advertised version into the proof: a version changed on the way is refused', () => {
    const noted = new Map<string, number>();
    const d = new DialerHandshake(options('n1', 2, new Map()), 'n2');
    const l = new ListenerHandshake(options('n2', 5, noted), (id) => id === 'n1');
    const hello = packr.unpack(d.hello()) as Record<string, unknown>;
    const challenge = l.receive(packr.pack({ ...hello, cv: 9 }));
    const proof = d.receive(challenge)!;
    expect(() => l.receive(proof)).toThrow(PeerAuthError);
    expect(noted.size).toBe(0);
  });
});
