// A purge the leader runs until done (a leader duty, purge-duty.ts): what it
// was asked and how far it got, kept in replicated state (the meta bucket, one key per
// service) so a new leader goes on where the old one stopped. Each step is one entry
// that names the job and the cursor it started from: a step that no longer matches
// (an old leader's, or one proposed twice) changes nothing, so the counts stay exact.
import { bucketPrefix } from '../../keys/index.js';
import { CorruptValueError, pack, unpack } from '../../statemachine/codec.js';
import { AssignBucket } from './keys.js';
import type { PurgeJob as PurgeJobInfo } from './wire.js';

export type PurgeJobState = 'running' | 'stopped' | 'done' | 'failed';
export const PURGE_JOB_STATES: readonly PurgeJobState[] = ['running', 'stopped', 'done', 'failed'];

/** What an operator asks a purge job to do: the fields of a purge batch, fixed for the job. */
export interface PurgeJobSettings {
  readonly graceMs: number;
  readonly max: number;
  readonly force: boolean;
  /** 0: no bound. */
  readonly uidMin: number;
  readonly uidMax: number;
  /** '': none. */
  readonly overrideNode: string;
  readonly journal: string;
}

export interface PurgeJob extends PurgeJobSettings {
  /** 1, 2, ... per service: a step names its job, so one left from an earlier job changes nothing. */
  readonly seq: number;
  readonly state: PurgeJobState;
  readonly startedAt: number;
  /** When it ended (done, stopped or failed); 0 while running. */
  readonly endedAt: number;
  /** `replacedAt:uid` of the last record looked at; '' before the first step. */
  readonly cursor: string;
  readonly batches: number;
  readonly purged: number;
  /** Records passed over on downed nodes (without force). */
  readonly skipped: number;
  readonly overridden: number;
  readonly activeData: number;
  /** Why it failed; '' otherwise. */
  readonly error: string;
}

/** Meta bucket key of a service's purge job: 'p' + the service name (beside the next uid and the event ids). */
export function purgeJobKey(service: string): Buffer {
  return Buffer.concat([bucketPrefix(AssignBucket.meta), Buffer.from('p', 'latin1'), Buffer.from(service, 'utf8')]);
}

export function purgeJobRange(): { gte: Buffer; lt: Buffer } {
  const head = bucketPrefix(AssignBucket.meta);
  return { gte: Buffer.concat([head, Buffer.from('p', 'latin1')]), lt: Buffer.concat([head, Buffer.from('q', 'latin1')]) };
}

export function serviceOfPurgeJobKey(key: Buffer): string {
  return key.toString('utf8', 3);
}

const FIELDS = ['seq', 'state', 'graceMs', 'max', 'force', 'uidMin', 'uidMax', 'overrideNode', 'journal', 'startedAt', 'endedAt', 'cursor', 'batches', 'purged', 'skipped', 'overridden', 'activeData', 'error'] as const;

export function encodePurgeJob(j: PurgeJob): Buffer {
  return pack(FIELDS.map((f) => j[f]));
}

export function decodePurgeJob(bytes: Uint8Array): PurgeJob {
  const v = unpack(bytes);
  const count = (x: unknown): boolean => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
  if (
    !Array.isArray(v) ||
    v.length !== FIELDS.length ||
    !PURGE_JOB_STATES.includes(v[1]) ||
    typeof v[4] !== 'boolean' ||
    ![0, 2, 3, 5, 6, 9, 10, 12, 13, 14, 15, 16].every((i) => count(v[i])) ||
    ![7, 8, 11, 17].every((i) => typeof v[i] === 'string')
  ) {
    throw new CorruptValueError(`assignment purge job is not [${FIELDS.join(', ')}]`);
  }
  return Object.fromEntries(FIELDS.map((f, i) => [f, v[i]])) as unknown as PurgeJob;
}

/** A job as the protocol answers it (absent bounds left out, an unstarted cursor null). */
export function describePurgeJob(service: string, j: PurgeJob): PurgeJobInfo {
  return {
    service,
    seq: j.seq,
    state: j.state,
    graceMs: j.graceMs,
    max: j.max,
    force: j.force,
    ...(j.uidMin === 0 ? {} : { uidMin: j.uidMin }),
    ...(j.uidMax === 0 ? {} : { uidMax: j.uidMax }),
    ...(j.overrideNode === '' ? {} : { overrideNode: j.overrideNode }),
    ...(j.journal === '' ? {} : { journal: j.journal }),
    startedAt: j.startedAt,
    endedAt: j.endedAt === 0 ? null : j.endedAt,
    cursor: j.cursor === '' ? null : j.cursor,
    batches: j.batches,
    purged: j.purged,
    skipped: j.skipped,
    overridden: j.overridden,
    activeData: j.activeData,
    ...(j.error === '' ? {} : { error: j.error }),
  };
}
