// Node assignment on the server: its client ops (wire.ts checks them), the
// multi-entry operations (decommissioning a node in bounded batches, removing
// it, purging with the storage-node work queued in a journal first), its HTTP
// API and its metrics.
import { randomInt } from 'node:crypto';
import { VeraError, type FamilyRequest, type FamilyResult } from '../../protocol/index.js';
import type { FrontEnd } from '../../server/front/context.js';
import { expectOk } from '../../server/front/context.js';
import { familyOps, proposeTimed, type FamilyHttpRoute, type FamilyOpCall, type ServerPart } from '../../server/front/family-part.js';
import type { Need } from '../../server/guard/access.js';
import type { ApplyOutcome, VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../../statemachine/family.js';
import { rulesAt, unchangedLogin, type Assignment, type AssignValue, type LoginRefusal } from './apply.js';
import { cluster } from '../cluster/index.js';
import { assign } from './index.js';
import { lookupKey, nodeKey, serviceKey } from './keys.js';
import { countReplacedBefore, countUsers, currentUids, userRecords, usersOnNode } from './reads.js';
import { decodeService, type ServiceSettings, type UserRecord } from './records.js';
import { newestFirst, oldClientStates, type LoginRequest } from './rules.js';
import type { ServiceState } from './state.js';
import { ASSIGN_OPS, endpointOf, MAX_BATCH } from './wire.js';
import { cleanupJobs, parseCursor, proposeAssign, queueCleanups, selectPurgeBatch } from './purge-batch.js';
import { purgeJobs } from './purge-duty.js';
import { describePurgeJob } from './purge-job.js';
import { journal } from '../journal/index.js';

/** Batches one decommission or remove request proposes at most before answering (a million users at MAX_BATCH each). */
const MAX_ROUNDS = 1000;

const propose = proposeAssign;

function serviceOf(fe: FrontEnd, name: string): ServiceState {
  const s = fe.node.stateMachine.stateOf(assign).services.get(name);
  if (s === undefined) throw new VeraError('NOT_FOUND', `no service ${name}`);
  return s;
}

/** Tokenserver's refusals as protocol errors: the reason rides beside the code. */
const REFUSAL_CODE: Record<LoginRefusal, 'CONFLICT' | 'FORBIDDEN' | 'UNAVAILABLE' | 'QUOTA_EXCEEDED'> = {
  'invalid-generation': 'CONFLICT',
  'invalid-keysChangedAt': 'CONFLICT',
  'invalid-client-state': 'CONFLICT',
  'new-users-disabled': 'FORBIDDEN',
  'too-many-records': 'QUOTA_EXCEEDED',
  'no-node-available': 'UNAVAILABLE',
};

function describeNodes(s: ServiceState): FamilyResult[] {
  return [...s.nodes]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([node, n]) => ({ node, capacity: n.capacity, load: n.load, available: n.available, downed: n.downed, backoff: n.backoff }));
}

function describeRecord(r: UserRecord): FamilyResult {
  return { ...r };
}

type Handler = (call: FamilyOpCall) => Promise<FamilyResult>;

const handlers: Record<string, Handler> = {
  'assign.service': async ({ fe, request: r }) => {
    const given: Partial<ServiceSettings> = Object.fromEntries(['pattern', 'releaseRate', 'newUsers', 'topN'].filter((k) => r[k] !== undefined).map((k) => [k, r[k]]));
    const v = await propose(fe, { op: 'service', service: r.service as string, settings: given });
    if (v.op !== 'service') throw new VeraError('INTERNAL', 'a service entry gave another result');
    return { service: r.service, created: v.created, ...v.settings };
  },
  'assign.services': async ({ fe, request: r }) => {
    await barrier(fe, r);
    const services = [...fe.node.stateMachine.stateOf(assign).services].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return { services: services.map(([service, s]) => ({ service, ...s.settings, nodes: s.nodes.size })) };
  },
  'assign.addNode': async ({ fe, request: r }) => {
    const capacity = r.capacity as number;
    await propose(fe, {
      op: 'addNode',
      service: r.service as string,
      node: r.node as string,
      capacity,
      available: (r.available as number | undefined) ?? capacity,
      downed: (r.downed as boolean | undefined) ?? false,
      backoff: (r.backoff as number | undefined) ?? 0,
    });
    return {};
  },
  'assign.updateNode': async ({ fe, request: r }) => {
    const { id: _id, op: _op, ...fields } = r;
    await propose(fe, { op: 'updateNode', ...(fields as { service: string; node: string }) });
    return {};
  },
  'assign.removeNode': async ({ fe, request: r }) => {
    const service = r.service as string;
    const node = r.node as string;
    // Down first, so no new user lands on it, then its users are replaced a batch at a time.
    await propose(fe, { op: 'updateNode', service, node, downed: true });
    const replaced = await decommission(fe, service, node);
    await propose(fe, { op: 'removeNode', service, node });
    return { replaced };
  },
  'assign.nodes': async ({ fe, request: r }) => {
    await barrier(fe, r);
    return { nodes: describeNodes(serviceOf(fe, r.service as string)) };
  },
  'assign.user': async ({ fe, request: r }) => {
    const service = r.service as string;
    const request = { generation: r.generation as number, keysChangedAt: r.keysChangedAt as number, clientState: r.clientState as string };
    // A returning user whose request changes nothing is answered from a linearizable read.
    const unchanged = await answerUnchanged(fe, service, r.email as string, request);
    if (unchanged !== null) return { ...unchanged, oldClientStates: [...unchanged.oldClientStates], created: false, allocated: false };
    // The leader's choice among the top N rides in the entry, so every member allocates alike.
    const topN = fe.node.stateMachine.stateOf(assign).services.get(service)?.settings.topN ?? 1;
    const pick = topN > 1 ? randomInt(0, 2 ** 32 - 1) : 0;
    const v = await propose(fe, { op: 'login', service, email: r.email as string, ...request, pick });
    if (v.op !== 'login') throw new VeraError('INTERNAL', 'a login gave another result');
    if ('refused' in v) throw new VeraError(REFUSAL_CODE[v.refused], `${v.refused}: ${v.message}`, { reason: v.refused });
    return { ...v.user, oldClientStates: [...v.user.oldClientStates], created: v.created, allocated: v.allocated };
  },
  'assign.lookup': async ({ fe, request: r }) => {
    await barrier(fe, r);
    const service = r.service as string;
    const s = serviceOf(fe, service);
    const records = newestFirst(await fe.node.stateMachine.readNow('assignment lookup', (db, snapshot) => userRecords(db, snapshot, r.email as string, service)));
    if (records.length === 0) throw new VeraError('NOT_FOUND', `${service} has no user ${r.email as string}`);
    const current = records[0]!;
    let firstSeenAt = current.createdAt;
    for (const x of records) if (x.createdAt < firstSeenAt) firstSeenAt = x.createdAt;
    return {
      current: { ...describeRecord(current), endpoint: endpointOf(s.settings.pattern, service, current.node, current.uid) },
      oldClientStates: oldClientStates(records),
      firstSeenAt,
      records: records.map(describeRecord),
    };
  },
  'assign.retire': async ({ fe, request: r }) => {
    const v = await propose(fe, { op: 'retire', email: r.email as string, ...(r.service === undefined ? {} : { service: r.service as string }) });
    return { services: v.op === 'retire' ? v.services : 0 };
  },
  'assign.decommission': async ({ fe, request: r }) => {
    const service = r.service as string;
    const node = r.node as string;
    if (r.uids !== undefined) {
      const v = await propose(fe, { op: 'decommission', service, node, uids: r.uids as number[], max: MAX_BATCH });
      return { replaced: v.op === 'decommission' ? v.replaced : 0 };
    }
    if (r.max !== undefined) {
      // One batch (a drain's step): the node closed first, as for the whole node.
      const closed = await closeToNewUsers(fe, service, node);
      const step = await replaceSome(fe, service, node, r.max as number);
      // `finished`, not `more`: a reply with more: true is a partial reply in the protocol.
      return { replaced: step.replaced, finished: step.finished, closed };
    }
    // A node decommissioned whole takes no new users until an operator clears its backoff:
    // its load falls to 0 as its users are replaced, and an empty node ranks first, so
    // without this its users would be allocated straight back to it.
    const closed = await closeToNewUsers(fe, service, node);
    return { replaced: await decommission(fe, service, node), closed };
  },
  'assign.event': async ({ fe, request: r }) => {
    const v = await propose(fe, {
      op: 'event',
      kind: r.kind as 'delete',
      email: r.email as string,
      ...(r.generation === undefined ? {} : { generation: r.generation as number }),
      ...(r.eventId === undefined ? {} : { eventId: r.eventId as string }),
    });
    if (v.op !== 'event') throw new VeraError('INTERNAL', 'an event entry gave another result');
    return { changed: v.changed, ...(v.duplicate === true ? { duplicate: true } : {}) };
  },
  // An account event into a journal (the durable input an events worker consumes), keyed by its
  // id: added again while it waits, it merges; once applied, the id makes a repeat change nothing.
  'assign.enqueueEvent': async ({ fe, request: r }) => {
    const data = { kind: r.kind, email: r.email, ...(r.generation === undefined ? {} : { generation: r.generation }) };
    expectOk(await proposeTimed(fe, { family: 'journal', op: 'add', name: r.journal as string, items: [{ key: r.eventId as string, data }] } as never));
    return { queued: true };
  },
  'assign.purge': async ({ fe, request: r }) => purge(fe, r),
  // A purge the leader runs until done, batch by batch (purge-duty.ts); its progress is replicated.
  'assign.purgeStart': async ({ fe, request: r }) => {
    const journalName = (r.journal as string | undefined) ?? '';
    if (journalName !== '' && fe.node.stateMachine.stateOf(journal).live(journalName) === null) throw new VeraError('NOT_FOUND', `no journal ${journalName}`);
    const settings = {
      graceMs: r.graceMs as number,
      max: r.max as number,
      force: r.force as boolean,
      uidMin: (r.uidMin as number | undefined) ?? 0,
      uidMax: (r.uidMax as number | undefined) ?? 0,
      overrideNode: (r.overrideNode as string | undefined) ?? '',
      journal: journalName,
    };
    const v = await propose(fe, { op: 'purgeStart', service: r.service as string, settings });
    if (v.op !== 'purgeJob') throw new VeraError('INTERNAL', 'a purge job entry gave another result');
    return describePurgeJob(v.service, v.job);
  },
  'assign.purgeStop': async ({ fe, request: r }) => {
    const v = await propose(fe, { op: 'purgeStop', service: r.service as string });
    if (v.op !== 'purgeJob') throw new VeraError('INTERNAL', 'a purge job entry gave another result');
    return { ...describePurgeJob(v.service, v.job), stopped: v.changed };
  },
  'assign.purgeStatus': async ({ fe, request: r }) => {
    await barrier(fe, r);
    const service = r.service as string;
    serviceOf(fe, service);
    const job = fe.node.stateMachine.stateOf(assign).purgeJobs.get(service);
    if (job === undefined) throw new VeraError('NOT_FOUND', `${service} has no purge job`);
    return describePurgeJob(service, job);
  },
  'assign.nodeUsers': async ({ fe, request: r }) => {
    await barrier(fe, r);
    const service = r.service as string;
    const node = r.node as string;
    if (!serviceOf(fe, service).nodes.has(node)) throw new VeraError('NOT_FOUND', `${service} has no node ${node}`);
    const limit = (r.limit as number | undefined) ?? 100;
    const page = await fe.node.stateMachine.read('assignment node users', (db, snapshot) => usersOnNode(db, snapshot, service, node, limit, (r.after as number | undefined) ?? 0));
    const users = page.users.map((u) => ({ uid: u.uid, email: u.email, generation: u.generation, keysChangedAt: u.keysChangedAt, clientState: u.clientState, createdAt: u.createdAt }));
    return { users, next: page.more ? page.users[page.users.length - 1]!.uid : null };
  },
  'assign.importUsers': async ({ fe, request: r }) => {
    const service = r.service as string;
    const users = (r.users as Array<Record<string, unknown>>).map((u) => ({ ...u, service }) as unknown as UserRecord);
    const v = await propose(fe, { op: 'importUsers', service, users });
    if (v.op !== 'importUsers') throw new VeraError('INTERNAL', 'an import entry gave another result');
    return { imported: v.imported, present: v.present, repaired: v.repaired };
  },
  'assign.place': async ({ fe, request: r }) => {
    const v = await propose(fe, { op: 'place', service: r.service as string, email: r.email as string, node: r.node as string });
    if (v.op !== 'place') throw new VeraError('INTERNAL', 'a place entry gave another result');
    return { ...v.user, oldClientStates: [...v.user.oldClientStates], created: v.created, moved: v.moved };
  },
  // What a purge would take now, counted without touching anything: a read, unlike a dry-run purge (an admin's act, audited).
  'assign.purgeable': async ({ fe, request: r }) => {
    await barrier(fe, r);
    const service = r.service as string;
    serviceOf(fe, service);
    const before = Math.max(0, Math.max(fe.node.stateMachine.clock, Date.now()) - (r.graceMs as number));
    const max = r.max as number;
    const records = await fe.node.stateMachine.read('assignment purgeable', (db, snapshot) => countReplacedBefore(db, snapshot, service, before, max + 1));
    return { service, before, records: Math.min(records, max), capped: records > max };
  },
  'assign.count': async ({ fe, request: r }) => {
    await barrier(fe, r);
    const service = r.service as string;
    serviceOf(fe, service);
    const at = (r.at as number | undefined) ?? Math.max(fe.node.stateMachine.clock, Date.now());
    // A count reads every record: one at a time per member, so clients asking at once cannot multiply the scan.
    const users = await oneCountAtATime(fe, () => fe.node.stateMachine.read('assignment count', (db, snapshot) => countUsers(db, snapshot, service, at)));
    return { service, at, users };
  },
};

const countQueues = new WeakMap<FrontEnd, Promise<unknown>>();

function oneCountAtATime<T>(fe: FrontEnd, scan: () => Promise<T>): Promise<T> {
  const run = (countQueues.get(fe) ?? Promise.resolve()).then(scan);
  countQueues.set(fe, run.catch(() => undefined));
  return run;
}

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
async function answerUnchanged(fe: FrontEnd, service: string, email: string, request: LoginRequest): Promise<Assignment | null> {
  const sm = fe.node.stateMachine;
  if (!sm.stateOf(assign).services.has(service)) return null; // the entry answers NOT_FOUND
  if (fe.node.linearizableNow()) {
    const answer = await sm.readNow('assignment login', (db, snapshot) => {
      const stored = userRecords(db, snapshot, email, service);
      return stored.length === 0 ? undefined : unchangedFrom(db, snapshot, sm, service, stored, request);
    });
    if (answer === undefined || answer === null) return null; // the entry decides: no read was served
    fe.node.countLeaseRead();
    return answer;
  }
  if (!(await sm.readNow('assignment login', (db, snapshot) => db.getSync(lookupKey(email, service), { snapshot }) !== undefined))) return null;
  try {
    await fe.node.linearizableBarrier(fe.readTimeoutMs);
  } catch {
    return null;
  }
  return sm.readNow('assignment login', (db, snapshot) => unchangedFrom(db, snapshot, sm, service, userRecords(db, snapshot, email, service), request));
}

/** The unchanged answer from one snapshot of the db: the service's pattern, the user's records (read from it), whether their node exists. */
function unchangedFrom(
  db: VeraDb,
  snapshot: DbSnapshot,
  sm: FrontEnd['node']['stateMachine'],
  service: string,
  stored: readonly UserRecord[],
  request: LoginRequest,
): Assignment | null {
  const raw = db.getSync(serviceKey(service), { snapshot });
  if (raw === undefined) return null;
  // The rules the entry would apply now: those of the cluster's active version.
  const rules = rulesAt(sm.stateOf(cluster).active);
  return unchangedLogin(decodeService(raw).pattern, service, stored, request, (node) => db.getSync(nodeKey(service, node), { snapshot }) !== undefined, rules);
}

/** Reads are linearizable unless the request asks for this member's state as it stands. */
async function barrier(fe: FrontEnd, r: FamilyOpCall['request']): Promise<void> {
  if (r.consistency !== 'stale') await fe.node.linearizableBarrier(fe.readTimeoutMs);
}

/** Backoff 1 on a node that is up and open to new users (a downed or backed-off node is skipped already); whether it was set. */
async function closeToNewUsers(fe: FrontEnd, service: string, node: string): Promise<boolean> {
  const n = serviceOf(fe, service).nodes.get(node);
  if (n === undefined) throw new VeraError('NOT_FOUND', `${service} has no node ${node}`);
  if (n.downed || n.backoff !== 0) return false;
  await propose(fe, { op: 'updateNode', service, node, backoff: 1 });
  return true;
}

/**
 * Replaces up to `max` of the node's current users in one entry. This member picks them
 * from its state after a linearizable barrier, and the entry names them: applying it (on
 * every member, while later entries wait behind it) is then point reads only, not a scan
 * of the node's index through LevelDB's thread pool. A user that moved in between is
 * skipped. Finished once the node's load, which counts its current records, is 0.
 */
async function replaceSome(fe: FrontEnd, service: string, node: string, max: number): Promise<{ replaced: number; finished: boolean }> {
  await fe.node.linearizableBarrier(fe.readTimeoutMs);
  const uids = await fe.node.stateMachine.read('assignment decommission', (db, snapshot) => currentUids(db, snapshot, service, node, max));
  if (uids.length === 0) return { replaced: 0, finished: true };
  const v = await propose(fe, { op: 'decommission', service, node, uids, max: MAX_BATCH });
  if (v.op !== 'decommission') throw new VeraError('INTERNAL', 'decommission gave another result');
  const load = fe.node.stateMachine.stateOf(assign).services.get(service)?.nodes.get(node)?.load ?? 0;
  return { replaced: v.replaced, finished: load === 0 };
}

/** Replaces every current record on the node, a batch per entry; how many. */
async function decommission(fe: FrontEnd, service: string, node: string): Promise<number> {
  let replaced = 0;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const step = await replaceSome(fe, service, node, MAX_BATCH);
    replaced += step.replaced;
    if (step.finished) return replaced;
  }
  throw new VeraError('UNAVAILABLE', `${node} still has users after ${MAX_ROUNDS} batches; ask again`, { retryAfterMs: 0 });
}

/**
 * Purges one batch of records replaced longer than the grace period ago. With a journal,
 * each record's storage-node cleanup is added to it first (keyed by uid, so asking again
 * merges rather than doubles), then the records are deleted: a storage node that is
 * down delays its cleanup instead of losing it.
 */
async function purge(fe: FrontEnd, r: FamilyOpCall['request']): Promise<FamilyResult> {
  await fe.node.linearizableBarrier(fe.readTimeoutMs);
  const service = r.service as string;
  const s = serviceOf(fe, service);
  const before = Math.max(0, Math.max(fe.node.stateMachine.clock, Date.now()) - (r.graceMs as number));
  const force = r.force as boolean;
  const after = parseCursor(r.after as string | undefined);
  const { chosen, skipped, next } = await selectPurgeBatch(fe, service, s, {
    before,
    max: r.max as number,
    force,
    ...(r.uidMin === undefined ? {} : { uidMin: r.uidMin as number }),
    ...(r.uidMax === undefined ? {} : { uidMax: r.uidMax as number }),
    ...(after === undefined ? {} : { after }),
  });
  const describe = (u: UserRecord): FamilyResult => ({ uid: u.uid, email: u.email, node: u.node, replacedAt: u.replacedAt });
  if (r.dryRun as boolean) return { dryRun: true, purged: chosen.map(describe), skipped, next };
  const journalName = r.journal as string | undefined;
  let overridden = 0;
  let activeData = 0;
  if (journalName !== undefined && chosen.length > 0) {
    const jobs = await cleanupJobs(fe, service, s, chosen, r.overrideNode as string | undefined);
    overridden = jobs.overridden;
    activeData = chosen.length - jobs.items.length;
    await queueCleanups(fe, journalName, jobs.items);
  }
  const v = chosen.length === 0 ? null : await propose(fe, { op: 'purge', service, before, uids: chosen.map((u) => u.uid), force });
  if (v !== null && v.op !== 'purge') throw new VeraError('INTERNAL', 'purge gave another result');
  return {
    dryRun: false,
    purged: v === null ? [] : v.purged.map((p) => ({ ...p })),
    skipped: skipped + (v?.skipped ?? 0),
    next,
    ...(r.overrideNode === undefined ? {} : { overridden, activeData }),
  };
}

/** What each op touches: the service it names ('assign:SERVICE'), or every service ('assign:'). */
const onService =
  (perm: Need['perm']) =>
  (r: FamilyRequest): readonly Need[] => [{ perm, resource: `assign:${r.service as string}` }];
const NEEDS: Record<string, (r: FamilyRequest) => readonly Need[]> = {
  'assign.service': onService('admin'),
  'assign.addNode': onService('admin'),
  'assign.updateNode': onService('admin'),
  'assign.removeNode': onService('admin'),
  'assign.decommission': onService('admin'),
  'assign.place': onService('admin'),
  'assign.importUsers': onService('admin'),
  // A purge may also hand the purged records to a journal.
  'assign.purge': (r) => [{ perm: 'admin', resource: `assign:${r.service as string}` }, ...(typeof r.journal === 'string' ? [{ perm: 'write' as const, resource: `journal:${r.journal}` }] : [])],
  'assign.purgeStart': (r) => [{ perm: 'admin', resource: `assign:${r.service as string}` }, ...(typeof r.journal === 'string' ? [{ perm: 'write' as const, resource: `journal:${r.journal}` }] : [])],
  'assign.purgeStop': onService('admin'),
  'assign.purgeStatus': onService('read'),
  'assign.user': onService('write'),
  'assign.retire': (r) => [{ perm: 'write', resource: typeof r.service === 'string' ? `assign:${r.service}` : 'assign:' }],
  'assign.event': () => [{ perm: 'write', resource: 'assign:' }],
  'assign.enqueueEvent': (r) => [{ perm: 'write', resource: `journal:${r.journal as string}` }],
  'assign.lookup': onService('read'),
  'assign.nodes': onService('read'),
  'assign.count': onService('read'),
  'assign.nodeUsers': onService('read'),
  'assign.purgeable': onService('read'),
  'assign.services': () => [{ perm: 'read', resource: 'assign:' }],
};

const protocolOps = familyOps('assign', ASSIGN_OPS, handlers, NEEDS);

/** What this member applied, per service and node (every member applies every entry). */
interface Counters {
  readonly allocations: Map<string, number>;
  readonly refusals: Map<string, number>;
}
const countersOf = new WeakMap<FrontEnd, Map<string, Counters>>();

function countersFor(fe: FrontEnd, service: string): Counters {
  let byService = countersOf.get(fe);
  if (byService === undefined) {
    byService = new Map();
    countersOf.set(fe, byService);
  }
  let c = byService.get(service);
  if (c === undefined) {
    c = { allocations: new Map(), refusals: new Map() };
    byService.set(service, c);
  }
  return c;
}

function onApplied(outcome: ApplyOutcome, fe: FrontEnd): void {
  const r = outcome.result;
  if (!r.ok || r.op !== 'family' || r.family !== 'assign') return;
  const v = r.value as AssignValue;
  if (v.op !== 'login') return;
  const c = countersFor(fe, v.service);
  if ('refused' in v) c.refusals.set(v.refused, (c.refusals.get(v.refused) ?? 0) + 1);
  else if (v.allocated) c.allocations.set(v.user.node, (c.allocations.get(v.user.node) ?? 0) + 1);
}

function label(value: string): string {
  return value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n');
}

/** Per node: load, capacity, available; allocations and refusals this member applied. */
async function metrics(fe: FrontEnd): Promise<string> {
  const services = fe.node.stateMachine.stateOf(assign).services;
  const lines: string[] = [];
  for (const [field, help] of [
    ['load', 'Current users assigned to the node.'],
    ['capacity', 'Users the node may hold.'],
    ['available', 'Slots allocation may take before capacity is released again.'],
  ] as const) {
    const name = `vera_assign_node_${field}`;
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
    for (const [service, s] of services) for (const [node, n] of s.nodes) lines.push(`${name}{service="${label(service)}",node="${label(node)}"} ${n[field]}`);
  }
  lines.push('# HELP vera_assign_allocations_total Users allocated to the node, applied on this member since it started.', '# TYPE vera_assign_allocations_total counter');
  for (const [service, c] of countersOf.get(fe) ?? []) for (const [node, n] of c.allocations) lines.push(`vera_assign_allocations_total{service="${label(service)}",node="${label(node)}"} ${n}`);
  lines.push('# HELP vera_assign_refusals_total Requests refused, by reason (no-node-available is an allocation failure), applied on this member since it started.', '# TYPE vera_assign_refusals_total counter');
  for (const [service, c] of countersOf.get(fe) ?? []) for (const [reason, n] of c.refusals) lines.push(`vera_assign_refusals_total{service="${label(service)}",reason="${reason}"} ${n}`);
  return `${lines.join('\n')}\n`;
}

function call(fe: FrontEnd, op: string, fields: Readonly<Record<string, unknown>>): FamilyRequest {
  const build = ASSIGN_OPS.get(op);
  if (build === undefined) throw new VeraError('NOT_FOUND', `no assignment operation ${op}`);
  return build(fields, 0, fe.limits);
}

/**
 * GET /v1/assign/services, /services/S (its nodes), /services/S/users/EMAIL (lookup),
 * /services/S/nodes/NODE/users?after=UID&limit=N (a node's users, a page),
 * /services/S/count?at=MS, /services/S/purge (its purge job), each with ?consistency=stale (default) or linearizable; POST /v1/assign/OP with the op's fields as a JSON object
 * (OP is an op name without `assign.`, e.g. POST /v1/assign/user).
 */
const http: FamilyHttpRoute = {
  prefix: '/v1/assign',
  get: (fe, rest, url) => {
    const parts = rest.split('/').filter((p) => p !== '').map(decodeURIComponent);
    if (parts[0] !== 'services' || parts.length > 5) throw new VeraError('NOT_FOUND', `no endpoint ${url.pathname}`);
    // Like GET /v1/data: this member's state unless ?consistency=linearizable.
    const consistency = url.searchParams.get('consistency') ?? 'stale';
    if (parts.length === 1) return call(fe, 'assign.services', { consistency });
    const service = parts[1]!;
    if (parts.length === 2) return call(fe, 'assign.nodes', { service, consistency });
    if (parts.length === 3 && parts[2] === 'count') {
      const at = url.searchParams.get('at');
      return call(fe, 'assign.count', { service, consistency, ...(at === null ? {} : { at: Number(at) }) });
    }
    if (parts.length === 3 && parts[2] === 'purge') return call(fe, 'assign.purgeStatus', { service, consistency });
    if (parts.length === 4 && parts[2] === 'users') return call(fe, 'assign.lookup', { service, email: parts[3], consistency });
    if (parts.length === 5 && parts[2] === 'nodes' && parts[4] === 'users') {
      const page = Object.fromEntries(['after', 'limit'].flatMap((k) => (url.searchParams.get(k) === null ? [] : [[k, Number(url.searchParams.get(k))]])));
      return call(fe, 'assign.nodeUsers', { service, node: parts[3], consistency, ...page });
    }
    throw new VeraError('NOT_FOUND', `no endpoint ${url.pathname}`);
  },
  post: (fe, rest, url, body) => {
    const op = rest.replace(/^\//, '');
    if (op === '' || op.includes('/')) throw new VeraError('NOT_FOUND', `no endpoint ${url.pathname}`);
    return call(fe, `assign.${op}`, body);
  },
};

export const server: ServerPart = { protocolOps, onApplied, http: [http], metrics, duties: [purgeJobs] };
