// `vera start` configuration: flags (exactly those of PROTOCOL.md "Starting
// servers", plus a few more), an optional JSON config file with the same keys,
// and VERA_CLUSTER_SECRET, validated into one typed ServerConfig.
// Precedence: flag > environment (secret only) > config file > default.
import { DEFAULT_PRINCIPAL_LIMITS } from '../server/guard/principal-limits.js';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { MEMBER_ID_PATTERN } from '../raft/config.js';
import { DEFAULT_LIMITS, DEFAULT_SESSION_TIMEOUT_MS, validatePath } from '../protocol/index.js';
import type { FlagSpecs } from './args.js';
import { UsageError } from './errors.js';
import { LOG_LEVELS, TLS_MIN_VERSIONS, type ClientTlsConfig, type HibernationConfig, type LogLevel, type PeerSpec, type PeerTlsConfig, type ServerConfig, type TlsMinVersion } from '../server/config.js';
import { hostNameOf } from '../server/guard/host-check.js';
import { parseCount, parseDuration, parseHost, parseHostPort, parsePort, parseSize } from './units.js';

export type { HostPort, LogLevel, PeerSpec, ServerConfig, ServerLimits } from '../server/config.js';

export const SECRET_ENV = 'VERA_CLUSTER_SECRET';

export const DEFAULTS = {
  id: 'n1',
  data: './vera-data',
  client: '127.0.0.1:1919',
  peer: '127.0.0.1:2919',
  logLevel: 'info' as LogLevel,
  sessionTimeoutMin: 1_000,
  sessionTimeoutMax: 60_000,
  sessionsMax: 10_000,
  sessionsPerAddress: 1_000,
  watchesPerSession: 1_000,
  itemsPerSession: 100_000,
  bytesPerSession: 256 * 1024 * 1024,
  itemsPerList: 1_000_000,
  diskReserveBytes: 64 * 1024 * 1024,
  inflightPerConnection: 256,
  connectionsMax: 10_000,
  connectionsPerAddress: 256,
  helloTimeoutMs: 10_000,
  snapshotEntries: 10_000,
  snapshotKeep: 1_000,
} as const;

/** Settings a flag or a config-file key can carry: the same names in both. */
const SETTINGS = [
  'id',
  'data',
  'client',
  'peer',
  'peers',
  'secret',
  'log-level',
  'session-timeout-min',
  'session-timeout-max',
  'data-limit',
  'frame-limit',
  'sessions-max',
  'sessions-per-address',
  'watches-per-session',
  'items-per-session',
  'bytes-per-session',
  'items-per-list',
  'disk-reserve',
  'inflight-per-connection',
  'connections-max',
  'connections-per-address',
  'hello-timeout',
  'connections-per-user',
  'sessions-per-user',
  'watches-per-user',
  'requests-per-user',
  'items-per-user',
  'bytes-per-user',
  'snapshot-entries',
  'snapshot-keep',
  'hibernate-roots',
  'hibernate-after',
  'allowed-origins',
  'allowed-hosts',
  'client-cert',
  'client-key',
  'client-ca',
  'peer-cert',
  'peer-key',
  'peer-ca',
  'tls-min-version',
] as const;
type Setting = (typeof SETTINGS)[number];
/** Settings that are switches: a flag without a value, `true`/`false` in a config file. */
const SWITCHES = ['join', 'insecure', 'client-cert-required', 'metrics-need-auth'] as const;
type Switch = (typeof SWITCHES)[number];

export const START_FLAGS: FlagSpecs = {
  ...Object.fromEntries(SETTINGS.map((name) => [name, { kind: 'string' as const }])),
  ...Object.fromEntries(SWITCHES.map((name) => [name, { kind: 'boolean' as const }])),
  config: { kind: 'string' },
  help: { kind: 'boolean', short: 'h' },
};

// Room a push frame needs beside its data (id, op, path, flags; JSON escaping aside).
const FRAME_OVERHEAD_BYTES = 64 * 1024;
const MIN_FRAME_BYTES = 2 * FRAME_OVERHEAD_BYTES;

const MEMBER_ID = MEMBER_ID_PATTERN;

export interface ConfigSources {
  /** Flag values by name (without the dashes). */
  readonly flags: ReadonlyMap<string, string | true>;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Relative paths (data dir, config file) resolve against this. */
  readonly cwd: string;
  /** Reads the config file; defaults to the file system. */
  readonly readFile?: (path: string) => string;
}

export function buildServerConfig(sources: ConfigSources): ServerConfig {
  const file = loadConfigFile(sources);
  const given = (name: Setting): string | number | unknown[] | undefined => {
    const flag = sources.flags.get(name);
    if (typeof flag === 'string') return flag;
    if (name === 'secret') {
      const fromEnv = sources.env[SECRET_ENV];
      if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
    }
    return file[name];
  };
  const text = (name: Setting): string | undefined => {
    const value = given(name);
    if (value === undefined || typeof value === 'string') return value;
    throw new UsageError(`${name} must be a string, got ${JSON.stringify(value)}`);
  };
  const scalar = (name: Setting): string | number | undefined => {
    const value = given(name);
    if (value === undefined || typeof value === 'string' || typeof value === 'number') return value;
    throw new UsageError(`${name} must be a string or number, got ${JSON.stringify(value)}`);
  };

  const id = text('id') ?? DEFAULTS.id;
  if (!MEMBER_ID.test(id)) throw new UsageError(`--id must be 1-64 letters, digits, '.', '_' or '-' (starting with a letter or digit), got ${JSON.stringify(id)}`);

  const join = sources.flags.get('join') === true || file.join === true;
  const peersValue = given('peers');
  const peers = peersValue === undefined ? null : parsePeers(peersValue);
  const own = peers?.find((p) => p.id === id);
  if (join) {
    // A joining member needs someone to answer: the leader adds it, then it replies to the members it knows.
    if (peers === null || peers.every((p) => p.id === id)) {
      throw new UsageError('--join needs --peers listing at least one existing member (ID=HOST:PEERPORT/CLIENTPORT)');
    }
  } else if (peers !== null && own === undefined) {
    throw new UsageError(`--peers must include this member (--id ${id})`);
  }

  // Without --client/--peer, a member listed in --peers serves where the list says.
  const clientText = text('client');
  const peerText = text('peer');
  const client =
    clientText !== undefined ? parseHostPort(clientText, '--client', { allowPortZero: true })
    : own !== undefined ? { host: own.host, port: own.clientPort }
    : parseHostPort(DEFAULTS.client, '--client', { allowPortZero: true });
  const peer =
    peerText !== undefined ? parseHostPort(peerText, '--peer', { allowPortZero: true })
    : own !== undefined ? { host: own.host, port: own.peerPort }
    : parseHostPort(DEFAULTS.peer, '--peer', { allowPortZero: true });
  const self = { id, host: peer.host, peerPort: peer.port, clientPort: client.port };
  const members = peers === null ? [self] : own === undefined ? [...peers, self] : peers;

  const secret = text('secret') ?? null;
  if (secret === '') throw new UsageError('--secret must not be empty');
  if (join && secret === null) throw new UsageError(`--join needs the cluster's shared secret: pass --secret or set ${SECRET_ENV}`);
  if (members.length > 1 && secret === null) {
    throw new UsageError(`a cluster of ${members.length} members needs a shared secret: pass --secret or set ${SECRET_ENV}`);
  }

  const logLevel = text('log-level') ?? DEFAULTS.logLevel;
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}`);
  }

  const number = (name: Setting, parse: (v: string | number, what: string) => number, fallback: number): number => {
    const value = scalar(name);
    return value === undefined ? fallback : parse(value, `--${name}`);
  };
  const min = number('session-timeout-min', parseDuration, DEFAULTS.sessionTimeoutMin);
  const max = number('session-timeout-max', parseDuration, Math.max(DEFAULTS.sessionTimeoutMax, min));
  if (min > max) throw new UsageError(`--session-timeout-min (${min} ms) is larger than --session-timeout-max (${max} ms)`);
  if (max > 2 ** 31 - 1) throw new UsageError(`--session-timeout-max must be at most ${2 ** 31 - 1} ms`);

  const frameBytes = number('frame-limit', parseSize, DEFAULT_LIMITS.frameBytes);
  if (frameBytes < MIN_FRAME_BYTES) throw new UsageError(`--frame-limit must be at least ${MIN_FRAME_BYTES} bytes, got ${frameBytes}`);
  const dataBytes = number('data-limit', parseSize, Math.min(DEFAULT_LIMITS.dataBytes, frameBytes - FRAME_OVERHEAD_BYTES));
  // A push frame carries its data plus a few fields; a data limit the frame limit
  // cannot carry would turn TOO_LARGE replies into closed connections.
  if (dataBytes > frameBytes - FRAME_OVERHEAD_BYTES) {
    throw new UsageError(`--data-limit (${dataBytes} bytes) must be at least 64 KiB below --frame-limit (${frameBytes} bytes)`);
  }

  return {
    id,
    dataDir: resolve(sources.cwd, text('data') ?? DEFAULTS.data),
    client,
    peer,
    peers: members,
    join,
    secret,
    logLevel: logLevel as LogLevel,
    sessionTimeout: { min, max, default: Math.min(max, Math.max(min, DEFAULT_SESSION_TIMEOUT_MS)) },
    limits: {
      dataBytes,
      frameBytes,
      pathBytes: DEFAULT_LIMITS.pathBytes,
      sessionsMax: number('sessions-max', parseCount, DEFAULTS.sessionsMax),
      sessionsPerAddress: Math.max(1, number('sessions-per-address', parseCount, DEFAULTS.sessionsPerAddress)),
      watchesPerSession: Math.max(1, number('watches-per-session', parseCount, DEFAULTS.watchesPerSession)),
      itemsPerSession: Math.max(1, number('items-per-session', parseCount, DEFAULTS.itemsPerSession)),
      bytesPerSession: Math.max(1, number('bytes-per-session', parseSize, DEFAULTS.bytesPerSession)),
      itemsPerList: Math.max(1, number('items-per-list', parseCount, DEFAULTS.itemsPerList)),
      diskReserveBytes: number('disk-reserve', parseSize, DEFAULTS.diskReserveBytes),
      inflightPerConnection: number('inflight-per-connection', parseCount, DEFAULTS.inflightPerConnection),
      connectionsMax: Math.max(1, number('connections-max', parseCount, DEFAULTS.connectionsMax)),
      connectionsPerAddress: Math.max(1, number('connections-per-address', parseCount, DEFAULTS.connectionsPerAddress)),
      helloTimeoutMs: Math.max(1, number('hello-timeout', parseDuration, DEFAULTS.helloTimeoutMs)),
    },
    compaction: {
      everyEntries: Math.max(1, number('snapshot-entries', parseCount, DEFAULTS.snapshotEntries)),
      keepEntries: number('snapshot-keep', parseCount, DEFAULTS.snapshotKeep),
    },
    ...hibernationOf(text('hibernate-roots'), number('hibernate-after', parseDuration, DEFAULT_HIBERNATE_AFTER_MS)),
    ...originsOf(text('allowed-origins')),
    ...hostsOf(text('allowed-hosts')),
    ...(sources.flags.get('metrics-need-auth') === true || file['metrics-need-auth'] === true ? { metricsNeedAuth: true } : {}),
    principalLimits: {
      connections: Math.max(1, number('connections-per-user', parseCount, DEFAULT_PRINCIPAL_LIMITS.connections)),
      sessions: Math.max(1, number('sessions-per-user', parseCount, DEFAULT_PRINCIPAL_LIMITS.sessions)),
      watches: Math.max(1, number('watches-per-user', parseCount, DEFAULT_PRINCIPAL_LIMITS.watches)),
      requestsPerSecond: Math.max(1, number('requests-per-user', parseCount, DEFAULT_PRINCIPAL_LIMITS.requestsPerSecond)),
      items: Math.max(1, number('items-per-user', parseCount, DEFAULT_PRINCIPAL_LIMITS.items)),
      bytes: Math.max(1, number('bytes-per-user', parseSize, DEFAULT_PRINCIPAL_LIMITS.bytes)),
    },
    ...tlsOf((name) => text(name), sources.flags.get('client-cert-required') === true || file['client-cert-required'] === true, sources.cwd, secret),
  };
}

/** --client-cert/--client-key/--client-ca/--client-cert-required, --peer-cert/--peer-key/--peer-ca and --tls-min-version. */
function tlsOf(
  text: (name: Setting) => string | undefined,
  clientCertRequired: boolean,
  cwd: string,
  secret: string | null,
): { clientTls?: ClientTlsConfig; peerTls?: PeerTlsConfig } {
  const minText = text('tls-min-version');
  if (minText !== undefined && !(TLS_MIN_VERSIONS as readonly string[]).includes(minText)) {
    throw new UsageError(`--tls-min-version must be one of ${TLS_MIN_VERSIONS.join(', ')}, got ${JSON.stringify(minText)}`);
  }
  const minVersion = (minText ?? 'TLSv1.2') as TlsMinVersion;
  const files = (port: 'client' | 'peer'): { certFile: string; keyFile: string; caFile?: string } | undefined => {
    const [cert, key, ca] = [text(`${port}-cert`), text(`${port}-key`), text(`${port}-ca`)];
    if (cert === undefined && key === undefined) {
      if (ca !== undefined) throw new UsageError(`--${port}-ca needs --${port}-cert and --${port}-key: the ${port} port must serve TLS to verify certificates`);
      return undefined;
    }
    if (cert === undefined || key === undefined) throw new UsageError(`--${port}-cert and --${port}-key go together (a PEM certificate and its private key)`);
    return { certFile: resolve(cwd, cert), keyFile: resolve(cwd, key), ...(ca === undefined ? {} : { caFile: resolve(cwd, ca) }) };
  };
  const client = files('client');
  const peer = files('peer');
  if (clientCertRequired && client?.caFile === undefined) throw new UsageError('--client-cert-required needs --client-ca: the CA client certificates must chain to');
  if (peer !== undefined && secret === null) throw new UsageError(`--peer-cert needs the cluster's shared secret (--secret or ${SECRET_ENV}): without one the peer port is not opened`);
  if (minText !== undefined && client === undefined && peer === undefined) throw new UsageError('--tls-min-version needs --client-cert or --peer-cert: no port serves TLS');
  return {
    ...(client === undefined ? {} : { clientTls: { ...client, minVersion, clientCertRequired } }),
    ...(peer === undefined ? {} : { peerTls: { ...peer, minVersion } }),
  };
}

function originsOf(value: string | undefined): { allowedOrigins?: readonly string[] } {
  if (value === undefined) return {};
  const list = value.split(',').map((o) => o.trim()).filter((o) => o !== '');
  for (const o of list) {
    if (o !== '*' && !/^https?:\/\/[^/\s]+$/.test(o)) throw new UsageError(`--allowed-origins: ${JSON.stringify(o)} is not an origin such as https://dash.example.com:8443 (or *)`);
  }
  return { allowedOrigins: list };
}

/** --allowed-hosts: host names (a port, if given, is dropped: names are what is judged), or `*`. */
function hostsOf(value: string | undefined): { allowedHosts?: readonly string[] } {
  if (value === undefined) return {};
  const list = value.split(',').map((h) => h.trim()).filter((h) => h !== '');
  const names = list.map((h) => {
    const name = h === '*' ? '*' : hostNameOf(h);
    if (name === null) throw new UsageError(`--allowed-hosts: ${JSON.stringify(h)} is not a host name such as vera.example.com (or *)`);
    return name;
  });
  return { allowedHosts: names };
}

/**
 * `ID=HOST:PEERPORT/CLIENTPORT,...` as in PROTOCOL.md; a config file may also
 * give an array of such strings or of `{id, host, peerPort, clientPort}` objects.
 */
export function parsePeers(value: unknown): PeerSpec[] {
  const entries: unknown[] = typeof value === 'string' ? value.split(',').map((s) => s.trim()).filter((s) => s !== '') : Array.isArray(value) ? value : [];
  if (entries.length === 0) throw new UsageError(`--peers must list at least one member as ID=HOST:PEERPORT/CLIENTPORT, got ${JSON.stringify(value)}`);
  const peers = entries.map(parsePeer);
  const ids = new Set<string>();
  const addresses = new Set<string>();
  for (const p of peers) {
    if (ids.has(p.id)) throw new UsageError(`--peers lists member ${p.id} twice`);
    const address = `${p.host}:${p.peerPort}`;
    if (addresses.has(address)) throw new UsageError(`--peers gives peer address ${address} to two members`);
    ids.add(p.id);
    addresses.add(address);
  }
  return peers;
}

function parsePeer(entry: unknown): PeerSpec {
  if (typeof entry === 'object' && entry !== null && !Array.isArray(entry)) {
    const e = entry as Record<string, unknown>;
    return parsePeer(`${String(e.id)}=${bracket(String(e.host))}:${String(e.peerPort)}/${String(e.clientPort)}`);
  }
  if (typeof entry !== 'string') throw new UsageError(`--peers entries must be ID=HOST:PEERPORT/CLIENTPORT, got ${JSON.stringify(entry)}`);
  const match = /^([^=]+)=(\[[^\]]*\]|[^:/[\]]+):([^/]*)\/(.*)$/.exec(entry);
  if (match === null) throw new UsageError(`--peers entry ${JSON.stringify(entry)} is not ID=HOST:PEERPORT/CLIENTPORT`);
  const [, id, host, peerPort, clientPort] = match as unknown as [string, string, string, string, string];
  if (!MEMBER_ID.test(id)) throw new UsageError(`--peers entry ${JSON.stringify(entry)} has an invalid member id ${JSON.stringify(id)}`);
  const what = `--peers entry for ${id}`;
  return {
    id,
    host: parseHost(host, what),
    peerPort: parsePort(peerPort, what, { allowPortZero: false }),
    clientPort: parsePort(clientPort, what, { allowPortZero: false }),
  };
}

function bracket(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

function loadConfigFile(sources: ConfigSources): Partial<Record<Setting, string | number | unknown[]> & Record<Switch, boolean>> {
  const name = sources.flags.get('config');
  if (typeof name !== 'string') return {};
  const path = resolve(sources.cwd, name);
  let parsed: unknown;
  try {
    parsed = JSON.parse((sources.readFile ?? ((p: string) => readFileSync(p, 'utf8')))(path));
  } catch (error) {
    throw new UsageError(`cannot read config file ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`config file ${path} must hold a JSON object`);
  }
  for (const [key, value] of Object.entries(parsed)) {
    if ((SWITCHES as readonly string[]).includes(key)) {
      if (typeof value !== 'boolean') throw new UsageError(`config file ${path}: ${key} must be true or false, got ${JSON.stringify(value)}`);
      continue;
    }
    if (!(SETTINGS as readonly string[]).includes(key)) {
      throw new UsageError(`config file ${path}: unknown key ${JSON.stringify(key)} (keys are the flag names: ${[...SETTINGS, ...SWITCHES].join(', ')})`);
    }
  }
  return parsed as Partial<Record<Setting, string | number | unknown[]> & Record<Switch, boolean>>;
}

/** A unit idle this long hibernates when roots are given: the seed's month. */
const DEFAULT_HIBERNATE_AFTER_MS = 30 * 24 * 3600 * 1000;

function hibernationOf(roots: string | undefined, afterMs: number): { hibernation?: HibernationConfig } {
  if (roots === undefined) return {};
  const list = roots.split(',').map((r) => r.trim()).filter((r) => r !== '');
  for (const root of list) {
    const problem = validatePath(root, { allowRoot: false });
    if (problem !== null) throw new UsageError(`--hibernate-roots: ${problem}`);
  }
  if (list.length === 0) throw new UsageError('--hibernate-roots needs at least one path, such as /users');
  // A unit is one path below a root; with nested roots a unit of the outer root would
  // hold whole units of the inner one, so using either would freeze or thaw the other.
  for (const outer of list) {
    for (const inner of list) {
      if (outer === inner && list.indexOf(outer) !== list.lastIndexOf(inner)) throw new UsageError(`--hibernate-roots names ${outer} twice`);
      if (inner.startsWith(`${outer}/`)) throw new UsageError(`--hibernate-roots ${outer} and ${inner} overlap: ${inner} lies inside ${outer}'s units; give only one of them`);
    }
  }
  return { hibernation: { roots: list, afterMs: Math.max(1, afterMs) } };
}
