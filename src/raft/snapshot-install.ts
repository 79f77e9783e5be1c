// Installing a received snapshot in bounded memory, and finishing one that a
// crash interrupted.
//
// A snapshot of any size cannot be one LevelDB batch (the batch lives in memory),
// so the install is a sequence made restartable by a marker:
//
//   1. the staged file is synced, then the marker (peer-local 0x0000
//      'snapshotInstall': the meta, the staged file's name, size and sha256) is
//      written with sync;
//   2. the state machine's keys are cleared and the records written from the
//      file in batches of STATE_BATCH_BYTES (replaceState);
//   3. one synced batch resets the log to start after the snapshot and deletes
//      the marker (LevelLogStorage.installSnapshot);
//   4. the staged file is removed.
//
// A crash before 1 leaves the old store untouched. A crash after 1 and before 3
// leaves a marker: the next start redoes 2 and 3 from the staged file (both are
// idempotent) before the log or state machine are opened, and refuses to start
// when the file is gone or no longer hashes to the marker's sha256, because the
// state is then half old, half new. The hard state (term and vote) is never
// touched, so no install can make a member forget a vote.

import { createHash } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Packr } from 'msgpackr';
import { propertyKey } from '../keys/index.js';
import { fsyncDir, fsyncFile } from './fsync.js';
import type { LevelDb, LevelLogStorage } from './leveldb-storage.js';
import { appliedIndexIn, fileChunks, INCOMING_PREFIX, readRecords, replaceState, SnapshotError, type AppliedIndexField, type StagedFile } from './state-transfer.js';
import { checkClusterConfig } from './storage.js';
import type { SnapshotMeta } from './types.js';

/** Present only while an install is between its steps 1 and 3. */
export const INSTALL_MARKER_KEY = propertyKey('snapshotInstall');

const packr = new Packr({ useRecords: false });

interface InstallMarker {
  readonly meta: SnapshotMeta;
  /** The staged file's name inside the staging directory (the data dir may move). */
  readonly file: string;
  readonly bytes: number;
  readonly sha256: string;
}

/** Test hook: a step boundary at which a test makes the install fail, as a crash there would. */
export type InstallStep = 'afterMarker' | 'afterState';

/**
 * Replaces the state machine and the log by a verified staged snapshot. The file
 * must carry `meta.index` as its applied index; it is checked before anything
 * is written. `failAt` exists for crash tests only.
 */
export async function installStagedSnapshot(
  db: LevelDb,
  storage: LevelLogStorage,
  meta: SnapshotMeta,
  staged: StagedFile,
  applied: AppliedIndexField,
  failAt?: InstallStep,
): Promise<void> {
  checkClusterConfig(meta.config, 'snapshot config', 'invalidArgument');
  const carried = await appliedIndexIn(readRecords(fileChunks(staged.path)), applied);
  if (carried !== meta.index) throw new SnapshotError(`snapshot data reflects index ${carried}, its meta says ${meta.index}`);
  await fsyncFile(staged.path);
  await fsyncDir(dirname(staged.path));
  const marker: InstallMarker = { meta: plainMeta(meta), file: basename(staged.path), bytes: staged.bytes, sha256: staged.sha256 };
  await db.put(INSTALL_MARKER_KEY, packr.pack(marker), { sync: true });
  if (failAt === 'afterMarker') throw new SnapshotError('injected failure after the install marker');
  await finish(db, storage, marker.meta, staged.path, failAt);
}

/**
 * Run at start, before the log and state machine are loaded: completes an install
 * a crash interrupted, and removes staged files no install refers to. Returns the
 * index of the install it completed, or null.
 */
export async function finishInterruptedInstall(db: LevelDb, storage: LevelLogStorage, stagingDir: string): Promise<number | null> {
  const raw = await db.get(INSTALL_MARKER_KEY);
  const marker = raw === undefined ? null : decodeMarker(raw);
  await removeStrayStaging(stagingDir, marker?.file ?? null);
  if (marker === null) return null;
  const path = join(stagingDir, marker.file);
  const problem = await stagedFileProblem(path, marker);
  if (problem !== null) {
    throw new SnapshotError(`a snapshot install (index ${marker.meta.index}) was interrupted and cannot be finished: ${problem}; the state machine is half replaced`);
  }
  await finish(db, storage, marker.meta, path);
  return marker.meta.index;
}

async function finish(db: LevelDb, storage: LevelLogStorage, meta: SnapshotMeta, path: string, failAt?: InstallStep): Promise<void> {
  await replaceState(db, readRecords(fileChunks(path)));
  if (failAt === 'afterState') throw new SnapshotError('injected failure after the state was written');
  // The state batches were not synced: this synced batch makes them durable too (LevelDB's log is sequential).
  await storage.installSnapshot(meta, [{ type: 'del', key: INSTALL_MARKER_KEY }]);
  await rm(path, { force: true });
}

async function stagedFileProblem(path: string, marker: InstallMarker): Promise<string | null> {
  const hash = createHash('sha256');
  let bytes = 0;
  try {
    for await (const chunk of fileChunks(path)) {
      hash.update(chunk);
      bytes += chunk.length;
    }
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? `its staged file ${path} is missing` : `its staged file ${path} cannot be read (${String(err)})`;
  }
  if (bytes !== marker.bytes) return `its staged file ${path} holds ${bytes} bytes, not ${marker.bytes}`;
  if (hash.digest('hex') !== marker.sha256) return `its staged file ${path} no longer matches its checksum`;
  return null;
}

async function removeStrayStaging(dir: string, keep: string | null): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  for (const name of names) if (name.startsWith(INCOMING_PREFIX) && name !== keep) await rm(join(dir, name), { force: true });
}

function decodeMarker(raw: Buffer): InstallMarker {
  const value = packr.unpack(raw) as Partial<InstallMarker> | null;
  const ok =
    value !== null &&
    typeof value === 'object' &&
    typeof value.file === 'string' &&
    value.file.startsWith(INCOMING_PREFIX) &&
    !value.file.includes('/') &&
    typeof value.bytes === 'number' &&
    typeof value.sha256 === 'string' &&
    typeof value.meta === 'object' &&
    value.meta !== null &&
    Number.isSafeInteger(value.meta.index) &&
    Number.isSafeInteger(value.meta.term);
  if (!ok) throw new SnapshotError('the snapshot install marker is damaged; the state machine may be half replaced');
  return { ...value, meta: { ...value.meta!, config: checkClusterConfig(value.meta!.config, 'install marker config', 'corrupt') } } as InstallMarker;
}

function plainMeta(meta: SnapshotMeta): SnapshotMeta {
  return { index: meta.index, term: meta.term, config: { voters: [...meta.config.voters], learners: [...meta.config.learners] } };
}

