// etcd: three `etcd` processes (the etcd-server Debian package) on loopback
// ports with --initial-cluster and their default durability (the WAL is
// fsynced before a write is acknowledged), driven through the etcd3 client.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Etcd3, type Lease } from 'etcd3';
import { spawnManaged } from '../lib/procs.js';
import { fetchJson, freePorts, LOOPBACK, pollUntil, StopPolling } from '../lib/net.js';
import { ProcessCluster, type ClusterMember } from './common.js';
import type { BenchClient, Cluster, ConnectOptions, ReadMode, WatchHandle, WatchedChange } from './system.js';

interface Member extends ClusterMember {
  readonly peerPort: number;
  readonly dataDir: string;
}

interface EtcdStatus {
  readonly header?: { readonly member_id?: string; readonly raft_term?: string };
  readonly version?: string;
  readonly leader?: string;
  readonly raftTerm?: string;
}

export class EtcdCluster extends ProcessCluster<Member> implements Cluster {
  readonly name = 'etcd' as const;
  readonly settings: Record<string, unknown> = {
    members: 3,
    durability: 'default: WAL fsync before acknowledging (no --unsafe-no-fsync)',
    heartbeatMs: 100,
    electionTimeoutMs: 1000,
    append: 'put of a new key under the list prefix',
    staleRead: 'serializable range request',
  };

  constructor(private readonly logDir: string) {
    super('etcd-bench-');
  }

  async start(): Promise<void> {
    this.version = parseEtcdVersion(execFileSync('etcd', ['--version'], { encoding: 'utf8' }));
    const ports = await freePorts(6);
    this.members_ = [0, 1, 2].map((i) => ({
      id: `e${i + 1}`,
      clientPort: ports[i * 2]!,
      peerPort: ports[i * 2 + 1]!,
      dataDir: join(this.root, `e${i + 1}`),
      process: null,
    }));
    await Promise.all(this.members_.map((m) => this.launch(m)));
    await this.waitHealthy(30_000);
  }

  protected override async launch(member: Member): Promise<void> {
    const cluster = this.members_.map((m) => `${m.id}=http://${LOOPBACK}:${m.peerPort}`).join(',');
    const args = [
      '--name', member.id,
      '--data-dir', member.dataDir,
      '--listen-client-urls', `http://${LOOPBACK}:${member.clientPort}`,
      '--advertise-client-urls', `http://${LOOPBACK}:${member.clientPort}`,
      '--listen-peer-urls', `http://${LOOPBACK}:${member.peerPort}`,
      '--initial-advertise-peer-urls', `http://${LOOPBACK}:${member.peerPort}`,
      '--initial-cluster', cluster,
      '--initial-cluster-token', `bench-${process.pid}`,
      '--initial-cluster-state', 'new',
      '--logger', 'zap',
    ];
    const proc = spawnManaged(`etcd ${member.id}`, 'etcd', args, { logFile: join(this.logDir, `etcd-${member.id}.log`) });
    member.process = proc;
    await pollUntil(`etcd ${member.id} to answer`, 30_000, async () => {
      if (!proc.isAlive()) throw new StopPolling(`etcd ${member.id} exited: ${proc.tail(5)}`);
      await this.status(member);
      return true;
    });
  }

  private async status(member: Member): Promise<EtcdStatus> {
    const status = (await fetchJson(`http://${LOOPBACK}:${member.clientPort}/v3/maintenance/status`, { method: 'POST', body: {}, timeoutMs: 1_000 })) as EtcdStatus;
    if (typeof status.version === 'string') this.version = status.version;
    return status;
  }

  async leader(timeoutMs = 20_000): Promise<string> {
    return pollUntil('an etcd leader', timeoutMs, async () => {
      for (const m of this.alive()) {
        try {
          const s = await this.status(m);
          if (s.leader !== undefined && s.leader !== '0' && s.leader === s.header?.member_id) return m.id;
        } catch {
          // That member is not answering; ask the next.
        }
      }
      return undefined;
    });
  }

  async electionCounter(): Promise<number> {
    let term = 0;
    for (const m of this.alive()) {
      try {
        term = Math.max(term, Number((await this.status(m)).raftTerm ?? 0));
      } catch {
        // Not answering: skip.
      }
    }
    return term;
  }

  async waitHealthy(timeoutMs: number): Promise<void> {
    await pollUntil('every etcd member to serve under one leader', timeoutMs, async () => {
      const statuses = await Promise.all(this.members_.map((m) => this.status(m)));
      const leader = statuses[0]?.leader;
      return leader !== undefined && leader !== '0' && statuses.every((s) => s.leader === leader) ? true : undefined;
    });
  }

  async connect(options: ConnectOptions = {}): Promise<BenchClient> {
    return connectEtcd(this.clientPorts(options));
  }
}

export async function connectEtcd(ports: readonly number[]): Promise<BenchClient> {
  const client = new Etcd3({ hosts: ports.map((p) => `http://${LOOPBACK}:${p}`) });
  try {
    // One round trip so a client that cannot reach the cluster fails here, as the others do.
    await client.get('/bench/__connect').exec();
  } catch (error) {
    client.close();
    throw error;
  }
  return new EtcdBenchClient(client);
}

let nextClientId = 1;

class EtcdBenchClient implements BenchClient {
  private readonly id = nextClientId++;
  private counter = 0;
  private readonly leases: Lease[] = [];

  constructor(private readonly client: Etcd3) {}

  async put(key: string, value: string): Promise<void> {
    await this.client.put(`/bench/${key}`).value(value).exec();
  }

  async append(list: string, value: string): Promise<void> {
    await this.client.put(`/bench/${list}/${this.id}-${this.counter++}`).value(value).exec();
  }

  async prepareReadable(key: string, value: string): Promise<void> {
    await this.client.put(`/bench/${key}`).value(value).exec();
  }

  async read(key: string, mode: ReadMode): Promise<void> {
    await this.client.get(`/bench/${key}`).serializable(mode === 'stale').exec();
  }

  async watch(list: string, onChange: (change: WatchedChange) => void): Promise<WatchHandle> {
    const watcher = await this.client.watch().prefix(`/bench/${list}/`).create();
    watcher.on('put', (kv) => onChange({ kind: 'append', value: kv.value.toString('utf8'), at: performance.now() }));
    watcher.on('delete', () => onChange({ kind: 'delete', value: null, at: performance.now() }));
    watcher.on('error', () => undefined);
    return { oneShot: false, armed: () => Promise.resolve() };
  }

  async appendEphemeral(list: string, value: string, ttlMs: number): Promise<void> {
    const lease = this.client.lease(Math.max(1, Math.round(ttlMs / 1000)));
    lease.on('lost', () => undefined);
    this.leases.push(lease);
    await lease.put(`/bench/${list}/${this.id}-${this.counter++}`).value(value).exec();
  }

  grantedSessionTimeoutMs(): number | null {
    return null;
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.leases.map((l) => l.revoke()));
    this.client.close();
  }

  abandon(): void {
    for (const lease of this.leases) lease.release();
    this.client.close();
  }
}

function parseEtcdVersion(text: string): string {
  const match = /etcd Version:\s*(\S+)/.exec(text);
  return match?.[1] ?? text.trim().split('\n')[0] ?? 'unknown';
}
