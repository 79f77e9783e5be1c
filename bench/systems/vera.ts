// Vera: three `vera start` processes (bin/vera.js on dist/) with their default
// durability, driven through the project's own client library. With `tls`, the
// client ports serve TLS (a CA and a certificate made with openssl at start) and
// every client connects with wss:// trusting that CA. With `auth`, the cluster
// gets a root user and a bench user right after it starts, authentication is
// turned on, and every client says hello with a token from a login.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { connect, type VeraClient, type ChangeEvent } from '../../src/client/index.js';
import { AuthClient } from '../../src/families/auth/client.js';
import { cliFetch } from '../../src/cli/tls-options.js';
import { spawnManaged } from '../lib/procs.js';
import { fetchJson, freePorts, LOOPBACK, pollUntil } from '../lib/net.js';
import { ProcessCluster, type ClusterMember } from './common.js';
import type { BenchClient, ClientRecipe, Cluster, ConnectOptions, ReadMode, WatchHandle, WatchedChange } from './system.js';

const VERA_BIN = resolve(import.meta.dirname, '../../bin/vera.js');
const PACKAGE_JSON = resolve(import.meta.dirname, '../../package.json');
const THIS_CHECKOUT = resolve(import.meta.dirname, '../..');

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
  readonly commit: number;
  readonly applied: number;
}

export interface VeraClusterOptions {
  /** Directory for server logs. */
  readonly logDir: string;
  /** Opens the V8 inspector on a random loopback port so a CPU profile can be taken later (no cost while unattached). */
  readonly inspector: boolean;
  /** TLS on the client ports (--client-cert/--client-key); clients verify against the CA. */
  readonly tls?: boolean;
  /** Authentication on (see VeraAuthOptions); off when absent. */
  readonly auth?: VeraAuthOptions;
  /** The checkout whose bin/vera.js (and dist/) the members run (`--compare`); this one when absent. */
  readonly checkout?: string;
}

/**
 * Authentication, bootstrapped by start(): a user `root` with the role root, a role
 * `bench` granting read, write and watch on /bench (every path the bench's clients
 * touch) and a user `bench` holding it; then `auth.enable`. Clients say hello with a
 * token from `auth.login`, the way a production application would.
 */
export interface VeraAuthOptions {
  /**
   * Whose token clients carry: `bench` (the realistic case: each op's needs are judged
   * against the role's rules) or `root` (the root role's one rule covers everything).
   */
  readonly clientsAs: 'bench' | 'root';
}

/** The bench user's role and the prefix it may read, write and watch (every bench path is below it). */
export const BENCH_ROLE = 'bench';
export const BENCH_PREFIX = '/bench';

/** What a client needs to reach a cluster: the CA of TLS client ports, and a token when authentication is on. */
export interface VeraAccess {
  readonly ca?: string;
  readonly token?: string;
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
  /** With authentication on: the token clients carry, and root's (for the operator endpoints). */
  private tokens: { readonly client: string; readonly root: string } | null = null;

  constructor(private readonly options: VeraClusterOptions) {
    super('vera-bench-');
    if (options.tls === true) this.settings.clientTls = 'TLS (TLSv1.2 or later, ECDSA P-256 certificate) on every client port; clients connect with wss:// and verify it';
    if (options.auth !== undefined) {
      this.settings.authentication =
        options.auth.clientsAs === 'root'
          ? 'on; every client says hello with a token of user root (the root role: one rule covering everything)'
          : `on; every client says hello with a token of user ${BENCH_ROLE}, whose role ${BENCH_ROLE} grants read, write and watch on ${BENCH_PREFIX} (each op's needs judged against its rules)`;
      this.settings.perUserLimits = '--connections-per-user, --sessions-per-user and --watches-per-user raised to 100000 and --requests-per-user to 10^9 a second: every client is one user, and the default 10000 requests a second per member would throttle the load rather than measure it (the meter still counts every request)';
    }
  }

  /** What a client needs: the CA (TLS) and the token (authentication). */
  access(): VeraAccess {
    return { ...(this.tlsFiles === null ? {} : { ca: this.tlsFiles.caPem }), ...(this.tokens === null ? {} : { token: this.tokens.client }) };
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
    return { ...super.recipe(), ...this.access() };
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
    if (this.options.auth !== undefined) await this.enableAuth(this.options.auth);
  }

  /**
   * Makes root and the bench user, turns authentication on, and logs both in through
   * the client library (tokens good for a day); resolves once every member has applied
   * it (each answers a login over HTTP).
   */
  private async enableAuth(auth: VeraAuthOptions): Promise<void> {
    const urls = (ports: readonly number[]): string[] => ports.map((p) => `${this.tlsFiles === null ? 'ws' : 'wss'}://${LOOPBACK}:${p}`);
    const all = urls(this.members_.map((m) => m.clientPort));
    const base = { connectTimeoutMs: 20_000, requestTimeoutMs: 30_000, ...(this.tlsFiles === null ? {} : { ca: this.tlsFiles.caPem }) };
    const rootPassword = randomBytes(18).toString('base64url');
    const benchPassword = randomBytes(18).toString('base64url');
    const open = await connect(all, base);
    open.on('failed', () => undefined);
    try {
      const admin = new AuthClient(open);
      // The auth ops need command version 7, which a new cluster reaches moments after its first election.
      await untilCommandVersion(() => admin.addUser('root', rootPassword), 20_000);
      await admin.grantRole('root', 'root');
      await admin.addRole(BENCH_ROLE);
      await admin.grantPermission(BENCH_ROLE, BENCH_PREFIX, ['read', 'write', 'watch']);
      await admin.addUser(BENCH_ROLE, benchPassword);
      await admin.grantRole(BENCH_ROLE, BENCH_ROLE);
      await admin.enable();
    } finally {
      // A connection made while authentication was off is closed once it is on (4007).
      await open.close().catch(() => undefined);
    }
    const dayMs = 24 * 3600_000;
    const tokens = await pollUntil('a login after auth.enable', 20_000, async () => {
      const client = await connect(all, { ...base, user: 'root', password: rootPassword });
      client.on('failed', () => undefined);
      try {
        const login = new AuthClient(client);
        const root = (await login.login('root', rootPassword, dayMs)).token;
        const bench = (await login.login(BENCH_ROLE, benchPassword, dayMs)).token;
        return { root, client: auth.clientsAs === 'root' ? root : bench };
      } finally {
        await client.close().catch(() => undefined);
      }
    });
    for (const m of this.members_) {
      // POST /v1/auth/login answers only where auth.enable has applied: so every member has it before any load.
      await pollUntil(`authentication on at ${m.id}`, 20_000, async () => {
        const res = await this.httpJson(m.clientPort, '/v1/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: 'root', password: rootPassword }), timeoutMs: 5_000 });
        return res.status === 200 ? true : undefined;
      });
    }
    this.tokens = tokens;
  }

  private peersFlag(): string {
    return this.members_.map((m) => `${m.id}=${LOOPBACK}:${m.peerPort}/${m.clientPort}`).join(',');
  }

  protected override async launch(member: Member): Promise<void> {
    const checkout = this.options.checkout;
    // VERA_BENCH_NODE_FLAGS: extra Node/V8 flags for this checkout's members only (never a --compare REF's),
    // so a compare of HEAD against itself measures just the flags.
    const trial = checkout === undefined || resolve(checkout) === THIS_CHECKOUT ? (process.env.VERA_BENCH_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '') : [];
    const nodeFlags = [...(this.options.inspector ? [`--inspect=${LOOPBACK}:0`] : []), ...trial];
    // An older checkout may predate the per-address limits (they came with client admission and quotas).
    const perAddress = ['--connections-per-address', '--sessions-per-address'].filter((f) => checkout === undefined || acceptsFlag(checkout, f)).flatMap((f) => [f, '100000']);
    const args = [
      ...nodeFlags,
      checkout === undefined ? VERA_BIN : join(checkout, 'bin/vera.js'),
      'start',
      '--id', member.id,
      '--data', member.dataDir,
      '--client', `${LOOPBACK}:${member.clientPort}`,
      '--peer', `${LOOPBACK}:${member.peerPort}`,
      '--peers', this.peersFlag(),
      '--secret', this.secret,
      ...perAddress,
      // Only matter with authentication on (see settings.perUserLimits).
      ...(this.options.auth === undefined ? [] : ['--connections-per-user', '100000', '--sessions-per-user', '100000', '--watches-per-user', '100000', '--requests-per-user', '1000000000']),
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

  /**
   * Compacts every member's db (POST /v1/defrag), so on-disk sizes hold no deleted keys.
   * An operator endpoint: root's token with authentication on (admin on 'cluster'), else the cluster secret.
   */
  async defragAll(): Promise<void> {
    const bearer = this.tokens === null ? this.secret : this.tokens.root;
    for (const m of this.members_) {
      const res = await this.httpJson(m.clientPort, '/v1/defrag', { method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' }, body: '{}', timeoutMs: 600_000 });
      if (res.status !== 200) throw new Error(`defrag of ${m.id} answered ${res.status}: ${await res.text()}`);
    }
  }

  inspectorUrl(member: string): string | null {
    return this.member(member).inspectorUrl;
  }

  /** GET /v1/status: open to anyone, authentication on or not (monitoring), so it carries no token. */
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

  /**
   * Resolves once every live member has applied what the leader had committed when called:
   * work the last phase left behind (sessions ending with thousands of ephemeral items, each
   * one entry every member applies) is then done, and not counted in the next phase.
   */
  async settled(timeoutMs = 30_000): Promise<void> {
    const leader = this.member(await this.leader(timeoutMs));
    const { commit } = await this.status(leader);
    await pollUntil(`every Vera member to apply index ${commit}`, timeoutMs, async () => {
      const statuses = await Promise.all(this.alive().map((m) => this.status(m)));
      return statuses.every((s) => s.applied >= commit) ? true : undefined;
    });
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
    return connectVera(this.clientPorts(options), options, this.access());
  }
}

/** Whether the build in `checkout` knows a `vera start` flag (its compiled CLI names it). */
function acceptsFlag(checkout: string, flag: string): boolean {
  const dir = join(checkout, 'dist/cli');
  const name = `'${flag.replace(/^--/, '')}'`;
  return readdirSync(dir).some((f) => f.endsWith('.js') && readFileSync(join(dir, f), 'utf8').includes(name));
}

/** Retries `op` while the cluster has not reached the command version it needs (a new cluster raises it just after electing a leader). */
async function untilCommandVersion(op: () => Promise<unknown>, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      await op();
      return;
    } catch (error) {
      if (!(error instanceof Error && /command version/.test(error.message)) || performance.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** `access.ca`: the PEM CA of client ports that serve TLS (connects with wss://); `access.token`: the hello's token. */
export async function connectVera(ports: readonly number[], options: ConnectOptions = {}, access: VeraAccess = {}): Promise<BenchClient> {
  const client = await connect(
    ports.map((p) => `${access.ca === undefined ? 'ws' : 'wss'}://${LOOPBACK}:${p}`),
    {
      connectTimeoutMs: 20_000,
      requestTimeoutMs: 30_000,
      ...(options.sessionTimeoutMs === undefined ? {} : { timeoutMs: options.sessionTimeoutMs }),
      ...(access.ca === undefined ? {} : { ca: access.ca }),
      ...(access.token === undefined ? {} : { token: access.token }),
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

  async put(key: string, value: string): Promise<void> {
    await this.client.push(`/bench/${key}`, value, { persistent: true, watch: false });
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
