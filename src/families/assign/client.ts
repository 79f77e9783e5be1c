// Node assignment in the client library: typed calls over VeraClient's family ops.
import type { VeraClient } from '../../client/client.js';
import { typedCaller, type TypedCall } from '../../client/typed-ops.js';
import { ASSIGN_SCHEMAS, type AccountEventKind, type Assignment, type ImportedUser, type Lookup, type NodeChanges, type NodeInfo, type NodeUser, type PurgeJob, type PurgeResult, type ServiceInfo, type ServiceSettings } from './wire.js';
import { DRAIN_PACING, DrainPacer, type DrainPacing } from './client-drain-pacing.js';

// The answers' shapes are the ops' own (wire.ts), shared with the server.
export type { AccountEventKind, Assignment, ImportedUser, Lookup, NodeInfo, NodeUser, PurgeJob, PurgeResult, ServiceInfo, UserRecord } from './wire.js';
export { runEventsWorker, type AccountEvent, type EventsWorkerOptions, type EventsWorkerReport } from './client-events-worker.js';
import type { AccountEvent } from './client-events-worker.js';
export { runPurgeWorker, type CleanupQueue, type JobOutcome, type PurgeWorkerOptions, type PurgeWorkerReport } from './client-purge-worker.js';
export type { CleanupJob } from './client-cleanup.js';

/** A service's settings to set; absent ones keep their values (a new service takes the defaults). */
export type ServiceInput = Partial<ServiceSettings>;

export type NodeInput = NodeChanges;

/** What a Tokenserver request reports; 0 or absent means not known. */
export interface LoginInput {
  readonly generation?: number;
  readonly keysChangedAt?: number;
  /** The hash of the sync key, hex; '' or absent before there is one. */
  readonly clientState?: string;
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

/** What a purge job does at each step (purgeStart): a purge batch's options, fixed for the job. */
export type PurgeJobOptions = Omit<PurgeOptions, 'dryRun' | 'after'>;

export class AssignClient {
  private readonly call: TypedCall<typeof ASSIGN_SCHEMAS>;

  constructor(client: VeraClient) {
    this.call = typedCaller(client, ASSIGN_SCHEMAS);
  }

  /** Creates the service or changes its settings (unset fields keep their values). */
  service(service: string, settings: ServiceInput = {}): Promise<ServiceSettings & { service: string; created: boolean }> {
    return this.call('service', { service, ...settings });
  }

  async services(options: ReadOptions = {}): Promise<ServiceInfo[]> {
    return (await this.call('services', { ...options })).services;
  }

  async addNode(service: string, node: string, settings: NodeInput & { capacity: number }): Promise<void> {
    await this.call('addNode', { service, node, ...settings });
  }

  async updateNode(service: string, node: string, changes: NodeInput): Promise<void> {
    await this.call('updateNode', { service, node, ...changes });
  }

  /** Downs the node, replaces its users (their next request moves them) and removes it. */
  removeNode(service: string, node: string): Promise<{ replaced: number }> {
    return this.call('removeNode', { service, node });
  }

  async nodes(service: string, options: ReadOptions = {}): Promise<NodeInfo[]> {
    return (await this.call('nodes', { service, ...options })).nodes;
  }

  /**
   * Tokenserver's request: the user's node assignment, created or moved as needed and
   * updated with what the request reports. Refusals are VeraErrors whose `hints.reason`
   * is Tokenserver's status (`invalid-generation`, `invalid-keysChangedAt`,
   * `invalid-client-state`, `new-users-disabled`, `no-node-available`).
   */
  user(service: string, email: string, login: LoginInput = {}): Promise<Assignment> {
    return this.call('user', { service, email, ...login });
  }

  /** A user's records as stored, without creating or changing anything. */
  lookup(service: string, email: string, options: ReadOptions = {}): Promise<Lookup> {
    return this.call('lookup', { service, email, ...options });
  }

  /** Generation to the maximum and every record replaced, in one service or all. */
  retire(email: string, service?: string): Promise<{ services: number }> {
    return this.call('retire', { email, ...(service === undefined ? {} : { service }) });
  }

  /**
   * Replaces the node's users (or the given uids), so their next request allocates them again.
   * Decommissioned whole, a node that was up and open gets backoff 1 (`closed`): it takes no new
   * users until `updateNode(..., { backoff: 0 })`.
   */
  async decommission(service: string, node: string, uids?: readonly number[]): Promise<{ replaced: number; closed?: boolean }> {
    return this.call('decommission', { service, node, ...(uids === undefined ? {} : { uids: [...uids] }) });
  }

  /** An FxA account event: `delete` retires; `passwordChange` and `reset` move the generation to `generation - 1`. */
  event(kind: AccountEventKind, email: string, generation?: number, eventId?: string): Promise<{ changed: number; duplicate?: boolean }> {
    return this.call('event', { kind, email, ...(generation === undefined ? {} : { generation }), ...(eventId === undefined ? {} : { eventId }) });
  }

  /** An account event into journal `journal` (keyed by its id), for an events worker to apply once (client-events-worker.ts). */
  async enqueueEvent(journal: string, event: AccountEvent): Promise<void> {
    await this.call('enqueueEvent', { journal, ...event });
  }

  /** One batch of replaced records older than the grace period. */
  purge(service: string, options: PurgeOptions = {}): Promise<PurgeResult> {
    return this.call('purge', { service, ...options });
  }

  /**
   * An operator's placement (Tokenserver's allocate_user.py EMAIL NODE): the user onto
   * the named node, created there if unknown, moved there (a new record with the same
   * values) if elsewhere; `moved: false` when it is current there already.
   */
  place(service: string, email: string, node: string): Promise<Omit<Assignment, 'allocated'> & { moved: boolean }> {
    return this.call('place', { service, email, node });
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
  purgeStart(service: string, options: PurgeJobOptions = {}): Promise<PurgeJob> {
    return this.call('purgeStart', { service, ...options });
  }

  /** Stops the service's purge job after the batch in hand; `stopped` false when it had ended already. */
  purgeStop(service: string): Promise<PurgeJob & { stopped: boolean }> {
    return this.call('purgeStop', { service });
  }

  /** The service's latest purge job and its progress (NOT_FOUND when it never had one). */
  purgeStatus(service: string, options: ReadOptions = {}): Promise<PurgeJob> {
    return this.call('purgeStatus', { service, ...options });
  }

  /** One page of the users current on a node, by uid; `next` is the `after` of the next page, null after the last. */
  nodeUsers(service: string, node: string, page: { after?: number; limit?: number } = {}, options: ReadOptions = {}): Promise<{ users: NodeUser[]; next: number | null }> {
    return this.call('nodeUsers', { service, node, ...page, ...options });
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
    // A step (max given) always answers both; absent, as from no server of this protocol, they read as false.
    const { replaced, finished = false, closed = false } = await this.call('decommission', { service, node, max });
    return { replaced, finished, closed };
  }

  /** Records from a Tokenserver database into one service, uids kept (1-1000 per call; nodes first). */
  importUsers(service: string, users: readonly ImportedUser[]): Promise<{ imported: number; present: number; repaired: number }> {
    return this.call('importUsers', { service, users });
  }

  /**
   * How many records a purge would take now (replaced longer than `graceMs` ago, default 7 days),
   * counted up to `max` (default 1000, at most 10,000; `capped` says there are more). A read: it needs
   * read on the service, writes nothing and is not audited, unlike a dry-run purge.
   */
  purgeable(service: string, options: { readonly graceMs?: number; readonly max?: number } & ReadOptions = {}): Promise<{ service: string; before: number; records: number; capped: boolean }> {
    return this.call('purgeable', { service, ...options });
  }

  /** Users assigned at `at` (default now). */
  async count(service: string, at?: number, options: ReadOptions = {}): Promise<number> {
    return (await this.call('count', { service, ...(at === undefined ? {} : { at }), ...options })).users;
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
