// What a Vera server is started with. The CLI builds it (src/cli/config.ts: flags,
// config file, environment); tests and embedders may build it themselves. The
// server never imports the CLI.
import type { PrincipalLimits } from './guard/principal-limits.js';
import type { SessionLimits } from '../kit/plugin.js';
import type { ProtocolLimits } from '../protocol/index.js';

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface PeerSpec {
  readonly id: string;
  readonly host: string;
  readonly peerPort: number;
  readonly clientPort: number;
}

/** The kit's per-session limits (what a family's host sees), the protocol's sizes, and the server's own below. */
export interface ServerLimits extends SessionLimits, Pick<ProtocolLimits, 'dataBytes' | 'frameBytes' | 'pathBytes'> {
  /** Free bytes on the data disk below which requests that add data are refused (disk-guard.ts). */
  readonly diskReserveBytes: number;
  readonly inflightPerConnection: number;
  /** Ceiling on client-port sockets; the open-file limit may lower it (fd-budget.ts). */
  readonly connectionsMax: number;
  readonly connectionsPerAddress: number;
  /** A WebSocket that has not said hello within this is closed. */
  readonly helloTimeoutMs: number;
}

export interface ServerConfig {
  readonly id: string;
  /** Absolute path of the data directory. */
  readonly dataDir: string;
  readonly client: HostPort;
  readonly peer: HostPort;
  /**
   * Initial members, this one included; a single-member server lists just itself.
   * With `join`, the members to contact first (and this one).
   */
  readonly peers: readonly PeerSpec[];
  /**
   * --join: do not bootstrap; a new store starts with no configuration and learns
   * it (and the cluster id) from the cluster that adds this member. Ignored for an
   * existing store.
   */
  readonly join: boolean;
  readonly secret: string | null;
  readonly logLevel: LogLevel;
  /** Milliseconds; a hello's timeoutMs is clamped to [min, max], a hello without one gets `default`. */
  readonly sessionTimeout: { readonly min: number; readonly max: number; readonly default: number };
  readonly limits: ServerLimits;
  /** Log compaction: compact once `everyEntries` applied entries lie beyond the `keepEntries` kept behind. */
  readonly compaction: { readonly everyEntries: number; readonly keepEntries: number };
  /** Hibernation of idle units (docs/hibernation.md); absent: no unit hibernates by itself. */
  readonly hibernation?: HibernationConfig;
  /** Limits per authenticated user (principal-limits.ts); defaults when absent. */
  readonly principalLimits?: PrincipalLimits;
  /** With authentication on, /metrics needs a user with read on 'cluster' (`vera start --metrics-need-auth`). */
  readonly metricsNeedAuth?: boolean;
  /** Serve a client port beyond loopback even with authentication off (`vera start --insecure`; see exposure.ts). */
  readonly insecure?: boolean;
  /** Web page origins (`scheme://host:port`, or `*`) allowed besides the member's own (see origin.ts); absent: none. */
  readonly allowedOrigins?: readonly string[];
  /** Host names (or `*`) the member answers to besides its own addresses, loopback and its members' (see host-check.ts); absent: none. */
  readonly allowedHosts?: readonly string[];
  /** TLS on the client port (https and wss; see tls.ts); absent: plain HTTP and WebSocket. */
  readonly clientTls?: ClientTlsConfig;
  /** TLS on the peer port (wss between members; see tls.ts); absent: plain WebSocket. */
  readonly peerTls?: PeerTlsConfig;
}

/** The oldest TLS version a port accepts (--tls-min-version). */
export const TLS_MIN_VERSIONS = ['TLSv1.2', 'TLSv1.3'] as const;
export type TlsMinVersion = (typeof TLS_MIN_VERSIONS)[number];

/** A port's certificate files, read at start and again whenever they change on disk. */
export interface TlsFilesConfig {
  /** PEM certificate (chain) this member presents. */
  readonly certFile: string;
  /** PEM private key of that certificate. */
  readonly keyFile: string;
  /** PEM CA certificate(s) the other side's certificate must chain to; absent: no certificate is asked of it. */
  readonly caFile?: string;
  readonly minVersion: TlsMinVersion;
}

export interface ClientTlsConfig extends TlsFilesConfig {
  /** With caFile: refuse a client that presents no certificate (otherwise one is only verified when presented). */
  readonly clientCertRequired: boolean;
}

/** With caFile, mutual TLS: each member verifies the other's certificate against the CA, both ways. */
export type PeerTlsConfig = TlsFilesConfig;

export interface HibernationConfig {
  /** Each child of a root is a unit (`/users` makes `/users/alice` one). */
  readonly roots: readonly string[];
  /** A unit untouched this long is frozen by the leader. */
  readonly afterMs: number;
}

