// Vera: three `vera start` processes (bin/vera.js on dist/) with their default
// durability, driven through the project's own client library. With `tls`, the
// client ports serve TLS (a CA and a certificate made with openssl at start) and
// every client connects with wss:// trusting that CA.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { connect, type VeraClient, type ChangeEvent } from '../../src/client/index.js';
import { cliFetch } from '../../src/cli/tls-options.js';
import { spawnManaged } from '../lib/procs.js';
import { fetchJson, freePorts, LOOPBACK, pollUntil } from '../lib/net.js';
import { ProcessCluster, type ClusterMember } from './common.js';
import type { BenchClient, ClientRecipe, Cluster, ConnectOptions, ReadMode, WatchHandle, WatchedChange } from './system.js';

const VERA_BIN = resolve(import.meta.dirname, '../../bin/vera.js');
const PACKAGE_JSON = resolve(import.meta.dirname, '../../package.json');

interface Member extends ClusterMember {
  readonly peerPort: number;
  readonly dataDir: string;
  /** The inspector's WebSocket URL (for CPU profiles), read from stderr. */
  inspectorUrl: string | null;
}

interface VeraStatus {
  readonly id: string;
  readonly role: string;
  readonly term: number;
  readonly leader: string | null;
}

export interface VeraClusterOptions {
  /** Directory for server logs. */
  readonly logDir: string;
  /** Opens the V8 inspector on a random loopback port so a CPU profile can be taken later (no cost while unattached). */
  readonly inspector: boolean;
  /** TLS on the client ports (--client-cert/--client-key); clients verify against the CA. */
  readonly tls?: boolean;
}

interface ClientTlsFiles {
  readonly caPem: string;
  readonly cert: string;
  readonly key: string;
}

/** A CA and a certificate it signs for 127.0.0.1 (ECDSA P-256, as a production setup would use). */
function makeTlsFiles(dir: string): ClientTlsFiles {
  mkdirSync(dir, { recursive: true });
  const run = (args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=vera-bench-ca']);
  run(['req', '-new', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=vera-bench']);
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  run(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'ext.cnf', '-out', 'server.pem']);
  return { caPem: readFileSync(join(dir, 'ca.pem'), 'utf8'), cert: join(dir, 'server.pem'), key: join(dir, 'server.key') };
}

export class VeraCluster extends ProcessCluster<Member> implements Cluster {
  readonly name = 'vera' as const;
  readonly settings: Record<string, unknown> = {
    members: 3,
    durability: 'default: every acknowledged write is synced on a majority (one synced LevelDB batch per Ready)',
    push: 'persistent items, watch:false (the other systems do not watch on write either)',
    perAddressLimits: '--connections-per-address and --sessions-per-address raised to 100000, because every client shares 127.0.0.1 (as ZooKeeper runs with maxClientCnxns=0)',
  };
  private readonly secret = `bench-${process.pid}-${Date.now()}`;
  private tlsFiles: ClientTlsFiles | null = null;

  constructor(private readonly options: VeraClusterOptions) {
    super('vera-bench-');
    if (options.tls === true) this.settings.clientTls = 'TLS (TLSv1.2 or later, ECDSA P-256 certificate) on every client port; clients connect with wss:// and verify it';
  }

  /** http(s)://127.0.0.1:PORT, with the CA to trust when the client ports serve TLS. */
  private async httpJson(port: number, path: string, init: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {}): Promise<Response> {
    const scheme = this.tlsFiles === null ? 'http' : 'https';
    return cliFetch(
      `${scheme}://${LOOPBACK}:${port}${path}`,
      {
        ...(init.method === undefined ? {} : { method: init.method }),
        ...(init.headers === undefined ? {} : { headers: init.headers }),
        ...(init.body === undefined ? {} : { body: init.body }),
        signal: AbortSignal.timeout(init.timeoutMs ?? 2_000),
      },
      this.tlsFiles === null ? {} : { ca: this.tlsFiles.caPem },
    );
  }

  override recipe(): ClientRecipe {
    return { ...super.recipe(), ...(this.tlsFiles === null ? {} : { ca: this.tlsFiles.caPem }) };
  }

  /** Each member's data directory (its db and, with hibernation, its cold store). */
  dataDirs(): string[] {
    return this.members_.map((m) => m.dataDir);
  }

  async start(): Promise<void> {
    const { readFileSync } = await import('node:fs');
    this.version = String((JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version?: unknown }).version ?? 'unknown');
    if (this.options.tls === true) this.tlsFiles = makeTlsFiles(join(this.root, 'tls'));
    const ports = await freePorts(6);
    this.members_ = [0, 1, 2].map((i) => ({
      id: `n${i + 1}`,
      clientPort: ports[i * 2]!,
      peerPort: ports[i * 2 + 1]!,
      dataDir: join(this.root, `n${i + 1}`),
      process: null,
      inspectorUrl: null,
    }));
    await Promise.all(this.members_.map((m) => this.launch(m)));
    await this.waitHealthy(30_000);
  }

  private peersFlag(): string {
    return this.members_.map((m) => `${m.id}=${LOOPBACK}:${m.peerPort}/${m.clientPort}`).join(',');
  }

  protected override async launch(member: Member): Promise<void> {
    const nodeFlags = this.options.inspector ? [`--inspect=${LOOPBACK}:0`] : [];
    const args = [
      ...nodeFlags,
      VERA_BIN,
      'start',
      '--id', member.id,
      '--data', member.dataDir,
      '--client', `${LOOPBACK}:${member.clientPort}`,
      '--peer', `${LOOPBACK}:${member.peerPort}`,
      '--peers', this.peersFlag(),
      '--secret', this.secret,
      '--connections-per-address', '100000',
      '--sessions-per-address', '100000',
      ...(this.tlsFiles === null ? [] : ['--client-cert', this.tlsFiles.cert, '--client-key', this.tlsFiles.key]),
    ];
    const proc = spawnManaged(`vera ${member.id}`, process.execPath, args, { logFile: join(this.options.logDir, `vera-${member.id}.log`) });
    member.process = proc;
    if (this.options.inspector) {
      const line = await proc.waitForLine((l) => l.includes('Debugger listening on ws://'), 15_000);
      member.inspectorUrl = line.slice(line.indexOf('ws://')).trim();
    }
    await proc.waitForLine((l) => l.includes('"event":"started"'), 30_000);
  }

  /** Compacts every member's db (POST /v1/defrag), so on-disk sizes hold no deleted keys. */
  async defragAll(): Promise<void> {
    for (const m of this.members_) {
      const res = await this.httpJson(m.clientPort, '/v1/defrag', { method: 'POST', headers: { authorization: `Bearer ${this.secret}`, 'content-type': 'application/json' }, body: '{}', timeoutMs: 600_000 });
      if (res.status !== 200) throw new Error(`defrag of ${m.id} answered ${res.status}: ${await res.text()}`);
    }
  }

  inspectorUrl(member: string): string | null {
    return this.member(member).inspectorUrl;
  }

  private async status(member: Member): Promise<VeraStatus> {
    if (this.tlsFiles === null) return (await fetchJson(`http://${LOOPBACK}:${member.clientPort}/v1/status`, { timeoutMs: 1_000 })) as VeraStatus;
    const res = await this.httpJson(member.clientPort, '/v1/status', { timeoutMs: 1_000 });
    if (!res.ok) throw new Error(`/v1/status of ${member.id} answered HTTP ${res.status}`);
    return (await res.json()) as VeraStatus;
  }

  async leader(timeoutMs = 20_000): Promise<string> {
    return pollUntil('a Vera leader', timeoutMs, async () => {
      const statuses = await Promise.allSettled(this.alive().map((m) => this.status(m)));
      for (const s of statuses) if (s.status === 'fulfilled' && s.value.role === 'leader') return s.value.id;
      return undefined;
    });
  }

  async electionCounter(): Promise<number> {
    const statuses = await Promise.allSettled(this.alive().map((m) => this.status(m)));
    let term = 0;
    for (const s of statuses) if (s.status === 'fulfilled') term = Math.max(term, s.value.term);
    return term;
  }

  async waitHealthy(timeoutMs: number): Promise<void> {
    await pollUntil('every Vera member to serve under one leader', timeoutMs, async () => {
      const statuses = await Promise.all(this.members_.map((m) => this.status(m)));
      const leaders = statuses.filter((s) => s.role === 'leader');
      const leaderId = leaders[0]?.id;
      return leaders.length === 1 && statuses.every((s) => s.leader === leaderId) ? true : undefined;
    });
  }

  async connect(options: ConnectOptions = {}): Promise<BenchClient> {
    return connectVera(this.clientPorts(options), options, this.tlsFiles?.caPem);
  }
}

/** `ca`: the PEM CA of client ports that serve TLS (connects with wss://). */
export async function connectVera(ports: readonly number[], options: ConnectOptions = {}, ca?: string): Promise<BenchClient> {
  const client = await connect(
    ports.map((p) => `${ca === undefined ? 'ws' : 'wss'}://${LOOPBACK}:${p}`),
    {
      connectTimeoutMs: 20_000,
      requestTimeoutMs: 30_000,
      ...(options.sessionTimeoutMs === undefined ? {} : { timeoutMs: options.sessionTimeoutMs }),
      ...(ca === undefined ? {} : { ca }),
    },
  );
  return new VeraBenchClient(client);
}

class VeraBenchClient implements BenchClient {
  constructor(private readonly client: VeraClient) {
    // A failed or expired client must not crash the bench; the scenario sees its requests fail.
    client.on('failed', () => undefined);
    client.on('sessionExpired', () => undefined);
  }

  async append(list: string, value: string): Promise<void> {
    await this.client.push(`/bench/${list}`, value, { persistent: true, watch: false });
  }

  async prepareReadable(key: string, value: string): Promise<void> {
    await this.client.push(`/bench/${key}`, value, { persistent: true, watch: false });
  }

  async read(key: string, mode: ReadMode): Promise<void> {
    await this.client.get(`/bench/${key}`, { consistency: mode });
  }

  async watch(list: string, onChange: (change: WatchedChange) => void): Promise<WatchHandle> {
    const path = `/bench/${list}`;
    this.client.on('event', (event: ChangeEvent) => {
      if (event.path !== path) return;
      const at = performance.now();
      onChange({ kind: event.type === 'push' ? 'append' : 'delete', value: typeof event.item.data === 'string' ? event.item.data : null, at });
    });
    await this.client.watch(path);
    return { oneShot: false, armed: () => Promise.resolve() };
  }

  async appendEphemeral(list: string, value: string): Promise<void> {
    // The session's timeout was set at connect (sessionTimeoutMs).
    await this.client.push(`/bench/${list}`, value, { persistent: false, watch: false });
  }

  grantedSessionTimeoutMs(): number | null {
    return this.client.sessionTimeoutMs;
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  abandon(): void {
    // After a proxy cut the connection is already gone, so close() sends no goodbye.
    void this.client.close();
  }
}
