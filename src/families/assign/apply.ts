// Planning node assignment's entries. A login (Tokenserver's get-or-create with
// update) is one entry: looking the user up, allocating a node, validating the
// request and updating the records happen together, so two requests for one
// email are ordered by the log and no email ever has two current records.
// Plans read user records through ctx.reads and nodes from memory, so
// assignment entries share LevelDB batches.
import type { ApplyError } from '../../statemachine/types.js';
import { failure, type BatchOp, type Plan, type PlanContext } from '../../statemachine/family.js';
import { allocate } from './allocate.js';
import { DEFAULT_SERVICE, type AssignCommand } from './commands.js';
import { eventIdKey, eventTimeKey, eventTimeParts, eventTimesBefore, serviceKey } from './keys.js';
import { pack } from '../../statemachine/codec.js';
import { encodeService, type ServiceSettings, type UserRecord } from './records.js';
import { isRetired, newestFirst, oldClientStates, updateOf, validate, type CheckRules, type LoginRequest, type RejectionReason } from './rules.js';
import { cluster } from '../cluster/public.js';
import { TOKENSERVER_CHECKS_SINCE } from './index.js';

/** The rules entries apply at this point of the log (index.ts, TOKENSERVER_CHECKS_SINCE). */
export function rulesAt(activeVersion: number): CheckRules {
  return activeVersion >= TOKENSERVER_CHECKS_SINCE ? 'tokenserver' : 'before-v9';
}
import type { AssignState } from './state.js';
import { encodePurgeJob, purgeJobKey, type PurgeJob } from './purge-job.js';
import { AssignTx } from './tx.js';
import { byNodeRange, uidAtEnd } from './keys.js';
import { endpointOf, type UserAssignment, EVENT_ID_RETENTION_MS, EVENT_IDS_PRUNED_PER_ENTRY, MAX_GENERATION, MAX_NODES_PER_SERVICE, MAX_RECORDS_PER_USER, MAX_SERVICES } from './wire.js';

/** What a login answers for `result`, given every record of the user (for the first-seen time). */
export function assignmentOf(pattern: string, service: string, result: UserRecord, records: readonly UserRecord[], oldStates: readonly string[]): UserAssignment {
  let firstSeenAt = result.createdAt;
  for (const r of records) if (r.createdAt < firstSeenAt) firstSeenAt = r.createdAt;
  return {
    uid: result.uid,
    node: result.node,
    endpoint: endpointOf(pattern, service, result.node, result.uid),
    generation: result.generation,
    keysChangedAt: result.keysChangedAt,
    clientState: result.clientState,
    oldClientStates: oldStates,
    firstSeenAt,
    createdAt: result.createdAt,
  };
}

/**
 * The answer to a login that would change nothing: the user's current record is in
 * place on a node that exists, and the request is acceptable and moves nothing
 * forward. Null when the login needs an entry (to create, move, update or refuse).
 * The leader answers such a login from a linearizable read instead of the log,
 * which is what most of Tokenserver's requests are: a returning user, unchanged.
 */
export function unchangedLogin(pattern: string, service: string, stored: readonly UserRecord[], request: LoginRequest, nodeExists: (node: string) => boolean, rules: CheckRules = 'tokenserver'): UserAssignment | null {
  if (stored.length === 0) return null;
  const records = newestFirst(stored);
  const current = records[0]!;
  if (current.replacedAt !== 0 || !nodeExists(current.node)) return null;
  const old = oldClientStates(records);
  if (validate(request, current, old, rules) !== null) return null;
  const update = updateOf(request, current);
  if (update.newRecord || update.generation !== current.generation || update.keysChangedAt !== current.keysChangedAt) return null;
  return assignmentOf(pattern, service, current, records, old);
}

function tooMany(email: string): string {
  return `${email} has ${MAX_RECORDS_PER_USER} records, the most one user may have; purge its replaced records first`;
}

/** Why a login was refused, beside the request checks of rules.ts. */
export type LoginRefusal = RejectionReason | 'new-users-disabled' | 'no-node-available' | 'too-many-records';

export type AssignValue =
  | { readonly op: 'service'; readonly service: string; readonly created: boolean; readonly settings: ServiceSettings }
  | { readonly op: 'addNode' | 'updateNode' | 'removeNode'; readonly service: string; readonly node: string }
  /** `created`: the email was unknown; `allocated`: it got a (new) node in this entry. */
  | { readonly op: 'login'; readonly service: string; readonly user: UserAssignment; readonly created: boolean; readonly allocated: boolean }
  | { readonly op: 'login'; readonly service: string; readonly refused: LoginRefusal; readonly message: string }
  | { readonly op: 'retire'; readonly email: string; readonly services: number }
  | { readonly op: 'decommission'; readonly service: string; readonly node: string; readonly replaced: number; readonly more: boolean }
  | { readonly op: 'event'; readonly email: string; readonly changed: number; readonly duplicate?: boolean }
  /** `imported`: new records; `present`: the same record was there already (a repeated import); `repaired`: records replaced so an email has one current record. */
  | { readonly op: 'importUsers'; readonly service: string; readonly imported: number; readonly present: number; readonly repaired: number }
  /** `created`: the email was unknown; `moved`: a new record on the node (false: current there already). */
  | { readonly op: 'place'; readonly service: string; readonly user: UserAssignment; readonly created: boolean; readonly moved: boolean }
  | { readonly op: 'purge'; readonly service: string; readonly purged: ReadonlyArray<{ readonly uid: number; readonly email: string; readonly node: string }>; readonly skipped: number }
  /** A purge job after a start, stop or step; `changed` false when the entry found nothing to do (a step that no longer matches). */
  | { readonly op: 'purgeJob'; readonly service: string; readonly job: PurgeJob; readonly changed: boolean };

function done(value: AssignValue, tx: AssignTx, extra: { ops?: Plan['ops']; after?: () => void } = {}): Plan {
  const { ops, after } = tx.commit();
  return {
    result: { ok: true, op: 'family', family: 'assign', value },
    ops: [...(extra.ops ?? []), ...ops],
    events: [],
    after: [...(extra.after === undefined ? [] : [extra.after]), after],
  };
}

export async function planAssign(c: AssignCommand, ctx: PlanContext, state: AssignState): Promise<Plan | ApplyError> {
  const tx = new AssignTx(ctx.reads, state);
  const rules = rulesAt(ctx.states.of(cluster).active);
  switch (c.op) {
    case 'service': {
      const existing = state.services.get(c.service);
      if (existing === undefined && state.services.size >= MAX_SERVICES) return failure('QUOTA_EXCEEDED', `the cluster holds ${MAX_SERVICES} services, its limit`);
      // Only the settings the request gave change: two requests changing different settings both count.
      const settings: ServiceSettings = { ...(existing?.settings ?? DEFAULT_SERVICE), ...c.settings };
      return done({ op: 'service', service: c.service, created: existing === undefined, settings }, tx, {
        ops: [{ type: 'put', key: serviceKey(c.service), value: encodeService(settings) }],
        after: () => state.services.set(c.service, { settings, nodes: existing?.nodes ?? new Map() }),
      });
    }
    case 'login':
      return login(c, ctx.now, tx, rules);
    case 'retire':
      return done({ op: 'retire', email: c.email, services: await retire(tx, c.email, c.service ?? null, ctx.now) }, tx);
    case 'event': {
      if (c.eventId === undefined) return event(c, ctx.now, tx, rules);
      // Once per id: a repeat (a queue delivering again, a worker retrying) changes nothing.
      if ((await ctx.reads.get(eventIdKey(c.eventId))) !== undefined) return done({ op: 'event', email: c.email, changed: 0, duplicate: true }, tx);
      const remembered = await rememberEvent(ctx, c.eventId, state);
      const plan = await event(c, ctx.now, tx, rules);
      return { ...plan, ops: [...remembered.ops, ...plan.ops], after: [...plan.after, remembered.after] };
    }
  }
  const service = tx.service(c.service);
  if (service === undefined) return failure('NOT_FOUND', `no service ${c.service}`);
  if (c.op === 'addNode') {
    if (service.nodes.has(c.node)) return failure('CONFLICT', `${c.service} already has a node ${c.node}`);
    if (service.nodes.size >= MAX_NODES_PER_SERVICE) return failure('QUOTA_EXCEEDED', `${c.service} has ${MAX_NODES_PER_SERVICE} nodes, its limit`);
    tx.setNode(c.service, c.node, { capacity: c.capacity, load: 0, available: c.available, downed: c.downed, backoff: c.backoff });
    return done({ op: 'addNode', service: c.service, node: c.node }, tx);
  }
  if (c.op === 'purge') {
    const { purged, skipped } = await purge(c, tx);
    return done({ op: 'purge', service: c.service, purged, skipped }, tx);
  }
  if (c.op === 'purgeStart' || c.op === 'purgeStop' || c.op === 'purgeStep') return purgeJob(c, ctx.now, tx, state);
  if (c.op === 'place') return place(c, ctx.now, tx, service.settings.pattern);
  if (c.op === 'importUsers') return importUsers(c, ctx.now, tx);
  const node = tx.node(c.service, c.node);
  if (node === null) return failure('NOT_FOUND', `${c.service} has no node ${c.node}`);
  switch (c.op) {
    case 'updateNode': {
      const { op: _op, service: _s, node: _n, ...changes } = c;
      tx.setNode(c.service, c.node, { ...node, ...changes });
      return done({ op: 'updateNode', service: c.service, node: c.node }, tx);
    }
    case 'removeNode':
      if (node.load > 0) return failure('CONFLICT', `${c.node} still has ${node.load} current users: decommission it first`);
      tx.setNode(c.service, c.node, null);
      return done({ op: 'removeNode', service: c.service, node: c.node }, tx);
    case 'decommission': {
      // The given users, or the first `max` current records on the node: replaced now, so
      // their next request allocates them again.
      const uids = c.uids ?? (await ctx.reads.keys({ ...byNodeRange(c.service, c.node), limit: c.max })).map(uidAtEnd);
      let replaced = 0;
      for (const uid of uids) {
        const u = await tx.user(uid);
        if (u === null || u.service !== c.service || u.node !== c.node || u.replacedAt !== 0) continue;
        tx.put({ ...u, replacedAt: ctx.now });
        replaced++;
      }
      return done({ op: 'decommission', service: c.service, node: c.node, replaced, more: c.uids === undefined && uids.length === c.max }, tx);
    }
  }
}

function refuse(service: string, refused: LoginRefusal, message: string, tx: AssignTx | null): Plan {
  const value: AssignValue = { op: 'login', service, refused, message };
  // Capacity released while looking for a node stays released (as Tokenserver commits it); nothing else is kept.
  if (tx !== null) return done(value, tx);
  return { result: { ok: true, op: 'family', family: 'assign', value }, ops: [], events: [], after: [] };
}

async function login(c: Extract<AssignCommand, { op: 'login' }>, now: number, tx: AssignTx, rules: CheckRules): Promise<Plan | ApplyError> {
  const service = tx.service(c.service);
  if (service === undefined) return failure('NOT_FOUND', `no service ${c.service}`);
  const stored = await tx.records(c.email, c.service);
  // Stages the chosen node's slot and any capacity released on the way; null when no node qualifies.
  const allocation = (): string | null => {
    const a = allocate(tx.nodesOf(c.service), service.settings, c.pick);
    for (const [name, n] of a.nodes) if (n !== tx.node(c.service, name)) tx.setNode(c.service, name, n);
    return a.node;
  };
  let records: UserRecord[];
  let created = false;
  let allocated = false;
  if (stored.length === 0) {
    if (!service.settings.newUsers) return refuse(c.service, 'new-users-disabled', `${c.service} accepts no new users`, null);
    const node = allocation();
    if (node === null) return refuse(c.service, 'no-node-available', `no node of ${c.service} can take a new user`, tx);
    const user: UserRecord = { uid: tx.newUid(), service: c.service, email: c.email, generation: c.generation, clientState: c.clientState, keysChangedAt: c.keysChangedAt, createdAt: now, replacedAt: 0, node };
    tx.put(user);
    records = [user];
    created = true;
    allocated = true;
  } else {
    records = newestFirst(stored);
    const current = records[0]!;
    // Retired (deleted from FxA) is for good: no request brings the user back, whatever it reports.
    // The reason is the one Tokenserver's checks give against the retired record (its generation is
    // the maximum, so invalid-generation unless an earlier check refuses first); where upstream
    // accepts (no generation reported), Vera still refuses.
    if (isRetired(current)) {
      const problem = rules === 'tokenserver' ? validate(c, current, oldClientStates(records), rules) : null;
      return refuse(c.service, problem?.reason ?? 'invalid-generation', problem?.message ?? `${c.email} is retired from ${c.service}`, null);
    }
    if (current.replacedAt !== 0 || tx.node(c.service, current.node) === null) {
      // Replaced (decommissioned, or its node removed): a copy of it on a newly allocated
      // node, keeping its generation, client state and keys-changed-at.
      if (records.length >= MAX_RECORDS_PER_USER) return refuse(c.service, 'too-many-records', tooMany(c.email), null);
      const node = allocation();
      if (node === null) return refuse(c.service, 'no-node-available', `no node of ${c.service} can take ${c.email} again`, tx);
      if (current.replacedAt === 0) tx.put({ ...current, replacedAt: now });
      const copy: UserRecord = { ...current, uid: tx.newUid(), createdAt: now, replacedAt: 0, node };
      tx.put(copy);
      records = [copy, ...records.map((r) => (r.uid === current.uid && r.replacedAt === 0 ? { ...r, replacedAt: now } : r))];
      allocated = true;
    }
  }
  const user = records[0]!;
  const old = oldClientStates(records);
  const problem = validate(c, user, old, rules);
  // A refused request changes nothing: not even the allocation it would have needed.
  if (problem !== null) return refuse(c.service, problem.reason, problem.message, null);
  const update = updateOf(c, user);
  let result: UserRecord = user;
  let oldStates = old;
  if (update.newRecord) {
    if (records.length >= MAX_RECORDS_PER_USER) return refuse(c.service, 'too-many-records', tooMany(c.email), null);
    // A new encryption key: a new record on the same node; every other record is replaced.
    for (const r of records) if (r.replacedAt === 0) tx.put({ ...r, replacedAt: now });
    result = { ...user, uid: tx.newUid(), generation: update.generation, keysChangedAt: update.keysChangedAt, clientState: c.clientState, createdAt: now, replacedAt: 0 };
    tx.put(result);
    oldStates = [user.clientState, ...old.filter((s) => s !== user.clientState && s !== c.clientState)];
  } else if (update.generation !== user.generation || update.keysChangedAt !== user.keysChangedAt) {
    result = { ...user, generation: update.generation, keysChangedAt: update.keysChangedAt };
    tx.put(result);
  }
  const assignment = assignmentOf(service.settings.pattern, c.service, result, records, oldStates);
  return done({ op: 'login', service: c.service, user: assignment, created, allocated }, tx);
}

/** Generation to the maximum on each service's current record, and every record replaced. */
async function retire(tx: AssignTx, email: string, service: string | null, now: number): Promise<number> {
  const byService = new Map<string, UserRecord[]>();
  for (const r of await tx.records(email, service)) byService.set(r.service, [...(byService.get(r.service) ?? []), r]);
  for (const records of byService.values()) {
    const [current, ...others] = newestFirst(records);
    tx.put({ ...current!, generation: MAX_GENERATION, replacedAt: current!.replacedAt === 0 ? now : current!.replacedAt });
    for (const r of others) if (r.replacedAt === 0) tx.put({ ...r, replacedAt: now });
  }
  return byService.size;
}

/**
 * Writes that remember an event id, and drop a few ids past the retention (bounding what is
 * kept). The oldest remembered time is kept in memory, so the ids are looked at only when
 * some are past the retention: an entry that would find none to drop reads nothing.
 */
async function rememberEvent(ctx: PlanContext, id: string, state: AssignState): Promise<{ ops: BatchOp[]; after: () => void }> {
  const ops: BatchOp[] = [
    { type: 'put', key: eventIdKey(id), value: pack(ctx.now) },
    { type: 'put', key: eventTimeKey(ctx.now, id), value: Buffer.alloc(0) },
  ];
  const cutoff = ctx.now - EVENT_ID_RETENTION_MS;
  let oldest = state.oldestEventAt ?? ctx.now;
  if (state.oldestEventAt !== null && state.oldestEventAt < cutoff) {
    // Oldest first: those past the retention go (at most a few), and the first one kept is the new oldest.
    oldest = ctx.now;
    let dropped = 0;
    for (const key of await ctx.reads.keys({ ...eventTimesBefore(Number.MAX_SAFE_INTEGER), limit: EVENT_IDS_PRUNED_PER_ENTRY + 1 })) {
      const past = eventTimeParts(key);
      if (past.at >= cutoff || dropped === EVENT_IDS_PRUNED_PER_ENTRY) {
        oldest = Math.min(past.at, ctx.now);
        break;
      }
      ops.push({ type: 'del', key }, { type: 'del', key: eventIdKey(past.id) });
      dropped++;
    }
  }
  return { ops, after: () => (state.oldestEventAt = oldest) };
}

/** FxA account events (Tokenserver's process_account_events): delete retires; a password change or reset moves the generation up to the event's - 1. */
async function event(c: Extract<AssignCommand, { op: 'event' }>, now: number, tx: AssignTx, rules: CheckRules): Promise<Plan> {
  if (c.kind === 'delete') return done({ op: 'event', email: c.email, changed: await retire(tx, c.email, null, now) }, tx);
  const generation = c.generation! - 1;
  const byService = new Map<string, UserRecord[]>();
  for (const r of await tx.records(c.email, null)) byService.set(r.service, [...(byService.get(r.service) ?? []), r]);
  let changed = 0;
  for (const records of byService.values()) {
    const current = newestFirst(records)[0]!;
    // The user's newest record whatever its state: a replaced one (decommissioned, not yet moved)
    // is what the next request copies to a new node, so the new generation must be on it or a
    // device still on the old generation gets in (upstream's get_user moves such a user first,
    // then updates it). Never backwards; a retired user's maximum stays. An unknown user gets nothing.
    if (current.generation >= generation || (rules === 'before-v9' && current.replacedAt !== 0)) continue;
    tx.put({ ...current, generation });
    changed++;
  }
  return done({ op: 'event', email: c.email, changed }, tx);
}

/**
 * The user onto the named node, whatever its load or flags (the operator's choice, as
 * upstream's allocate_user with a node). The node's slot is taken as an allocation takes
 * it; its load follows from the records (tx.ts), so every counter stays exact.
 */
async function place(c: Extract<AssignCommand, { op: 'place' }>, now: number, tx: AssignTx, pattern: string): Promise<Plan | ApplyError> {
  const target = tx.node(c.service, c.node);
  if (target === null) return failure('NOT_FOUND', `${c.service} has no node ${c.node}`);
  const stored = newestFirst(await tx.records(c.email, c.service));
  const current = stored[0];
  if (current !== undefined && isRetired(current)) return failure('CONFLICT', `${c.email} is retired from ${c.service}; nothing brings it back`);
  if (current !== undefined && current.replacedAt === 0 && current.node === c.node) {
    return done({ op: 'place', service: c.service, user: assignmentOf(pattern, c.service, current, stored, oldClientStates(stored)), created: false, moved: false }, tx);
  }
  if (stored.length >= MAX_RECORDS_PER_USER) return failure('QUOTA_EXCEEDED', tooMany(c.email));
  for (const r of stored) if (r.replacedAt === 0) tx.put({ ...r, replacedAt: now });
  const placed: UserRecord =
    current === undefined
      ? { uid: tx.newUid(), service: c.service, email: c.email, generation: 0, clientState: '', keysChangedAt: 0, createdAt: now, replacedAt: 0, node: c.node }
      : { ...current, uid: tx.newUid(), createdAt: now, replacedAt: 0, node: c.node };
  tx.put(placed);
  tx.setNode(c.service, c.node, { ...target, available: Math.max(target.available - 1, 0) });
  const records = [placed, ...stored.map((r) => (r.replacedAt === 0 ? { ...r, replacedAt: now } : r))];
  return done({ op: 'place', service: c.service, user: assignmentOf(pattern, c.service, placed, records, oldClientStates(records)), created: current === undefined, moved: true }, tx);
}

/** The same user's record: it may have changed since it was imported (a login, a repair, a move), and Vera's is the newer. */
const sameUser = (a: UserRecord, b: UserRecord): boolean => a.email === b.email && a.service === b.service;

/**
 * Records from a Tokenserver database, uids kept: each record as it was, on a node of the
 * service. A uid already holding a record of the same user is passed over as it stands now
 * (it may have changed since), so an import can be run again; a uid holding another user's
 * record refuses the whole entry. Where the rows give an email two
 * current records (upstream's race, syncstorage-rs#1171), all but the newest are replaced now,
 * as upstream's get_user does when it reads them. Load follows from the records (tx.ts):
 * upstream's current_load column is not taken.
 */
async function importUsers(c: Extract<AssignCommand, { op: 'importUsers' }>, now: number, tx: AssignTx): Promise<Plan | ApplyError> {
  let imported = 0;
  let present = 0;
  const emails = new Set<string>();
  for (const u of c.users) {
    if (tx.node(c.service, u.node) === null) return failure('NOT_FOUND', `${c.service} has no node ${u.node} (uid ${u.uid}): import the nodes first`);
    await tx.records(u.email, c.service);
    const existing = await tx.user(u.uid);
    if (existing !== null) {
      if (!sameUser(existing, u)) return failure('CONFLICT', `uid ${u.uid} is already another record (${existing.email} in ${existing.service}); nothing of this batch was imported`);
      present++;
      continue;
    }
    tx.put(u);
    tx.keepUid(u.uid);
    emails.add(u.email);
    imported++;
  }
  let repaired = 0;
  for (const email of emails) {
    const records = newestFirst(await stagedRecords(tx, email, c.service));
    if (records.length > MAX_RECORDS_PER_USER) return failure('QUOTA_EXCEEDED', `${tooMany(email)}; import fewer of its replaced records`);
    for (const r of records.slice(1)) {
      if (r.replacedAt !== 0) continue;
      tx.put({ ...r, replacedAt: now });
      repaired++;
    }
  }
  return done({ op: 'importUsers', service: c.service, imported, present, repaired }, tx);
}

/** A user's records as this entry has left them: those stored, and those staged since. */
async function stagedRecords(tx: AssignTx, email: string, service: string): Promise<UserRecord[]> {
  return tx.recordsStaged(email, service);
}

/** Deletes the listed records that are still replaced before the cutoff; a deleted record frees a slot on its node. */
async function purge(c: Pick<Extract<AssignCommand, { op: 'purge' }>, 'service' | 'before' | 'uids' | 'force'>, tx: AssignTx): Promise<{ purged: Array<{ uid: number; email: string; node: string }>; skipped: number }> {
  const purged: Array<{ uid: number; email: string; node: string }> = [];
  let skipped = 0;
  for (const uid of c.uids) {
    const u = await tx.user(uid);
    if (u === null || u.service !== c.service || u.replacedAt === 0 || u.replacedAt >= c.before) continue;
    const node = tx.node(c.service, u.node);
    if (node !== null && node.downed && !c.force) {
      skipped++;
      continue;
    }
    await tx.delete(uid);
    if (node !== null) tx.freeSlot(c.service, u.node);
    purged.push({ uid, email: u.email, node: u.node });
  }
  return { purged, skipped };
}

/**
 * A purge job's start, stop or step (purge-job.ts). A step applies only to the running job
 * it names, from the cursor the job is at: one from an earlier job, or proposed again by a
 * leader that had not seen its first copy applied, changes nothing, so every record is
 * counted once whatever leader changes happen mid-purge.
 */
async function purgeJob(c: Extract<AssignCommand, { op: 'purgeStart' | 'purgeStop' | 'purgeStep' }>, now: number, tx: AssignTx, state: AssignState): Promise<Plan | ApplyError> {
  const existing = state.purgeJobs.get(c.service);
  const keep = (job: PurgeJob, extra: { ops?: Plan['ops'] } = {}): Plan =>
    done({ op: 'purgeJob', service: c.service, job, changed: job !== existing }, tx, {
      ...(job === existing ? {} : { ops: [...(extra.ops ?? []), { type: 'put' as const, key: purgeJobKey(c.service), value: encodePurgeJob(job) }], after: () => state.purgeJobs.set(c.service, job) }),
    });
  if (c.op === 'purgeStart') {
    if (existing?.state === 'running') return failure('CONFLICT', `a purge of ${c.service} is running (job ${existing.seq}); stop it first`);
    return keep({ ...c.settings, seq: (existing?.seq ?? 0) + 1, state: 'running', startedAt: now, endedAt: 0, cursor: '', batches: 0, purged: 0, skipped: 0, overridden: 0, activeData: 0, error: '' });
  }
  if (existing === undefined) return failure('NOT_FOUND', `${c.service} has no purge job`);
  if (existing.state !== 'running' || (c.seq !== undefined && c.seq !== existing.seq)) return keep(existing);
  if (c.op === 'purgeStop') return keep({ ...existing, state: c.error === undefined ? 'stopped' : 'failed', endedAt: now, error: c.error ?? '' });
  if (c.from !== existing.cursor) return keep(existing);
  const { purged, skipped } = await purge({ service: c.service, before: c.before, uids: c.uids, force: existing.force }, tx);
  return keep({
    ...existing,
    cursor: c.to,
    batches: existing.batches + 1,
    purged: existing.purged + purged.length,
    skipped: existing.skipped + c.skipped + skipped,
    overridden: existing.overridden + c.overridden,
    activeData: existing.activeData + c.activeData,
    ...(c.done ? { state: 'done' as const, endedAt: now } : {}),
  });
}
