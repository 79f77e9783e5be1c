// What the scenarios need from a system under test. Each system (Vera, etcd,
// ZooKeeper) implements these with its own ordinary client, so the load
// generator and the measurements are the same code for all of them.

export type SystemName = 'vera' | 'etcd' | 'zookeeper';
export const SYSTEM_NAMES: readonly SystemName[] = ['vera', 'etcd', 'zookeeper'];

export const DISPLAY_NAMES: Readonly<Record<SystemName, string>> = { vera: 'Vera', etcd: 'etcd', zookeeper: 'ZooKeeper' };

/**
 * A "list" is the shared data model: a named collection that writes append to.
 * Vera: a list at a path (push). etcd: keys under a prefix (put of a new key).
 * ZooKeeper: children of a znode (create of a sequential child).
 */
export interface BenchClient {
  /** Appends a new durable item (128-byte value) to `list`; resolves once acknowledged. */
  append(list: string, value: string): Promise<void>;
  /**
   * Writes `value` under a key no earlier write used (S2's new-keys level, as etcd's
   * `benchmark put --key-space-size`): a new list of one item in Vera, a key in etcd,
   * a znode in ZooKeeper.
   */
  put(key: string, value: string): Promise<void>;
  /** Makes `key` a small readable object holding `value` (for S6). */
  prepareReadable(key: string, value: string): Promise<void>;
  /** Reads the object made by prepareReadable. */
  read(key: string, mode: ReadMode): Promise<void>;
  /**
   * Watches `list`: `onChange` runs for every change with the appended value
   * when the system's notification carries it (null when it does not). A
   * one-shot watch is re-armed by the adapter; `armed()` resolves when the
   * watch is in place again (immediately for persistent watches).
   */
  watch(list: string, onChange: (change: WatchedChange) => void): Promise<WatchHandle>;
  /** Appends an item owned by this client's session (Vera, ZooKeeper) or lease (etcd) of `ttlMs`. */
  appendEphemeral(list: string, value: string, ttlMs: number): Promise<void>;
  /** The session timeout the server granted (Vera, ZooKeeper); null where there is no session (etcd). */
  grantedSessionTimeoutMs(): number | null;
  /** Closes politely (ends the session). */
  close(): Promise<void>;
  /** Drops the client without any goodbye and without waiting (after a proxy cut). */
  abandon(): void;
}

export type ReadMode = 'linearizable' | 'stale';

export interface WatchedChange {
  readonly kind: 'append' | 'delete';
  readonly value: string | null;
  /** performance.now() when the client library handed the change over. */
  readonly at: number;
}

export interface WatchHandle {
  /** Resolves when the next change will be delivered (re-armed one-shot watches). */
  armed(): Promise<void>;
  /** One-shot watches (ZooKeeper) need re-arming after each notification. */
  readonly oneShot: boolean;
}

export interface ConnectOptions {
  /** Session timeout for systems with sessions (Vera, ZooKeeper). */
  readonly sessionTimeoutMs?: number;
  /** Connect only to this loopback port (a proxy in front of `member`). */
  readonly onlyPort?: number;
  /** Connect only to this member (for proxies and per-member clients). */
  readonly member?: string;
}

/** Enough to connect a client from another process: the system and its members' client ports. */
export interface ClientRecipe {
  readonly system: SystemName;
  readonly ports: readonly number[];
  /** PEM CA of a client port that serves TLS (Vera with --tls). */
  readonly ca?: string;
  /** The token every hello carries (Vera with authentication on). */
  readonly token?: string;
}

export interface MemberInfo {
  readonly id: string;
  readonly clientPort: number;
  readonly pid: number | null;
  readonly alive: boolean;
}

export interface Cluster {
  readonly name: SystemName;
  /** Server version as the server reports it. */
  readonly version: string;
  /** Settings that matter for the comparison (durability, timeouts), recorded in the results. */
  readonly settings: Readonly<Record<string, unknown>>;
  start(): Promise<void>;
  /** Stops every member and removes the data. */
  stop(): Promise<void>;
  members(): readonly MemberInfo[];
  /** Id of the current leader (waits until there is one). */
  leader(timeoutMs?: number): Promise<string>;
  /** A number that grows with every election (Raft term, ZooKeeper epoch). */
  electionCounter(): Promise<number>;
  kill9(member: string): Promise<void>;
  /** Starts a killed member again on its data and waits until it serves. */
  restart(member: string): Promise<void>;
  /** Waits until every member serves and one leads. */
  waitHealthy(timeoutMs: number): Promise<void>;
  connect(options?: ConnectOptions): Promise<BenchClient>;
  /** How a client in another process reaches every member. */
  recipe(): ClientRecipe;
}
