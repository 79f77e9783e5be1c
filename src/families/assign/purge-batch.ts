// One purge batch as the leader prepares it, shared by the purge op (a batch an
// operator asks for) and the purge job's duty (batches the leader runs until done):
// which replaced records go, which are passed over, where the batch stopped, and
// each record's storage clean-up job for the journal.
import type { FamilyHost } from '../../kit/index.js';
import { decodeDefinition, definitionKey } from '../journal/public.js';
import type { AssignValue } from './apply.js';
import { cleanupJob, fxaKidOf, type CleanupJob } from './client-cleanup.js';
import type { AssignCommand } from './commands.js';
import type { PurgeCursor } from './keys.js';
import { replacedBefore, userRecords } from './reads.js';
import type { UserRecord } from './records.js';
import { newestFirst } from './rules.js';
import type { AssignState, ServiceState } from './state.js';

/** What node assignment's server instance sees of its member. */
export type AssignHost = FamilyHost<AssignState, AssignValue, AssignCommand>;

/** How far past a batch's size one purge looks for records not on downed nodes. */
const PURGE_SCAN_FACTOR = 10;
const MAX_PURGE_SCAN = 10_000;

/**
 * Whether journal `name` is defined and not being dropped (the journal's own live()), read
 * from its definition at one snapshot: through the store rather than the journal family's
 * state, so this family reaches nothing of the journal's server part.
 */
export function journalIsLive(host: AssignHost, name: string): Promise<boolean> {
  return host.readNow('assignment clean-up journal', (db, snapshot) => {
    const raw = db.getSync(definitionKey(name), { snapshot });
    return raw !== undefined && !decodeDefinition(raw).dropping;
  });
}

export interface PurgeScope {
  /** Records replaced before this (ms). */
  readonly before: number;
  readonly max: number;
  readonly force: boolean;
  /** Inclusive; absent: no bound. */
  readonly uidMin?: number;
  readonly uidMax?: number;
  readonly after?: PurgeCursor;
}

export interface PurgeBatch {
  readonly chosen: UserRecord[];
  /** Passed over on downed nodes. */
  readonly skipped: number;
  /** `replacedAt:uid` of the last record looked at, to go on from; null once every record due was looked at. */
  readonly next: string | null;
}

/**
 * The records of one batch, from one snapshot. Records on downed nodes (unless forced) and
 * outside the uid range are passed over: it looks at up to ten times the batch (at most
 * 10,000 keys) and says where it stopped, so the next batch goes on past them.
 */
export async function selectPurgeBatch(host: AssignHost, service: string, s: ServiceState, scope: PurgeScope): Promise<PurgeBatch> {
  const uidMin = scope.uidMin ?? 1;
  const uidMax = scope.uidMax ?? Number.MAX_SAFE_INTEGER;
  const ranged = scope.uidMin !== undefined || scope.uidMax !== undefined;
  const window = scope.force && !ranged ? scope.max : Math.min(scope.max * PURGE_SCAN_FACTOR, MAX_PURGE_SCAN);
  const candidates = await host.reader.read('assignment purge', (db, snapshot) => replacedBefore(db, snapshot, service, scope.before, window, scope.after));
  const chosen: UserRecord[] = [];
  let examined = 0;
  let skipped = 0;
  for (const u of candidates) {
    if (chosen.length === scope.max) break;
    examined++;
    if (u.uid < uidMin || u.uid > uidMax) continue;
    if (scope.force || s.nodes.get(u.node)?.downed !== true) chosen.push(u);
    else skipped++;
  }
  const last = candidates[examined - 1];
  const next = last !== undefined && (examined < candidates.length || candidates.length === window) ? `${last.replacedAt}:${last.uid}` : null;
  return { chosen, skipped, next };
}

export function parseCursor(after: string | undefined): PurgeCursor | undefined {
  if (after === undefined || after === '') return undefined;
  const [replacedAt, uid] = after.split(':').map(Number);
  return { replacedAt: replacedAt!, uid: uid! };
}

/**
 * The clean-up jobs of a batch. With an override node (upstream's --override_node, for data
 * copied off a downed node), a record on a downed node has its data deleted there instead,
 * unless that data is the user's current data: the same key id as the user's current record
 * (upstream's points_to_active), whose deletion would lose what the user has now. Such a
 * record is purged with no job.
 */
export async function cleanupJobs(host: AssignHost, service: string, s: ServiceState, chosen: readonly UserRecord[], overrideNode: string | undefined): Promise<{ items: CleanupItem[]; overridden: number }> {
  const items: CleanupItem[] = [];
  let overridden = 0;
  for (const u of chosen) {
    const onDowned = s.nodes.get(u.node)?.downed === true;
    if (overrideNode === undefined || !onDowned || u.node === overrideNode) {
      items.push({ key: `${service}/${u.uid}`, data: cleanupJob(service, s.settings.pattern, u) });
      continue;
    }
    const current = newestFirst(await host.readNow('assignment purge override', (db, snapshot) => userRecords(db, snapshot, u.email, service)))[0];
    if (current !== undefined && current.uid !== u.uid && fxaKidOf(current) === fxaKidOf(u)) continue;
    items.push({ key: `${service}/${u.uid}`, data: cleanupJob(service, s.settings.pattern, u, overrideNode) });
    overridden++;
  }
  return { items, overridden };
}

/** A clean-up job as the journal holds it: keyed by service and uid. */
export interface CleanupItem {
  readonly key: string;
  readonly data: CleanupJob;
}

/** Adds a batch's clean-up jobs to the journal (keyed by service and uid: adding again merges). */
export async function queueCleanups(host: AssignHost, journalName: string, items: readonly CleanupItem[]): Promise<void> {
  if (items.length > 0) await host.proposeTo('journal', { op: 'add', name: journalName, items });
}
