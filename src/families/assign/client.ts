// Node assignment in the client library: typed calls over VeraClient's family ops.
import type { VeraClient } from '../../client/client.js';
import { familyCaller, type FamilyCall } from '../../client/family-caller.js';
import { ASSIGN_OPS, type AccountEventKind } from './wire.js';
import { DRAIN_PACING, DrainPacer, type DrainPacing } from './client-drain-pacing.js';

export type { AccountEventKind } from './wire.js';
export { runEventsWorker, type AccountEvent, type EventsWorkerOptions, type EventsWorkerReport } from './client-events-worker.js';
import type { AccountEvent } from './client-events-worker.js';
export { runPurgeWorker, type CleanupQueue, type JobOutcome, type PurgeWorkerOptions, type PurgeWorkerReport } from './client-purge-worker.js';
export type { CleanupJob } from './client-cleanup.js';

/** Ops that change nothing: sent again after a lost connection, as a get is. */
const READS: ReadonlySet<string> = new Set(['assign.lookup', 'assign.nodes', 'assign.count', 'assign.services', 'assign.nodeUsers', 'assign.purgeable', 'assign.purgeStatus']);

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
  /** Only records whose uid is at least this (inclusive). */
  readonly uidMin?: number;
  /** Only records whose uid is at most this (inclusive). */
  readonly uidMax?: number;
  /**
   * With force and a journal: records on downed nodes have their clean-up sent to this node
   * instead (their data was copied there), unless it is the user's current data.
   */
  readonly overrideNode?: string;
}

/** A row of Tokenserver's users table, as an import takes it (times in ms; 0 for NULL): a record of the service imported into. */
export type ImportedUser = Omit<UserRecord, 'service'>;

/** A user current on a node, as a page of `nodeUsers` lists it. */
export interface NodeUser {
  readonly uid: number;
  readonly email: string;
  readonly generation: number;
  readonly keysChangedAt: number;
  readonly clientState: string;
  readonly createdAt: number;
}

export interface DrainOptions {
  /** Users replaced per second, at most. Default 100. */
  readonly ratePerSecond?: number;
  /** The most a step replaces (1-1000): steps start at the pacing's least batch (25, or this if less) and grow up to it while quick. Default 100, never above the rate. */
  readonly batch?: number;
  readonly signal?: AbortSignal;
  /** Told after each batch: replaced so far, the node's load (its users still there), and that step's batch and time (ms). */
  readonly onBatch?: (p: { readonly replaced: number; readonly load: number; readonly batches: number; readonly batch: number; readonly stepMs: number }) => void;
  /** How steps are sized and spaced (client-drain-pacing.ts); DRAIN_PACING when absent. */
  readonly pacing?: DrainPacing;
  /** Where the drain reads the time and waits between steps; performance.now and setTimeout when absent (tests pass their own). */
  readonly clock?: DrainClock;
}

/** The time a drain measures its steps with (ms) and how it waits (ending early when signal aborts). */
export interface DrainClock {
  now(): number;
  sleep(ms: number, signal: AbortSignal | undefined): Promise<void>;
}

const REAL_CLOCK: DrainClock = { now: () => performance.now(), sleep: pause };

/** Where a purge to the end stands after each batch. */
export interface PurgeProgress {
  readonly batches: number;
  readonly purged: number;
  readonly skipped: number;
  /** The last batch's answer. */
  readonly batch: PurgeResult;
}

export interface PurgeResult {
  readonly dryRun: boolean;
  readonly purged: ReadonlyArray<{ readonly uid: number; readonly email: string; readonly node: string }>;
  /** Records passed over because their node is downed. */
  readonly skipped: number;
  /** Where this batch stopped, to pass as `after`; null when it looked at every record due. */
  readonly next: string | null;
  /** With overrideNode: clean-ups sent to it, and records purged with none (their data is the user's current data). */
  readonly overridden?: number;
  readonly activeData?: number;
}

/** What a purge job does at each step (purgeStart): a purge batch's options, fixed for the job. */
export type PurgeJobOptions = Omit<PurgeOptions, 'dryRun' | 'after'>;

/** A purge the leader runs until done, as it stands (replicated: any leader goes on with it). */
export interface PurgeJob {
  readonly service: string;
  /** 1, 2, ... per service. */
  readonly seq: number;
  /** running; done (every record due looked at); stopped by an operator; failed (`error` says why). */
  readonly state: 'running' | 'stopped' | 'done' | 'failed';
  readonly graceMs: number;
  readonly max: number;
  readonly force: boolean;
  readonly uidMin?: number;
  readonly uidMax?: number;
  readonly overrideNode?: string;
  readonly journal?: string;
  readonly startedAt: number;
  readonly endedAt: number | null;
  /** Where the next batch goes on from; null before the first. */
  readonly cursor: string | null;
  readonly batches: number;
  readonly purged: number;
  /** Passed over on downed nodes (without force). */
  readonly skipped: number;
  readonly overridden: number;
  readonly activeData: number;
  readonly error?: string;
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

  /**
   * Replaces the node's users (or the given uids), so their next request allocates them again.
   * Decommissioned whole, a node that was up and open gets backoff 1 (`closed`): it takes no new
   * users until `updateNode(..., { backoff: 0 })`.
   */
  async decommission(service: string, node: string, uids?: readonly number[]): Promise<{ replaced: number; closed?: boolean }> {
    return (await this.call('assign.decommission', { service, node, ...(uids === undefined ? {} : { uids }) })) as { replaced: number; closed?: boolean };
  }

  /** An FxA account event: `delete` retires; `passwordChange` and `reset` move the generation to `generation - 1`. */
  async event(kind: AccountEventKind, email: string, generation?: number, eventId?: string): Promise<{ changed: number; duplicate?: boolean }> {
    return (await this.call('assign.event', { kind, email, ...(generation === undefined ? {} : { generation }), ...(eventId === undefined ? {} : { eventId }) })) as { changed: number; duplicate?: boolean };
  }

  /** An account event into journal `journal` (keyed by its id), for an events worker to apply once (client-events-worker.ts). */
  async enqueueEvent(journal: string, event: AccountEvent): Promise<void> {
    await this.call('assign.enqueueEvent', { journal, ...event });
  }

  /** One batch of replaced records older than the grace period. */
  async purge(service: string, options: PurgeOptions = {}): Promise<PurgeResult> {
    return (await this.call('assign.purge', { service, ...options })) as unknown as PurgeResult;
  }

  /**
   * An operator's placement (Tokenserver's allocate_user.py EMAIL NODE): the user onto
   * the named node, created there if unknown, moved there (a new record with the same
   * values) if elsewhere; `moved: false` when it is current there already.
   */
  async place(service: string, email: string, node: string): Promise<Omit<Assignment, 'allocated'> & { moved: boolean }> {
    return (await this.call('assign.place', { service, email, node })) as unknown as Omit<Assignment, 'allocated'> & { moved: boolean };
  }

  /**
   * Purge in batches until every record due has been looked at (a batch answers `next`
   * null): each batch one call, `onBatch` told after each. Records passed over (on downed
   * nodes, unless forced) stay; a dry run looks at them all and deletes nothing.
   * Stops after `maxBatches` (default 100,000) so a loop can never run unbounded.
   */
  async purgeAll(service: string, options: Omit<PurgeOptions, 'after'> = {}, onBatch?: (p: PurgeProgress) => void, maxBatches = 100_000): Promise<Omit<PurgeProgress, 'batch'> & { done: boolean }> {
    let after: string | undefined;
    let progress = { batches: 0, purged: 0, skipped: 0 };
    while (progress.batches < maxBatches) {
      const batch = await this.purge(service, { ...options, ...(after === undefined ? {} : { after }) });
      progress = { batches: progress.batches + 1, purged: progress.purged + batch.purged.length, skipped: progress.skipped + batch.skipped };
      onBatch?.({ ...progress, batch });
      if (batch.next === null) return { ...progress, done: true };
      after = batch.next;
    }
    return { ...progress, done: false };
  }

  /**
   * Starts a purge the leader runs until done: batch after batch of at most `max` records,
   * with the grace period taken at each, from replicated progress, so it goes on across
   * leader changes. Refused (CONFLICT) while the service has one running.
   */
  async purgeStart(service: string, options: PurgeJobOptions = {}): Promise<PurgeJob> {
    return (await this.call('assign.purgeStart', { service, ...options })) as unknown as PurgeJob;
  }

  /** Stops the service's purge job after the batch in hand; `stopped` false when it had ended already. */
  async purgeStop(service: string): Promise<PurgeJob & { stopped: boolean }> {
    return (await this.call('assign.purgeStop', { service })) as unknown as PurgeJob & { stopped: boolean };
  }

  /** The service's latest purge job and its progress (NOT_FOUND when it never had one). */
  async purgeStatus(service: string, options: ReadOptions = {}): Promise<PurgeJob> {
    return (await this.call('assign.purgeStatus', { service, ...options })) as unknown as PurgeJob;
  }

  /** One page of the users current on a node, by uid; `next` is the `after` of the next page, null after the last. */
  async nodeUsers(service: string, node: string, page: { after?: number; limit?: number } = {}, options: ReadOptions = {}): Promise<{ users: NodeUser[]; next: number | null }> {
    return (await this.call('assign.nodeUsers', { service, node, ...page, ...options })) as unknown as { users: NodeUser[]; next: number | null };
  }

  /**
   * Drains a node without downing it: it takes no new users from the first batch on
   * (backoff 1, as a decommission sets), and its users are replaced a batch per entry at
   * most `ratePerSecond`, each moving to another node on its next request. The steps are
   * paced (client-drain-pacing.ts): a batch shrinks while steps take long and grows back to
   * `batch` while they are quick, and after each step the log is left free at least as
   * long as the step took, so requests beside the drain wait little behind it. Ends when
   * none is left (`done`) or `signal` aborts. Reopen the node with updateNode(..., {backoff: 0}).
   */
  async drain(service: string, node: string, options: DrainOptions = {}): Promise<{ replaced: number; batches: number; done: boolean }> {
    const rate = options.ratePerSecond ?? 100;
    if (!(rate > 0)) throw new RangeError('ratePerSecond must be above 0');
    const clock = options.clock ?? REAL_CLOCK;
    const pacer = new DrainPacer(Math.max(1, Math.min(options.batch ?? 100, 1000, Math.ceil(rate))), rate, options.pacing ?? DRAIN_PACING, () => clock.now());
    let replaced = 0;
    let batches = 0;
    while (options.signal?.aborted !== true) {
      const batch = pacer.batch;
      const started = clock.now();
      const r = await this.drainBatch(service, node, batch);
      const stepMs = clock.now() - started;
      pacer.record(stepMs, r.replaced);
      replaced += r.replaced;
      batches++;
      const load = options.onBatch === undefined ? 0 : ((await this.nodes(service)).find((n) => n.node === node)?.load ?? 0);
      options.onBatch?.({ replaced, load, batches, batch, stepMs });
      if (r.finished) return { replaced, batches, done: true };
      await clock.sleep(pacer.nextWaitMs(), options.signal);
    }
    return { replaced, batches, done: false };
  }

  /** One step of a drain: the node closed to new users (`closed`: by this call), then up to `max` of its users replaced; `finished` once none is left. */
  async drainBatch(service: string, node: string, max: number): Promise<{ replaced: number; finished: boolean; closed: boolean }> {
    return (await this.call('assign.decommission', { service, node, max })) as { replaced: number; finished: boolean; closed: boolean };
  }

  /** Records from a Tokenserver database into one service, uids kept (1-1000 per call; nodes first). */
  async importUsers(service: string, users: readonly ImportedUser[]): Promise<{ imported: number; present: number; repaired: number }> {
    return (await this.call('assign.importUsers', { service, users })) as { imported: number; present: number; repaired: number };
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

/** Waits `ms` (nothing when not positive), or until `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (ms <= 0 || signal?.aborted === true) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
