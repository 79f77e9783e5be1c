// One purge batch as the leader prepares it, shared by the purge op (a batch an
// operator asks for) and the purge job's duty (batches the leader runs until done):
// which replaced records go, which are passed over, where the batch stopped, and
// each record's storage clean-up job for the journal.
import { VeraError, type FamilyResult } from '../../protocol/index.js';
import type { FrontEnd } from '../../server/front/context.js';
import { expectOk } from '../../server/front/context.js';
import { proposeTimed } from '../../server/front/family-part.js';
import type { AssignValue } from './apply.js';
import { cleanupJob, fxaKidOf } from './client-cleanup.js';
import type { AssignCommand } from './commands.js';
import type { PurgeCursor } from './keys.js';
import { replacedBefore, userRecords } from './reads.js';
import type { UserRecord } from './records.js';
import { newestFirst } from './rules.js';
import type { ServiceState } from './state.js';

/** How far past a batch's size one purge looks for records not on downed nodes. */
const PURGE_SCAN_FACTOR = 10;
const MAX_PURGE_SCAN = 10_000;

export async function proposeAssign(fe: FrontEnd, command: AssignCommand): Promise<AssignValue> {
  const r = expectOk(await proposeTimed(fe, { family: 'assign', ...command }));
  if (r.op !== 'family' || r.family !== 'assign') throw new VeraError('INTERNAL', `assign ${command.op} applied as ${r.op}`);
  return r.value as AssignValue;
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
export async function selectPurgeBatch(fe: FrontEnd, service: string, s: ServiceState, scope: PurgeScope): Promise<PurgeBatch> {
  const uidMin = scope.uidMin ?? 1;
  const uidMax = scope.uidMax ?? Number.MAX_SAFE_INTEGER;
  const ranged = scope.uidMin !== undefined || scope.uidMax !== undefined;
  const window = scope.force && !ranged ? scope.max : Math.min(scope.max * PURGE_SCAN_FACTOR, MAX_PURGE_SCAN);
  const candidates = await fe.node.stateMachine.read('assignment purge', (db, snapshot) => replacedBefore(db, snapshot, service, scope.before, window, scope.after));
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
export async function cleanupJobs(fe: FrontEnd, service: string, s: ServiceState, chosen: readonly UserRecord[], overrideNode: string | undefined): Promise<{ items: Array<{ key: string; data: FamilyResult }>; overridden: number }> {
  const items: Array<{ key: string; data: FamilyResult }> = [];
  let overridden = 0;
  for (const u of chosen) {
    const onDowned = s.nodes.get(u.node)?.downed === true;
    if (overrideNode === undefined || !onDowned || u.node === overrideNode) {
      items.push({ key: `${service}/${u.uid}`, data: { ...cleanupJob(service, s.settings.pattern, u) } });
      continue;
    }
    const current = newestFirst(await fe.node.stateMachine.readNow('assignment purge override', (db, snapshot) => userRecords(db, snapshot, u.email, service)))[0];
    if (current !== undefined && current.uid !== u.uid && fxaKidOf(current) === fxaKidOf(u)) continue;
    items.push({ key: `${service}/${u.uid}`, data: { ...cleanupJob(service, s.settings.pattern, u, overrideNode) } });
    overridden++;
  }
  return { items, overridden };
}

/** Adds a batch's clean-up jobs to the journal (keyed by service and uid: adding again merges). */
export async function queueCleanups(fe: FrontEnd, journalName: string, items: ReadonlyArray<{ key: string; data: FamilyResult }>): Promise<void> {
  if (items.length > 0) expectOk(await proposeTimed(fe, { family: 'journal', op: 'add', name: journalName, items } as never));
}
