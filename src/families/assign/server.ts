// Node assignment on the server, written against the kit: its client ops (wire.ts
// checks them), the multi-entry operations (decommissioning a node in bounded
// batches, removing it, purging with the storage-node work queued in a journal
// first), its HTTP API, its metrics and the leader's purge duty, on an instance
// made per member from a FamilyHost. Nothing here imports the server.
import { randomInt } from 'node:crypto';
import { VeraError, type AnyOpSchema, type FamilyRequest } from '../../protocol/index.js';
import { metricLines, opRequest, type MetricSample, type Plugin, type RequestOfSchema, type PluginNeed, type PluginRoute, type PluginServer, type StoreDb, type StoreSnapshot } from '../../kit/index.js';
import { rulesAt, unchangedLogin, type AssignValue, type LoginRefusal } from './apply.js';
import type { AssignCommand } from './commands.js';
import { lookupKey, nodeKey, serviceKey } from './keys.js';
import { countReplacedBefore, countUsers, currentUids, userRecords, usersOnNode } from './reads.js';
import { decodeService, type UserRecord } from './records.js';
import { newestFirst, oldClientStates, type LoginRequest } from './rules.js';
import type { AssignState, ServiceState } from './state.js';
import { ASSIGN_SCHEMAS, endpointOf, MAX_BATCH, type NodeInfo, type PurgeResult, type UserAssignment } from './wire.js';
import { cleanupJobs, journalIsLive, parseCursor, queueCleanups, selectPurgeBatch, type AssignHost } from './purge-batch.js';
import { purgeDuty } from './purge-duty.js';
import { describePurgeJob } from './purge-job.js';

type Ops = typeof ASSIGN_SCHEMAS;

/** Batches one decommission or remove request proposes at most before answering (a million users at MAX_BATCH each). */
const MAX_ROUNDS = 1000;

/** Tokenserver's refusals as protocol errors: the reason rides beside the code. */
const REFUSAL_CODE: Record<LoginRefusal, 'CONFLICT' | 'FORBIDDEN' | 'UNAVAILABLE' | 'QUOTA_EXCEEDED'> = {
  'invalid-generation': 'CONFLICT',
  'invalid-keysChangedAt': 'CONFLICT',
  'invalid-client-state': 'CONFLICT',
  'new-users-disabled': 'FORBIDDEN',
  'too-many-records': 'QUOTA_EXCEEDED',
  'no-node-available': 'UNAVAILABLE',
};

function describeNodes(s: ServiceState): NodeInfo[] {
  return [...s.nodes]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([node, n]) => ({ node, capacity: n.capacity, load: n.load, available: n.available, downed: n.downed, backoff: n.backoff }));
}

/** The value of an entry of `op`: apply answers each command with a value of its own op. */
function resultOf<O extends AssignValue['op']>(v: AssignValue, op: O): Extract<AssignValue, { op: O }> {
  if (v.op !== op) throw new VeraError('INTERNAL', `an assignment ${op} entry gave a ${v.op} result`);
  return v as Extract<AssignValue, { op: O }>;
}

/** What this member applied, per service and node (every member applies every entry). */
interface Counters {
  readonly allocations: Map<string, number>;
  readonly refusals: Map<string, number>;
}

function createServer(host: AssignHost): PluginServer<Ops, AssignValue> {
  /** Applied logins, per service: what /metrics counts since this member started. */
  const counters = new Map<string, Counters>();
  /** The count scan in flight on this member: one at a time, so clients asking at once cannot multiply it. */
  let countQueue: Promise<unknown> = Promise.resolve();

  const propose = (command: AssignCommand): Promise<AssignValue> => host.propose(command);

  const serviceOf = (name: string): ServiceState => {
    const s = host.state().services.get(name);
    if (s === undefined) throw new VeraError('NOT_FOUND', `no service ${name}`);
    return s;
  };

  /** Reads are linearizable unless the request asks for this member's state as it stands. */
  const barrier = async (r: { readonly consistency?: 'linearizable' | 'stale' }): Promise<void> => {
    if (r.consistency !== 'stale') await host.barrier();
  };

  /** The wall clock, never behind the replicated one: what a grace period and a count's `at` start from. */
  const now = (): number => Math.max(host.now(), Date.now());

  const oneCountAtATime = <T>(scan: () => Promise<T>): Promise<T> => {
    const run = countQueue.then(scan);
    countQueue = run.catch(() => undefined);
    return run;
  };

  /** The unchanged answer from one snapshot of the db: the service's pattern, the user's records (read from it), whether their node exists. */
  const unchangedFrom = (db: StoreDb, snapshot: StoreSnapshot, service: string, stored: readonly UserRecord[], request: LoginRequest): UserAssignment | null => {
    const raw = db.getSync(serviceKey(service), { snapshot });
    if (raw === undefined) return null;
    // The rules the entry would apply now: those of the cluster's active version.
    const rules = rulesAt(host.commandVersion());
    return unchangedLogin(decodeService(raw).pattern, service, stored, request, (node) => db.getSync(nodeKey(service, node), { snapshot }) !== undefined, rules);
  };

  /**
   * The answer to a login that changes nothing, or null when the login needs an entry.
   * A user this member holds no record of needs one whatever the leader holds (the entry
   * is get-or-create and decides for itself), so it is sent on without a read barrier.
   * A lagging member may not yet hold a user the leader created: that login then pays
   * an entry that changes nothing (it finds the record and answers it, created: false).
   * Otherwise the answer is read after a linearizable barrier (on a leader holding its
   * lease, no round: it waits only for what is committed to be applied), so it reflects
   * every entry acknowledged before the request came, and from one snapshot, all of it
   * synchronous point reads: no trip to LevelDB's thread pool. A member that cannot
   * confirm it leads proposes instead, which forwards or fails as any write does.
   * A leader whose lease holds with what it covers applied (the common case) needs no
   * barrier at all: one snapshot then both finds the user and answers it.
   */
  const answerUnchanged = async (service: string, email: string, request: LoginRequest): Promise<UserAssignment | null> => {
    if (!host.state().services.has(service)) return null; // the entry answers NOT_FOUND
    if (host.linearizableNow()) {
      const answer = await host.readNow('assignment login', (db, snapshot) => {
        const stored = userRecords(db, snapshot, email, service);
        return stored.length === 0 ? undefined : unchangedFrom(db, snapshot, service, stored, request);
      });
      if (answer === undefined || answer === null) return null; // the entry decides: no read was served
      host.countLeaseRead();
      return answer;
    }
    if (!(await host.readNow('assignment login', (db, snapshot) => db.getSync(lookupKey(email, service), { snapshot }) !== undefined))) return null;
    try {
      await host.barrier();
    } catch {
      return null;
    }
    return host.readNow('assignment login', (db, snapshot) => unchangedFrom(db, snapshot, service, userRecords(db, snapshot, email, service), request));
  };

  /** Backoff 1 on a node that is up and open to new users (a downed or backed-off node is skipped already); whether it was set. */
  const closeToNewUsers = async (service: string, node: string): Promise<boolean> => {
    const n = serviceOf(service).nodes.get(node);
    if (n === undefined) throw new VeraError('NOT_FOUND', `${service} has no node ${node}`);
    if (n.downed || n.backoff !== 0) return false;
    await propose({ op: 'updateNode', service, node, backoff: 1 });
    return true;
  };

  /**
   * Replaces up to `max` of the node's current users in one entry. This member picks them
   * from its state after a linearizable barrier, and the entry names them: applying it (on
   * every member, while later entries wait behind it) is then point reads only, not a scan
   * of the node's index through LevelDB's thread pool. A user that moved in between is
   * skipped. Finished once the node's load, which counts its current records, is 0.
   */
  const replaceSome = async (service: string, node: string, max: number): Promise<{ replaced: number; finished: boolean }> => {
    await host.barrier();
    const uids = await host.reader.read('assignment decommission', (db, snapshot) => currentUids(db, snapshot, service, node, max));
    if (uids.length === 0) return { replaced: 0, finished: true };
    const v = resultOf(await propose({ op: 'decommission', service, node, uids, max: MAX_BATCH }), 'decommission');
    const load = host.state().services.get(service)?.nodes.get(node)?.load ?? 0;
    return { replaced: v.replaced, finished: load === 0 };
  };

  /** Replaces every current record on the node, a batch per entry; how many. */
  const decommission = async (service: string, node: string): Promise<number> => {
    let replaced = 0;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const step = await replaceSome(service, node, MAX_BATCH);
      replaced += step.replaced;
      if (step.finished) return replaced;
    }
    throw new VeraError('UNAVAILABLE', `${node} still has users after ${MAX_ROUNDS} batches; ask again`, { retryAfterMs: 0 });
  };

  return {
    handlers: {
      service: async (r) => {
        const { pattern, releaseRate, newUsers, topN } = r;
        const given = { ...(pattern === undefined ? {} : { pattern }), ...(releaseRate === undefined ? {} : { releaseRate }), ...(newUsers === undefined ? {} : { newUsers }), ...(topN === undefined ? {} : { topN }) };
        const v = resultOf(await propose({ op: 'service', service: r.service, settings: given }), 'service');
        return { service: r.service, created: v.created, ...v.settings };
      },
      services: async (r) => {
        await barrier(r);
        const services = [...host.state().services].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
        return { services: services.map(([service, s]) => ({ service, ...s.settings, nodes: s.nodes.size })) };
      },
      addNode: async (r) => {
        await propose({ op: 'addNode', service: r.service, node: r.node, capacity: r.capacity, available: r.available ?? r.capacity, downed: r.downed ?? false, backoff: r.backoff ?? 0 });
        return {};
      },
      updateNode: async ({ service, node, capacity, available, downed, backoff }) => {
        const changes = { ...(capacity === undefined ? {} : { capacity }), ...(available === undefined ? {} : { available }), ...(downed === undefined ? {} : { downed }), ...(backoff === undefined ? {} : { backoff }) };
        await propose({ op: 'updateNode', service, node, ...changes });
        return {};
      },
      removeNode: async ({ service, node }) => {
        // Down first, so no new user lands on it, then its users are replaced a batch at a time.
        await propose({ op: 'updateNode', service, node, downed: true });
        const replaced = await decommission(service, node);
        await propose({ op: 'removeNode', service, node });
        return { replaced };
      },
      nodes: async (r) => {
        await barrier(r);
        return { nodes: describeNodes(serviceOf(r.service)) };
      },
      user: async (r) => {
        const { service, email } = r;
        const request = { generation: r.generation, keysChangedAt: r.keysChangedAt, clientState: r.clientState };
        // A returning user whose request changes nothing is answered from a linearizable read.
        const unchanged = await answerUnchanged(service, email, request);
        if (unchanged !== null) return { ...unchanged, oldClientStates: [...unchanged.oldClientStates], created: false, allocated: false };
        // The leader's choice among the top N rides in the entry, so every member allocates alike.
        const topN = host.state().services.get(service)?.settings.topN ?? 1;
        const pick = topN > 1 ? randomInt(0, 2 ** 32 - 1) : 0;
        const v = resultOf(await propose({ op: 'login', service, email, ...request, pick }), 'login');
        if ('refused' in v) throw new VeraError(REFUSAL_CODE[v.refused], `${v.refused}: ${v.message}`, { reason: v.refused });
        return { ...v.user, oldClientStates: [...v.user.oldClientStates], created: v.created, allocated: v.allocated };
      },
      lookup: async (r) => {
        await barrier(r);
        const { service, email } = r;
        const s = serviceOf(service);
        const records = newestFirst(await host.readNow('assignment lookup', (db, snapshot) => userRecords(db, snapshot, email, service)));
        const current = records[0];
        if (current === undefined) throw new VeraError('NOT_FOUND', `${service} has no user ${email}`);
        let firstSeenAt = current.createdAt;
        for (const x of records) if (x.createdAt < firstSeenAt) firstSeenAt = x.createdAt;
        return {
          current: { ...current, endpoint: endpointOf(s.settings.pattern, service, current.node, current.uid) },
          oldClientStates: oldClientStates(records),
          firstSeenAt,
          records: records.map((x) => ({ ...x })),
        };
      },
      retire: async ({ email, service }) => {
        const v = await propose({ op: 'retire', email, ...(service === undefined ? {} : { service }) });
        return { services: v.op === 'retire' ? v.services : 0 };
      },
      decommission: async ({ service, node, uids, max }) => {
        if (uids !== undefined) {
          const v = await propose({ op: 'decommission', service, node, uids, max: MAX_BATCH });
          return { replaced: v.op === 'decommission' ? v.replaced : 0 };
        }
        if (max !== undefined) {
          // One batch (a drain's step): the node closed first, as for the whole node.
          const closed = await closeToNewUsers(service, node);
          const step = await replaceSome(service, node, max);
          // `finished`, not `more`: a reply with more: true is a partial reply in the protocol.
          return { replaced: step.replaced, finished: step.finished, closed };
        }
        // A node decommissioned whole takes no new users until an operator clears its backoff:
        // its load falls to 0 as its users are replaced, and an empty node ranks first, so
        // without this its users would be allocated straight back to it.
        const closed = await closeToNewUsers(service, node);
        return { replaced: await decommission(service, node), closed };
      },
      event: async ({ kind, email, generation, eventId }) => {
        const v = resultOf(
          await propose({ op: 'event', kind, email, ...(generation === undefined ? {} : { generation }), ...(eventId === undefined ? {} : { eventId }) }),
          'event',
        );
        return { changed: v.changed, ...(v.duplicate === true ? { duplicate: true } : {}) };
      },
      // An account event into a journal (the durable input an events worker consumes), keyed by its
      // id: added again while it waits, it merges; once applied, the id makes a repeat change nothing.
      enqueueEvent: async ({ journal, eventId, kind, email, generation }) => {
        const data = { kind, email, ...(generation === undefined ? {} : { generation }) };
        await host.proposeTo('journal', { op: 'add', name: journal, items: [{ key: eventId, data }] });
        return { queued: true };
      },
      purge: (r) => purge(r),
      // A purge the leader runs until done, batch by batch (purge-duty.ts); its progress is replicated.
      purgeStart: async (r) => {
        const journal = r.journal ?? '';
        if (journal !== '' && !(await journalIsLive(host, journal))) throw new VeraError('NOT_FOUND', `no journal ${journal}`);
        const settings = { graceMs: r.graceMs, max: r.max, force: r.force, uidMin: r.uidMin ?? 0, uidMax: r.uidMax ?? 0, overrideNode: r.overrideNode ?? '', journal };
        const v = resultOf(await propose({ op: 'purgeStart', service: r.service, settings }), 'purgeJob');
        return describePurgeJob(v.service, v.job);
      },
      purgeStop: async ({ service }) => {
        const v = resultOf(await propose({ op: 'purgeStop', service }), 'purgeJob');
        return { ...describePurgeJob(v.service, v.job), stopped: v.changed };
      },
      purgeStatus: async (r) => {
        await barrier(r);
        const { service } = r;
        serviceOf(service);
        const job = host.state().purgeJobs.get(service);
        if (job === undefined) throw new VeraError('NOT_FOUND', `${service} has no purge job`);
        return describePurgeJob(service, job);
      },
      nodeUsers: async (r) => {
        await barrier(r);
        const { service, node } = r;
        if (!serviceOf(service).nodes.has(node)) throw new VeraError('NOT_FOUND', `${service} has no node ${node}`);
        const page = await host.reader.read('assignment node users', (db, snapshot) => usersOnNode(db, snapshot, service, node, r.limit ?? 100, r.after ?? 0));
        const users = page.users.map((u) => ({ uid: u.uid, email: u.email, generation: u.generation, keysChangedAt: u.keysChangedAt, clientState: u.clientState, createdAt: u.createdAt }));
        return { users, next: page.more ? page.users[page.users.length - 1]!.uid : null };
      },
      importUsers: async ({ service, users }) => {
        const v = resultOf(await propose({ op: 'importUsers', service, users: users.map((u) => ({ ...u, service })) }), 'importUsers');
        return { imported: v.imported, present: v.present, repaired: v.repaired };
      },
      place: async ({ service, email, node }) => {
        const v = resultOf(await propose({ op: 'place', service, email, node }), 'place');
        return { ...v.user, oldClientStates: [...v.user.oldClientStates], created: v.created, moved: v.moved };
      },
      // What a purge would take now, counted without touching anything: a read, unlike a dry-run purge (an admin's act, audited).
      purgeable: async (r) => {
        await barrier(r);
        const { service, max } = r;
        serviceOf(service);
        const before = Math.max(0, now() - r.graceMs);
        const records = await host.reader.read('assignment purgeable', (db, snapshot) => countReplacedBefore(db, snapshot, service, before, max + 1));
        return { service, before, records: Math.min(records, max), capped: records > max };
      },
      count: async (r) => {
        await barrier(r);
        const { service } = r;
        serviceOf(service);
        const at = r.at ?? now();
        const users = await oneCountAtATime(() => host.reader.read('assignment count', (db, snapshot) => countUsers(db, snapshot, service, at)));
        return { service, at, users };
      },
    },
    duties: [purgeDuty(host.leaderOnly)],
    http: [httpRoute(host)],
    applied: (_index, v) => {
      if (v === null || v.op !== 'login') return;
      let c = counters.get(v.service);
      if (c === undefined) {
        c = { allocations: new Map(), refusals: new Map() };
        counters.set(v.service, c);
      }
      if ('refused' in v) c.refusals.set(v.refused, (c.refusals.get(v.refused) ?? 0) + 1);
      else if (v.allocated) c.allocations.set(v.user.node, (c.allocations.get(v.user.node) ?? 0) + 1);
    },
    /** Per node: load, capacity, available; allocations and refusals this member applied. */
    metrics: async () => {
      const services = host.state().services;
      const lines: string[] = [];
      for (const [field, help] of [
        ['load', 'Current users assigned to the node.'],
        ['capacity', 'Users the node may hold.'],
        ['available', 'Slots allocation may take before capacity is released again.'],
      ] as const) {
        lines.push(...metricLines(`vera_assign_node_${field}`, 'gauge', help, [...services].flatMap(([service, s]) => [...s.nodes].map(([node, n]): MetricSample => [{ service, node }, n[field]]))));
      }
      const allocations = [...counters].flatMap(([service, c]) => [...c.allocations].map(([node, n]): MetricSample => [{ service, node }, n]));
      lines.push(...metricLines('vera_assign_allocations_total', 'counter', 'Users allocated to the node, applied on this member since it started.', allocations));
      const refusals = [...counters].flatMap(([service, c]) => [...c.refusals].map(([reason, n]): MetricSample => [{ service, reason }, n]));
      lines.push(...metricLines('vera_assign_refusals_total', 'counter', 'Requests refused, by reason (no-node-available is an allocation failure), applied on this member since it started.', refusals));
      return `${lines.join('\n')}\n`;
    },
  };

  /**
   * Purges one batch of records replaced longer than the grace period ago. With a journal,
   * each record's storage-node cleanup is added to it first (keyed by uid, so asking again
   * merges rather than doubles), then the records are deleted: a storage node that is
   * down delays its cleanup instead of losing it.
   */
  async function purge(r: RequestOfSchema<Ops['purge']>): Promise<PurgeResult> {
    await host.barrier();
    const { service, force, journal, overrideNode } = r;
    const s = serviceOf(service);
    const before = Math.max(0, now() - r.graceMs);
    const after = parseCursor(r.after);
    const { chosen, skipped, next } = await selectPurgeBatch(host, service, s, {
      before,
      max: r.max,
      force,
      ...(r.uidMin === undefined ? {} : { uidMin: r.uidMin }),
      ...(r.uidMax === undefined ? {} : { uidMax: r.uidMax }),
      ...(after === undefined ? {} : { after }),
    });
    if (r.dryRun) return { dryRun: true, purged: chosen.map((u) => ({ uid: u.uid, email: u.email, node: u.node, replacedAt: u.replacedAt })), skipped, next };
    let overridden = 0;
    let activeData = 0;
    if (journal !== undefined && chosen.length > 0) {
      const jobs = await cleanupJobs(host, service, s, chosen, overrideNode);
      overridden = jobs.overridden;
      activeData = chosen.length - jobs.items.length;
      await queueCleanups(host, journal, jobs.items);
    }
    const v = chosen.length === 0 ? null : resultOf(await propose({ op: 'purge', service, before, uids: chosen.map((u) => u.uid), force }), 'purge');
    return {
      dryRun: false,
      purged: v === null ? [] : v.purged.map((p) => ({ ...p })),
      skipped: skipped + (v?.skipped ?? 0),
      next,
      ...(overrideNode === undefined ? {} : { overridden, activeData }),
    };
  }
}

/** The op each GET or POST stands for, by its name on the wire. */
const SCHEMA_BY_NAME = new Map<string, AnyOpSchema>(Object.values(ASSIGN_SCHEMAS).map((schema) => [schema.name, schema]));

/**
 * GET /v1/assign/services, /services/S (its nodes), /services/S/users/EMAIL (lookup),
 * /services/S/nodes/NODE/users?after=UID&limit=N (a node's users, a page),
 * /services/S/count?at=MS, /services/S/purge (its purge job), each with ?consistency=stale (default) or linearizable; POST /v1/assign/OP with the op's fields as a JSON object
 * (OP is an op name without `assign.`, e.g. POST /v1/assign/user).
 */
function httpRoute(host: AssignHost): PluginRoute {
  const call = (op: string, fields: Readonly<Record<string, unknown>>): FamilyRequest => {
    const schema = SCHEMA_BY_NAME.get(op);
    if (schema === undefined) throw new VeraError('NOT_FOUND', `no assignment operation ${op}`);
    return opRequest(schema, fields, host.limits);
  };
  return {
    prefix: '/v1/assign',
    get: (rest, url) => {
      const parts = rest.split('/').filter((p) => p !== '').map(decodeURIComponent);
      if (parts[0] !== 'services' || parts.length > 5) throw new VeraError('NOT_FOUND', `no endpoint ${url.pathname}`);
      // Like GET /v1/data: this member's state unless ?consistency=linearizable.
      const consistency = url.searchParams.get('consistency') ?? 'stale';
      if (parts.length === 1) return call('assign.services', { consistency });
      const service = parts[1]!;
      if (parts.length === 2) return call('assign.nodes', { service, consistency });
      if (parts.length === 3 && parts[2] === 'count') {
        const at = url.searchParams.get('at');
        return call('assign.count', { service, consistency, ...(at === null ? {} : { at: Number(at) }) });
      }
      if (parts.length === 3 && parts[2] === 'purge') return call('assign.purgeStatus', { service, consistency });
      if (parts.length === 4 && parts[2] === 'users') return call('assign.lookup', { service, email: parts[3], consistency });
      if (parts.length === 5 && parts[2] === 'nodes' && parts[4] === 'users') {
        const page = Object.fromEntries(['after', 'limit'].flatMap((k) => (url.searchParams.get(k) === null ? [] : [[k, Number(url.searchParams.get(k))]])));
        return call('assign.nodeUsers', { service, node: parts[3], consistency, ...page });
      }
      throw new VeraError('NOT_FOUND', `no endpoint ${url.pathname}`);
    },
    post: (rest, url, body) => {
      const op = rest.replace(/^\//, '');
      if (op === '' || op.includes('/')) throw new VeraError('NOT_FOUND', `no endpoint ${url.pathname}`);
      return call(`assign.${op}`, body);
    },
  };
}

/** What each op touches: the service it names ('assign:SERVICE'), or every service ('assign:'). */
const onService =
  (perm: PluginNeed['perm']) =>
  ({ service }: { readonly service: string }): readonly PluginNeed[] => [{ perm, resource: `assign:${service}` }];

/** A purge may also hand the purged records to a journal. */
const purgeNeeds = ({ service, journal }: { readonly service: string; readonly journal?: string }): readonly PluginNeed[] => [
  { perm: 'admin', resource: `assign:${service}` },
  ...(journal === undefined ? [] : [{ perm: 'write' as const, resource: `journal:${journal}` }]),
];

export const plugin: Plugin<Ops, AssignState, AssignValue, AssignCommand> = {
  ops: ASSIGN_SCHEMAS,
  needs: {
    service: onService('admin'),
    addNode: onService('admin'),
    updateNode: onService('admin'),
    removeNode: onService('admin'),
    decommission: onService('admin'),
    place: onService('admin'),
    importUsers: onService('admin'),
    purge: purgeNeeds,
    purgeStart: purgeNeeds,
    purgeStop: onService('admin'),
    purgeStatus: onService('read'),
    user: onService('write'),
    retire: ({ service }) => [{ perm: 'write', resource: service === undefined ? 'assign:' : `assign:${service}` }],
    event: () => [{ perm: 'write', resource: 'assign:' }],
    enqueueEvent: ({ journal }) => [{ perm: 'write', resource: `journal:${journal}` }],
    lookup: onService('read'),
    nodes: onService('read'),
    count: onService('read'),
    nodeUsers: onService('read'),
    purgeable: onService('read'),
    services: () => [{ perm: 'read', resource: 'assign:' }],
  },
  touchesNoLists: "services, nodes and user records live in the family's own buckets, not in lists",
  createServer,
};
