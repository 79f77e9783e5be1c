// Backups of a running member's state machine (GET /v1/snapshot) and seeding a
// new single-member store from one (`vera snapshot restore`).
//
// File format "vera-backup-v1" (docs/operations.md, "Backup and restore"):
//
//   line 1   JSON header + '\n': {"format":"vera-backup-v1","index":N,"term":T,
//            "config":{"voters":[..],"learners":[..]},"bytes":B,"node":"n1","created":ISO-8601}
//   body     exactly B bytes: the state-transfer stream of src/raft/state-transfer.ts
//            (records [u32 key length][key][u32 value length][value], in key order)
//   trailer  "sha256 " + 64 lowercase hex digits + '\n': sha256 of the header line and body
//
// The header goes first so a reader learns what it holds (and how long it must
// be) before reading it; the checksum can only be known once everything was
// written, so it trails. It covers the header too: a flipped bit in the index is
// as fatal as one in the data. A member streams the file without holding it in
// memory: one pass over its LevelDB snapshot counts the bytes for the header, a
// second pass (same snapshot, so the same bytes) sends them.

import { createHash, randomBytes } from 'node:crypto';
import { open, readdir, rename, rm, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { basename, dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { addressProblem, type MemberAddress } from '../../raft/config.js';
import { openDataDir } from '../../raft/datadir.js';
import { fsyncDir } from '../../raft/fsync.js';
import { appliedIndexIn, fileChunks, readRecords, replaceState, type CapturedState } from '../../raft/state-transfer.js';
import type { ClusterConfig, NodeId, SnapshotMeta } from '../../raft/types.js';
import { encodeMembers, initialMembers, MEMBERS_KEY, StateMachine } from '../../statemachine/index.js';
import { writeWithBackpressure } from '../http/http-write.js';
import { APPLIED_INDEX } from '../../statemachine/applied.js';
import { REGISTRY } from '../../families/registry.js';

export const BACKUP_FORMAT = 'vera-backup-v1';
/** A header line longer than this is not one of ours. */
export const MAX_HEADER_BYTES = 64 * 1024;
const TRAILER_PREFIX = 'sha256 ';
/** "sha256 " + 64 hex digits + "\n". */
export const TRAILER_BYTES = TRAILER_PREFIX.length + 64 + 1;

export interface BackupHeader {
  readonly format: typeof BACKUP_FORMAT;
  /** The applied index the state reflects. */
  readonly index: number;
  /** The term of the entry at `index`. */
  readonly term: number;
  /** The cluster configuration at `index` (informational: a restore starts a new single-member cluster). */
  readonly config: ClusterConfig;
  /** Length of the body. */
  readonly bytes: number;
  /** The member that wrote the backup. */
  readonly node: NodeId;
  /** When it was written (ISO 8601, the member's clock). */
  readonly created: string;
}

export type BackupErrorCode = 'truncated' | 'corrupt' | 'unsupported' | 'tooLarge' | 'targetExists' | 'invalidArgument' | 'io';

export class BackupError extends Error {
  override readonly name = 'BackupError';
  constructor(
    readonly code: BackupErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

// ---------------------------------------------------------------- file format

export function encodeHeader(header: BackupHeader): Buffer {
  return Buffer.from(`${JSON.stringify(header)}\n`, 'utf8');
}

export function encodeTrailer(sha256Hex: string): Buffer {
  return Buffer.from(`${TRAILER_PREFIX}${sha256Hex}\n`, 'ascii');
}

export interface VerifiedBackup {
  readonly header: BackupHeader;
  /** The backup file; its body (a state-transfer stream) was checked to decode and to carry `header.index`. */
  readonly path: string;
  /** Where the body starts in the file. */
  readonly bodyStart: number;
  /** The trailer's sha256 (hex). */
  readonly sha256: string;
  readonly records: number;
}

/** The body of a verified backup, read from its file in bounded chunks. */
export function backupBody(backup: VerifiedBackup): AsyncGenerator<Buffer> {
  return fileChunks(backup.path, backup.bodyStart, backup.bodyStart + backup.header.bytes);
}

/**
 * Checks a whole backup file: header, length, checksum, and that the body decodes
 * and reflects the header's index. Throws BackupError saying what is wrong.
 * Integrity comes before meaning: a damaged header is reported as damage, not as
 * the unsupported format or odd index the damage happens to spell. The file is
 * read as a stream (twice: the checksum first, then the records), never whole,
 * so a backup of any size is verified in bounded memory.
 */
export async function verifyBackupFile(path: string): Promise<VerifiedBackup> {
  const size = await fileSize(path);
  if (size === 0) throw new BackupError('truncated', 'file is empty');
  const head = await readRange(path, 0, Math.min(size, MAX_HEADER_BYTES));
  const newline = head.indexOf(0x0a);
  if (newline < 0) {
    throw new BackupError('corrupt', size < MAX_HEADER_BYTES ? 'no header line: not a Vera backup, or cut short inside its header' : `no header line within the first ${MAX_HEADER_BYTES} bytes: not a Vera backup`);
  }
  const fields = parseJsonObject(head.subarray(0, newline).toString('utf8'));
  const sha256 = await intactChecksum(path, size);
  if (fields.format !== BACKUP_FORMAT) {
    if (sha256 !== null && typeof fields.format === 'string' && /^vera-backup-v\d+$/.test(fields.format)) {
      throw new BackupError('unsupported', `backup format is ${fields.format}; this version reads ${BACKUP_FORMAT}`);
    }
    throw new BackupError('corrupt', `the header names format ${JSON.stringify(fields.format)}, not ${BACKUP_FORMAT}: damaged, or not a Vera backup`);
  }
  const bytes = fields.bytes;
  if (typeof bytes !== 'number' || !Number.isSafeInteger(bytes) || bytes < 0) throw new BackupError('corrupt', `header field bytes must be a non-negative integer, got ${JSON.stringify(bytes)}`);
  const bodyStart = newline + 1;
  const expected = bodyStart + bytes + TRAILER_BYTES;
  if (size < expected) throw new BackupError('truncated', `file is ${size} bytes but its header promises ${expected}: it is truncated`);
  if (size > expected) throw new BackupError('corrupt', `file is ${size} bytes but its header promises ${expected}: unexpected bytes at the end`);
  if (sha256 === null) throw new BackupError('corrupt', `checksum mismatch: the file's content does not hash to the sha256 in its trailer`);
  const header = checkHeader(fields);
  const backup: VerifiedBackup = { header, path, bodyStart, sha256, records: 0 };
  let records = 0;
  let carried: number;
  try {
    for await (const _record of readRecords(backupBody(backup))) records++;
    carried = await appliedIndexIn(readRecords(backupBody(backup)), APPLIED_INDEX);
  } catch (cause) {
    throw new BackupError('corrupt', `the state in the file does not decode: ${describe(cause)}`, { cause });
  }
  if (carried !== header.index) throw new BackupError('corrupt', `the state reflects index ${carried} but the header says ${header.index}`);
  return { ...backup, records };
}

async function fileSize(path: string): Promise<number> {
  const info = await stat(path);
  if (!info.isFile()) throw new BackupError('corrupt', 'not a regular file');
  return info.size;
}

/** The trailer's sha256 when the file ends with one that matches everything before it; null otherwise. */
async function intactChecksum(path: string, size: number): Promise<string | null> {
  if (size < TRAILER_BYTES) return null;
  const trailer = await readRange(path, size - TRAILER_BYTES, TRAILER_BYTES);
  const match = /^sha256 ([0-9a-f]{64})\n$/.exec(trailer.toString('latin1'));
  if (match === null) return null;
  const hash = createHash('sha256');
  for await (const chunk of fileChunks(path, 0, size - TRAILER_BYTES)) hash.update(chunk);
  const actual = hash.digest('hex');
  return actual === match[1] ? actual : null;
}

/** Up to `length` bytes of the file from `position`. */
async function readRange(path: string, position: number, length: number): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const out = Buffer.alloc(length);
    const { bytesRead } = await handle.read(out, 0, length, position);
    return out.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

function parseJsonObject(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new BackupError('corrupt', 'the header line is not JSON: not a Vera backup, or damaged');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new BackupError('corrupt', 'the header is not a JSON object');
  return value as Record<string, unknown>;
}

/** The header fields of an intact vera-backup-v1 file, checked. */
function checkHeader(h: Record<string, unknown>): BackupHeader {
  const count = (name: string): number => {
    const n = h[name];
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw new BackupError('corrupt', `header field ${name} must be a non-negative integer, got ${JSON.stringify(n)}`);
    return n;
  };
  const ids = (v: unknown): v is string[] => Array.isArray(v) && v.every((id) => typeof id === 'string' && id !== '');
  const config = h.config as Record<string, unknown> | null;
  if (typeof config !== 'object' || config === null || !ids(config.voters) || !ids(config.learners)) {
    throw new BackupError('corrupt', 'header field config must be {voters: [...], learners: [...]}');
  }
  if (typeof h.node !== 'string' || typeof h.created !== 'string') throw new BackupError('corrupt', 'header fields node and created must be strings');
  const bytes = count('bytes');
  return {
    format: BACKUP_FORMAT,
    index: count('index'),
    term: count('term'),
    config: { voters: [...config.voters], learners: [...config.learners] },
    bytes,
    node: h.node,
    created: h.created,
  };
}

// ---------------------------------------------------------------- serving GET /v1/snapshot

/** What a member must offer to be backed up. */
export interface BackupSource {
  readonly id: NodeId;
  /** Resolves once the local state machine reflects every write acknowledged before the call. */
  linearizableBarrier(timeoutMs: number): Promise<void>;
  /** A consistent view of the state machine (a LevelDB snapshot). */
  captureState(): Promise<CapturedState>;
  /** Term and configuration at an applied index still covered by the log (null otherwise). */
  snapshotMetaAt(index: number): SnapshotMeta | null;
}

export interface ServeBackupOptions {
  /** Bound on the linearizable barrier taken first. */
  readonly barrierTimeoutMs: number;
  readonly logger: Logger;
  /** Answers an error that happened before anything was sent (the caller maps it to a status code). */
  readonly fail: (err: unknown) => void;
}

/**
 * Streams a backup: a linearizable barrier first, so the file holds every write
 * acknowledged before the request (on a follower too), then the state captured
 * from one LevelDB snapshot. An error once the body has started aborts the
 * response, so the client sees a short file, which verifyBackup refuses.
 */
export async function serveBackup(source: BackupSource, req: IncomingMessage, res: ServerResponse, options: ServeBackupOptions): Promise<void> {
  const started = performance.now();
  let captured: { state: CapturedState; meta: SnapshotMeta };
  try {
    await source.linearizableBarrier(options.barrierTimeoutMs);
    captured = await captureWithMeta(source);
  } catch (err) {
    options.fail(err);
    return;
  }
  const { state, meta } = captured;
  try {
    let bytes = 0;
    for await (const chunk of state.chunks()) bytes += chunk.length;
    const header = encodeHeader({ format: BACKUP_FORMAT, index: meta.index, term: meta.term, config: meta.config, bytes, node: source.id, created: new Date().toISOString() });
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': header.length + bytes + TRAILER_BYTES,
      'content-disposition': `attachment; filename="vera-${source.id}-${meta.index}.backup"`,
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    const hash = createHash('sha256').update(header);
    await writeWithBackpressure(res, header);
    let sent = 0;
    for await (const chunk of state.chunks()) {
      hash.update(chunk);
      sent += chunk.length;
      await writeWithBackpressure(res, chunk);
    }
    // Same snapshot, same bytes; if not, send a short file rather than a wrong one.
    if (sent !== bytes) throw new Error(`the second pass over the snapshot gave ${sent} bytes, the first ${bytes}`);
    await writeWithBackpressure(res, encodeTrailer(hash.digest('hex')));
    res.end();
    options.logger.info({ event: 'backup-sent', index: meta.index, term: meta.term, bytes, ms: Math.round(performance.now() - started) }, `backup at index ${meta.index} sent`);
  } catch (err) {
    options.logger.warn({ event: 'backup-failed', index: meta.index, err: describe(err) }, 'backup stream aborted');
    if (res.headersSent) res.destroy();
    else options.fail(err);
  } finally {
    await state.release();
  }
}

/** The capture and its Raft meta. Compaction may race past a fresh capture's index; then capture again. */
async function captureWithMeta(source: BackupSource): Promise<{ state: CapturedState; meta: SnapshotMeta }> {
  for (let attempt = 1; ; attempt++) {
    const state = await source.captureState();
    const meta = source.snapshotMetaAt(state.index);
    if (meta !== null) return { state, meta };
    await state.release();
    if (attempt === 3) throw new Error(`no Raft meta for the captured index ${state.index}`);
  }
}

// ---------------------------------------------------------------- restore

/** The only member of a restored cluster, and where it listens (recorded in the replicated address book). */
export interface RestoredMember extends MemberAddress {
  readonly id: NodeId;
}

export interface RestoreResult {
  readonly dir: string;
  readonly member: RestoredMember;
  /** The log of the new store starts after this index (the backup's). */
  readonly index: number;
  readonly term: number;
  /** The new cluster's id: fresh, so members of the backed-up cluster can never talk to it. */
  readonly clusterId: string;
}

/**
 * Creates a new single-member store in `dir` (which must be absent or empty)
 * holding a verified backup's state, so `vera start --id <id> --data <dir>`
 * serves it. The backup's address book is replaced by one naming only `member`,
 * matching the store's Raft configuration. Built in a sibling temporary
 * directory and renamed into place, so `dir` either stays as it was or becomes
 * the complete store.
 */
export async function restoreBackup(backup: VerifiedBackup, dir: string, member: RestoredMember): Promise<RestoreResult> {
  const problem = addressProblem({ host: member.host, peerPort: member.peerPort, clientPort: member.clientPort });
  if (problem !== null) throw new BackupError('invalidArgument', `the restored member's address ${problem}`);
  await checkTargetIsFree(dir);
  const { index, term } = backup.header;
  const config: ClusterConfig = { voters: [member.id], learners: [] };
  const book = encodeMembers(initialMembers([member]));
  const clusterId = `vera-restored-${randomBytes(16).toString('hex')}`;
  const temporary = join(dirname(dir), `.${basename(dir)}.restoring-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    const opened = await openDataDir(temporary, { initialConfig: config, nodeId: member.id, clusterId });
    try {
      if (!opened.fresh) throw new BackupError('io', `${temporary} unexpectedly held a store`);
      // Written in bounded batches, not atomically: a crash leaves only the temporary directory.
      await replaceState(opened.db, readRecords(backupBody(backup)));
      // The log starts after the backup's index, empty; the state machine holds the backup, its
      // address book replaced by one naming only the restored member.
      await opened.storage.installSnapshot({ index, term, config }, [{ type: 'put', key: MEMBERS_KEY, value: book }]);
      // Start in the backup's term, so the first election opens a newer one and
      // terms never go down along the log.
      await opened.storage.persist({ term, vote: null, commit: index }, []);
    } finally {
      await opened.close();
    }
    await checkRestored(temporary, member.id, config, index);
    await rename(temporary, dir); // replaces an empty directory; dir is otherwise absent
    await fsyncDir(dirname(dir));
  } catch (err) {
    await rm(temporary, { recursive: true, force: true });
    if (err instanceof BackupError) throw err;
    throw new BackupError('io', `cannot create the store in ${dir}: ${describe(err)}`, { cause: err });
  }
  return { dir, member, index, term, clusterId };
}

async function checkTargetIsFree(dir: string): Promise<void> {
  let entries: string[];
  try {
    const info = await stat(dir);
    if (!info.isDirectory()) throw new BackupError('targetExists', `${dir} exists and is not a directory`);
    entries = await readdir(dir);
  } catch (err) {
    if (err instanceof BackupError) throw err;
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new BackupError('io', `cannot inspect ${dir}: ${describe(err)}`, { cause: err });
  }
  if (entries.includes('db')) throw new BackupError('targetExists', `${dir} already holds a Vera store; restore into a new directory`);
  if (entries.length > 0) throw new BackupError('targetExists', `${dir} is not empty (holds ${entries.sort().slice(0, 5).join(', ')}); restore into a new or empty directory`);
}

/** Opens the new store the way `vera start` will, and checks it resumes at the backup's index. */
async function checkRestored(dir: string, id: NodeId, config: ClusterConfig, index: number): Promise<void> {
  const opened = await openDataDir(dir, { initialConfig: config, nodeId: id });
  try {
    const loaded = await opened.storage.load();
    const sm = await StateMachine.open(opened.db, REGISTRY);
    if (loaded.snapshot.index !== index || loaded.entries.length !== 0 || sm.appliedIndex !== index) {
      throw new BackupError('io', `the restored store reads back at log start ${loaded.snapshot.index} / applied ${sm.appliedIndex}, expected ${index}`);
    }
    const members = sm.members().map((m) => m.id);
    if (members.length !== 1 || members[0] !== id) throw new BackupError('io', `the restored store's address book lists ${members.join(', ')}, expected only ${id}`);
  } finally {
    await opened.close();
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
