// Node assignment in the client library: typed calls over VeraClient's family ops.
import type { VeraClient } from '../../client/client.js';
import { familyCaller, type FamilyCall } from '../../client/family-caller.js';
import { ASSIGN_OPS, type AccountEventKind } from './wire.js';

export type { AccountEventKind } from './wire.js';

/** Ops that change nothing: sent again after a lost connection, as a get is. */
const READS: ReadonlySet<string> = new Set(['assign.lookup', 'assign.nodes', 'assign.count', 'assign.services', 'assign.purgeable']);

export interface ServiceInput {
  /** Endpoint pattern; `{node}`, `{uid}` and `{service}` are filled in. Default `{node}/1.5/{uid}`. */
  readonly pattern?: string;
  /** Share of capacity released on full nodes when no node has a free slot. Default 0.1. */
  readonly releaseRate?: number;
  /** Whether unknown emails get a record. Default true. */
  readonly newUsers?: boolean;
  /** Allocate among the best N nodes at random (chosen by the leader). Default 1. */
  readonly topN?: number;
}

export interface ServiceInfo extends Required<ServiceInput> {
  readonly service: string;
  readonly nodes: number;
}

export interface NodeInput {
  readonly capacity?: number;
  /** Default: the capacity (for a new node). */
  readonly available?: number;
  readonly downed?: boolean;
  /** Non-zero: no new users. */
  readonly backoff?: number;
}

export interface NodeInfo {
  readonly node: string;
  readonly capacity: number;
  readonly load: number;
  readonly available: number;
  readonly downed: boolean;
  readonly backoff: number;
}

/** What a Tokenserver request reports; 0 or absent means not known. */
export interface LoginInput {
  readonly generation?: number;
  readonly keysChangedAt?: number;
  /** The hash of the sync key, hex; '' or absent before there is one. */
  readonly clientState?: string;
}

export interface Assignment {
  readonly uid: number;
  readonly node: string;
  readonly endpoint: string;
  readonly generation: number;
  readonly keysChangedAt: number;
  readonly clientState: string;
  readonly oldClientStates: readonly string[];
  readonly firstSeenAt: number;
  readonly createdAt: number;
  /** The email was unknown and got its first record. */
  readonly created: boolean;
  /** A node was allocated in this request (a new user, or a replaced one moved). */
  readonly allocated: boolean;
}

export interface UserRecord {
  readonly uid: number;
  readonly service: string;
  readonly email: string;
  readonly generation: number;
  readonly clientState: string;
  readonly keysChangedAt: number;
  readonly createdAt: number;
  /** 0 while current. */
  readonly replacedAt: number;
  readonly node: string;
}

export interface Lookup {
  readonly current: UserRecord & { readonly endpoint: string };
  readonly oldClientStates: readonly string[];
  readonly firstSeenAt: number;
  /** Every record, newest first. */
  readonly records: readonly UserRecord[];
}

/** Reads go through the leader (linearizable, the default) or answer from the member's own state (stale). */
export interface ReadOptions {
  readonly consistency?: 'linearizable' | 'stale';
}

export interface PurgeOptions {
  /** Only records replaced at least this long ago (ms). Default 7 days. */
  readonly graceMs?: number;
  /** Records in this batch, at most (1-1000). Default 100. */
  readonly max?: number;
  /** Purge records on downed nodes too. */
  readonly force?: boolean;
  /** List what would be purged; change nothing. */
  readonly dryRun?: boolean;
  /** Queue each record's storage-node cleanup in this journal before deleting it. */
  readonly journal?: string;
  /** Go on from where an earlier batch stopped (its `next`). */
  readonly after?: string;
}

export interface PurgeResult {
  readonly dryRun: boolean;
  readonly purged: ReadonlyArray<{ readonly uid: number; readonly email: string; readonly node: string }>;
  /** Records passed over because their node is downed. */
  readonly skipped: number;
  /** Where this batch stopped, to pass as `after`; null when it looked at every record due. */
  readonly next: string | null;
}

export class AssignClient {
  private readonly call: FamilyCall;

  constructor(client: VeraClient) {
    this.call = familyCaller(client, ASSIGN_OPS, READS);
  }

  /** Creates the service or changes its settings (unset fields keep their values). */
  async service(service: string, settings: ServiceInput = {}): Promise<ServiceInfo & { created: boolean }> {
    return (await this.call('assign.service', { service, ...settings })) as unknown as ServiceInfo & { created: boolean };
  }

  async services(options: ReadOptions = {}): Promise<ServiceInfo[]> {
    return (await this.call('assign.services', { ...options })).services as ServiceInfo[];
  }

  async addNode(service: string, node: string, settings: NodeInput & { capacity: number }): Promise<void> {
    await this.call('assign.addNode', { service, node, ...settings });
  }

  async updateNode(service: string, node: string, changes: NodeInput): Promise<void> {
    await this.call('assign.updateNode', { service, node, ...changes });
  }

  /** Downs the node, replaces its users (their next request moves them) and removes it. */
  async removeNode(service: string, node: string): Promise<{ replaced: number }> {
    return (await this.call('assign.removeNode', { service, node })) as { replaced: number };
  }

  async nodes(service: string, options: ReadOptions = {}): Promise<NodeInfo[]> {
    return (await this.call('assign.nodes', { service, ...options })).nodes as NodeInfo[];
  }

  /**
   * Tokenserver's request: the user's node assignment, created or moved as needed and
   * updated with what the request reports. Refusals are VeraErrors whose `hints.reason`
   * is Tokenserver's status (`invalid-generation`, `invalid-keysChangedAt`,
   * `invalid-client-state`, `new-users-disabled`, `no-node-available`).
   */
  async user(service: string, email: string, login: LoginInput = {}): Promise<Assignment> {
    return (await this.call('assign.user', { service, email, ...login })) as unknown as Assignment;
  }

  /** A user's records as stored, without creating or changing anything. */
  async lookup(service: string, email: string, options: ReadOptions = {}): Promise<Lookup> {
    return (await this.call('assign.lookup', { service, email, ...options })) as unknown as Lookup;
  }

  /** Generation to the maximum and every record replaced, in one service or all. */
  async retire(email: string, service?: string): Promise<{ services: number }> {
    return (await this.call('assign.retire', { email, ...(service === undefined ? {} : { service }) })) as { services: number };
  }

  /** Replaces the node's users (or the given uids), so their next request allocates them again. */
  async decommission(service: string, node: string, uids?: readonly number[]): Promise<{ replaced: number }> {
    return (await this.call('assign.decommission', { service, node, ...(uids === undefined ? {} : { uids }) })) as { replaced: number };
  }

  /** An FxA account event: `delete` retires; `passwordChange` and `reset` move the generation to `generation - 1`. */
  async event(kind: AccountEventKind, email: string, generation?: number): Promise<{ changed: number }> {
    return (await this.call('assign.event', { kind, email, ...(generation === undefined ? {} : { generation }) })) as { changed: number };
  }

  /** One batch of replaced records older than the grace period. */
  async purge(service: string, options: PurgeOptions = {}): Promise<PurgeResult> {
    return (await this.call('assign.purge', { service, ...options })) as unknown as PurgeResult;
  }

  /**
   * How many records a purge would take now (replaced longer than `graceMs` ago, default 7 days),
   * counted up to `max` (default 1000, at most 10,000; `capped` says there are more). A read: it needs
   * read on the service, writes nothing and is not audited, unlike a dry-run purge.
   */
  async purgeable(service: string, options: { readonly graceMs?: number; readonly max?: number } & ReadOptions = {}): Promise<{ service: string; before: number; records: number; capped: boolean }> {
    return (await this.call('assign.purgeable', { service, ...options })) as unknown as { service: string; before: number; records: number; capped: boolean };
  }

  /** Users assigned at `at` (default now). */
  async count(service: string, at?: number, options: ReadOptions = {}): Promise<number> {
    return (await this.call('assign.count', { service, ...(at === undefined ? {} : { at }), ...options })).users as number;
  }
}
