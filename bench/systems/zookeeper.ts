// ZooKeeper: three QuorumPeerMain JVMs (the zookeeper Debian package), each
// with its own zoo.cfg and myid, loopback quorum/election ports, and the
// default durability (forceSync=yes: the transaction log is fsynced before a
// write is acknowledged). Driven through node-zookeeper-client.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import zookeeper from 'node-zookeeper-client';
import type { Client as ZkClient, Event as ZkEvent } from 'node-zookeeper-client';
import { spawnManaged } from '../lib/procs.js';
import { freePorts, LOOPBACK, pollUntil, StopPolling, tcpCommand } from '../lib/net.js';
import { ProcessCluster, withTimeout, type ClusterMember } from './common.js';
import type { BenchClient, Cluster, ConnectOptions, ReadMode, WatchHandle, WatchedChange } from './system.js';

const CLASSPATH = '/etc/zookeeper/conf:/usr/share/java/zookeeper.jar';
const MAIN_CLASS = 'org.apache.zookeeper.server.quorum.QuorumPeerMain';
const TICK_MS = 2000;

interface Member extends ClusterMember {
  readonly myid: number;
  readonly quorumPort: number;
  readonly electionPort: number;
  readonly dir: string;
}

interface Srvr {
  readonly mode: string;
  readonly zxid: bigint;
  readonly version: string;
}

export class ZooKeeperCluster extends ProcessCluster<Member> implements Cluster {
  readonly name = 'zookeeper' as const;
  readonly settings: Record<string, unknown> = {
    members: 3,
    durability: 'default: forceSync=yes (transaction log fsynced before acknowledging)',
    tickTime: TICK_MS,
    initLimit: 10,
    syncLimit: 5,
    minSessionTimeout: 2000,
    maxClientCnxns: 0,
    notes: 'minSessionTimeout lowered from 2*tickTime so S4 can ask for 2 s like the others; maxClientCnxns=0 because every client shares 127.0.0.1; admin server off (port clash); JVM defaults',
    append: 'create of a PERSISTENT_SEQUENTIAL child of the list znode',
    staleRead: 'getData (ZooKeeper reads are served locally)',
    linearizableRead: 'not measured: node-zookeeper-client has no sync()',
  };

  constructor(private readonly logDir: string) {
    super('zk-bench-');
  }

  async start(): Promise<void> {
    const ports = await freePorts(9);
    this.members_ = [0, 1, 2].map((i) => ({
      id: `z${i + 1}`,
      myid: i + 1,
      clientPort: ports[i * 3]!,
      quorumPort: ports[i * 3 + 1]!,
      electionPort: ports[i * 3 + 2]!,
      dir: join(this.root, `z${i + 1}`),
      process: null,
    }));
    for (const m of this.members_) this.writeConfig(m);
    // No member serves before a quorum runs, so all three are spawned before any is waited for.
    for (const m of this.members_) this.spawn(m);
    await this.waitHealthy(60_000);
  }

  private writeConfig(member: Member): void {
    const dataDir = join(member.dir, 'data');
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(join(dataDir, 'myid'), `${member.myid}\n`);
    const lines = [
      `tickTime=${TICK_MS}`,
      'initLimit=10',
      'syncLimit=5',
      `dataDir=${dataDir}`,
      `clientPort=${member.clientPort}`,
      `clientPortAddress=${LOOPBACK}`,
      'maxClientCnxns=0',
      'minSessionTimeout=2000',
      'admin.enableServer=false',
      '4lw.commands.whitelist=srvr,mntr',
      ...this.members_.map((m) => `server.${m.myid}=${LOOPBACK}:${m.quorumPort}:${m.electionPort}`),
    ];
    writeFileSync(join(member.dir, 'zoo.cfg'), lines.join('\n') + '\n');
  }

  private spawn(member: Member): void {
    const args = ['-cp', CLASSPATH, `-Dzookeeper.log.dir=${member.dir}`, '-Dzookeeper.root.logger=INFO,CONSOLE', MAIN_CLASS, join(member.dir, 'zoo.cfg')];
    member.process = spawnManaged(`zookeeper ${member.id}`, 'java', args, { logFile: join(this.logDir, `zookeeper-${member.id}.log`) });
  }

  private async srvr(member: Member): Promise<Srvr> {
    const text = await tcpCommand(member.clientPort, 'srvr', 1_000);
    const mode = /Mode:\s*(\S+)/.exec(text)?.[1];
    const zxid = /Zxid:\s*(0x[0-9a-f]+)/i.exec(text)?.[1];
    if (mode === undefined || zxid === undefined) throw new Error(`zookeeper ${member.id} is not serving: ${text.trim() || 'no answer'}`);
    const version = /Zookeeper version:\s*([^,\s-]+)/.exec(text)?.[1];
    if (version !== undefined) this.version = version;
    return { mode, zxid: BigInt(zxid), version: version ?? 'unknown' };
  }

  async leader(timeoutMs = 20_000): Promise<string> {
    return pollUntil('a ZooKeeper leader', timeoutMs, async () => {
      for (const m of this.alive()) {
        try {
          if ((await this.srvr(m)).mode === 'leader') return m.id;
        } catch {
          // Not serving yet: ask the next.
        }
      }
      return undefined;
    });
  }

  /** The epoch: the high 32 bits of the zxid, incremented by every elected leader. */
  async electionCounter(): Promise<number> {
    let epoch = 0;
    for (const m of this.alive()) {
      try {
        epoch = Math.max(epoch, Number((await this.srvr(m)).zxid >> 32n));
      } catch {
        // Not serving: skip.
      }
    }
    return epoch;
  }

  /** Used by restart(), when the other members already form a quorum the new one can join. */
  protected override async launch(member: Member): Promise<void> {
    this.spawn(member);
    const proc = member.process;
    await pollUntil(`zookeeper ${member.id} to serve again`, 60_000, async () => {
      if (proc?.isAlive() !== true) throw new StopPolling(`zookeeper ${member.id} exited: ${proc?.tail(5) ?? ''}`);
      return (await this.srvr(member)).mode !== '' ? true : undefined;
    }, 100);
  }

  async waitHealthy(timeoutMs: number): Promise<void> {
    await pollUntil('every ZooKeeper member to serve under one leader', timeoutMs, async () => {
      for (const m of this.members_) if (m.process?.isAlive() !== true) throw new StopPolling(`zookeeper ${m.id} exited: ${m.process?.tail(10) ?? ''}`);
      const modes = await Promise.all(this.members_.map(async (m) => (await this.srvr(m)).mode));
      return modes.filter((x) => x === 'leader').length === 1 && modes.filter((x) => x === 'follower').length === 2 ? true : undefined;
    }, 200);
  }

  async connect(options: ConnectOptions = {}): Promise<BenchClient> {
    return connectZooKeeper(this.clientPorts(options), options);
  }
}

export async function connectZooKeeper(ports: readonly number[], options: ConnectOptions = {}): Promise<BenchClient> {
  const client = zookeeper.createClient(ports.map((p) => `${LOOPBACK}:${p}`).join(','), {
    ...(options.sessionTimeoutMs === undefined ? {} : { sessionTimeout: options.sessionTimeoutMs }),
  });
  const connected = new Promise<void>((resolve) => client.once('connected', () => resolve()));
  client.connect();
  try {
    await withTimeout(connected, 20_000, 'connecting to ZooKeeper');
  } catch (error) {
    client.close();
    throw error;
  }
  return new ZooKeeperBenchClient(client);
}

class ZooKeeperBenchClient implements BenchClient {
  private readonly lists = new Map<string, Promise<void>>();

  constructor(private readonly client: ZkClient) {}

  /** Creates the list's znode (and its parents) once per client. */
  private ensure(path: string): Promise<void> {
    let made = this.lists.get(path);
    if (made === undefined) {
      made = new Promise<void>((resolve, reject) => this.client.mkdirp(path, (error) => (error ? reject(error) : resolve())));
      made.catch(() => this.lists.delete(path));
      this.lists.set(path, made);
    }
    return made;
  }

  private create(path: string, data: Buffer, mode: number): Promise<void> {
    return new Promise<void>((resolve, reject) => this.client.create(path, data, mode, (error) => (error ? reject(error) : resolve())));
  }

  async put(key: string, value: string): Promise<void> {
    const path = `/bench/${key}`;
    await this.ensure(path.slice(0, path.lastIndexOf('/')));
    await this.create(path, Buffer.from(value), zookeeper.CreateMode.PERSISTENT);
  }

  async append(list: string, value: string): Promise<void> {
    const parent = `/bench/${list}`;
    await this.ensure(parent);
    await this.create(`${parent}/i-`, Buffer.from(value), zookeeper.CreateMode.PERSISTENT_SEQUENTIAL);
  }

  async prepareReadable(key: string, value: string): Promise<void> {
    const path = `/bench/${key}`;
    await this.ensure(path);
    await new Promise<void>((resolve, reject) => this.client.setData(path, Buffer.from(value), (error) => (error ? reject(error) : resolve())));
  }

  async read(key: string, mode: ReadMode): Promise<void> {
    if (mode === 'linearizable') throw new Error('node-zookeeper-client has no sync(), so a linearizable read cannot be made');
    await new Promise<void>((resolve, reject) => this.client.getData(`/bench/${key}`, (error) => (error ? reject(error) : resolve())));
  }

  async watch(list: string, onChange: (change: WatchedChange) => void): Promise<WatchHandle> {
    const path = `/bench/${list}`;
    await this.ensure(path);
    let count = 0;
    let armed: Promise<void> = Promise.resolve();
    // ZooKeeper watches fire once: each notification re-registers the watch
    // with getChildren, whose answer also tells an append from a delete.
    const arm = (firedAt: number | null): Promise<void> =>
      new Promise<void>((resolve, reject) => {
        this.client.getChildren(path, (event: ZkEvent) => {
          if (event.getType() !== zookeeper.Event.NODE_CHILDREN_CHANGED) return;
          const at = performance.now();
          armed = arm(at);
          armed.catch(() => undefined);
        }, (error, children) => {
          if (error) return reject(error);
          const before = count;
          count = children.length;
          if (firedAt !== null) onChange({ kind: count < before ? 'delete' : 'append', value: null, at: firedAt });
          resolve();
        });
      });
    armed = arm(null);
    await armed;
    return { oneShot: true, armed: () => armed };
  }

  async appendEphemeral(list: string, value: string): Promise<void> {
    const parent = `/bench/${list}`;
    await this.ensure(parent);
    await this.create(`${parent}/e-`, Buffer.from(value), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL);
  }

  grantedSessionTimeoutMs(): number | null {
    return this.client.getSessionTimeout();
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.client.once('disconnected', () => resolve()));
    this.client.close();
    await withTimeout(closed, 5_000, 'closing a ZooKeeper session').catch(() => undefined);
  }

  abandon(): void {
    this.client.close();
  }
}
