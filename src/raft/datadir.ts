// A Vera data directory: <dir>/db is the LevelDB (Raft log + state machine);
// <dir>/snapshots is reserved for snapshot files. The rule that matters most:
// a directory that is not clearly ours, or is damaged, is refused and left
// exactly as it was. Nothing here ever deletes or re-initialises a store.
//
// A new store is built under a temporary name and renamed to <dir>/db only once
// its format marker, node id and initial Raft state are synced, so <dir>/db
// existing means "complete Vera store"; a crash during creation leaves only a
// temporary directory, which the next start ignores and removes. Once db/ is
// there it identifies the store, so entries beside it (snapshots/, logs) are fine.
//
// Besides the format marker and node id, bucket 0x0000 holds the store's identity
// as other members see it: a random incarnation id drawn when the store is
// created (a wiped and recreated directory gets a new one, so peers can tell it
// is not the member they knew), the cluster id, and the incarnations of the
// other members as first seen (trust on first use, see IncarnationGuard).

import { ClassicLevel } from 'classic-level';
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { access, mkdir, readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import { fsyncDir } from './fsync.js';
import { finishInterruptedInstall } from './snapshot-install.js';
import { checkedValueEncoding } from './checked-values.js';
import { checkLevelFiles, LevelFileDamage } from './level-files.js';
import { ACK_RECORD_FILENAME, AckRecord, rollbackProblem } from './ack-record.js';
import { dirname, join } from 'node:path';
import { Packr } from 'msgpackr';
import { propertyKey } from '../keys/index.js';
import { LevelLogStorage, type LevelDb } from './leveldb-storage.js';
import type { AppliedIndexField } from './state-transfer.js';
import type { ClusterConfig, NodeId } from './types.js';

/** v2: every value carries a CRC-32C (checked-values.ts). */
export const STORE_FORMAT = 'vera-store-v2';
/** 0x0000 'format': msgpack string STORE_FORMAT. Peer-local, so snapshots never carry it. */
export const FORMAT_KEY = propertyKey('format');
/** 0x0000 'nodeId': msgpack string, the id this store was created for. */
export const NODE_ID_KEY = propertyKey('nodeId');
/** 0x0000 'incarnation': msgpack string, random, drawn once when the store is created. */
export const INCARNATION_KEY = propertyKey('incarnation');
/**
 * 0x0000 'clusterId': msgpack string, or nil for a store created to join a cluster
 * that has not yet met it. Absent in stores created before it existed.
 */
export const CLUSTER_ID_KEY = propertyKey('clusterId');
/** 0x0000 'peerIncarnations': msgpack map member id -> incarnation, as first seen. */
export const PEER_INCARNATIONS_KEY = propertyKey('peerIncarnations');
export const DB_DIRNAME = 'db';
export const SNAPSHOTS_DIRNAME = 'snapshots';

const CREATING_PREFIX = '.db-creating-';
// A filesystem root (a dedicated mount) carries lost+found; that alone does not make a directory foreign.
// `vera dev` keeps its members under ./vera-data/dev, beside the default single node's store.
const IGNORABLE_ENTRIES: ReadonlySet<string> = new Set(['lost+found', 'dev']);
const packr = new Packr({ useRecords: false });

export type DataDirErrorCode =
  | 'invalidArgument'
  /** The path exists but is not a directory. */
  | 'notADirectory'
  /** Holds something other than a Vera store (other files, or a LevelDB without the Vera marker). */
  | 'foreign'
  /** A Vera store of a format this version does not read. */
  | 'unsupportedFormat'
  /** A Vera store created for another node id. */
  | 'wrongNode'
  /** Looks like a Vera store but cannot be opened or read consistently. */
  | 'corrupt'
  /** Permissions or other I/O errors. */
  | 'unreadable'
  /** Another process (or another open in this one) holds the LevelDB lock. */
  | 'locked';

export class DataDirError extends Error {
  override readonly name = 'DataDirError';
  constructor(
    readonly code: DataDirErrorCode,
    readonly dir: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`data directory ${dir}: ${message}`, options);
  }
}

export interface OpenDataDirOptions {
  /** The cluster configuration a brand-new store starts with; ignored for an existing store. */
  readonly initialConfig: ClusterConfig;
  readonly nodeId: NodeId;
  /**
   * The cluster id a brand-new store records; null for a store that joins an
   * existing cluster and learns it from the first member that authenticates.
   * An older store without one records this value (undefined: leave it unset).
   */
  readonly clusterId?: string | null;
  /** Extra state a brand-new store starts with, written in the batch that creates it (e.g. the address book). */
  readonly initialState?: ReadonlyArray<{ readonly key: Buffer; readonly value: Buffer }>;
  /** LevelDB's max_open_files (its default, 1000, when absent): the server sizes it to the open-file limit. */
  readonly maxOpenFiles?: number;
  /** Where the state machine keeps its applied index, to check it against the acknowledgement record. */
  readonly appliedIndex?: AppliedIndexField;
}

/** Who this store is to the other members. */
export interface StoreIdentity {
  /** Random, drawn when the store was created; a recreated directory has a new one. */
  readonly incarnation: string;
  /** null while a joining store has not learned its cluster's id. */
  readonly clusterId: string | null;
}

export interface OpenedDataDir {
  /** Shared by the Raft log and the state machine; closed by close(). */
  readonly db: LevelDb;
  readonly storage: LevelLogStorage;
  /** true when this call created the store. */
  readonly fresh: boolean;
  readonly identity: StoreIdentity;
  /** Closes the log storage, then the database. */
  close(): Promise<void>;
}

export async function openDataDir(dir: string, options: OpenDataDirOptions): Promise<OpenedDataDir> {
  if (typeof dir !== 'string' || dir === '') throw new DataDirError('invalidArgument', String(dir), 'path must be a non-empty string');
  if (typeof options.nodeId !== 'string' || options.nodeId === '') {
    throw new DataDirError('invalidArgument', dir, 'node id must be a non-empty string');
  }
  const entries = await listOrCreate(dir);
  const leftovers = entries.filter((name) => name.startsWith(CREATING_PREFIX));
  const meaningful = entries.filter((name) => !name.startsWith(CREATING_PREFIX) && !IGNORABLE_ENTRIES.has(name));

  let fresh = false;
  if (!meaningful.includes(DB_DIRNAME)) {
    if (meaningful.length > 0) {
      throw new DataDirError('foreign', dir, `not a Vera data directory (no ${DB_DIRNAME}/, but holds: ${meaningful.sort().join(', ')}); refusing to use it`);
    }
    fresh = await createStore(dir, options);
  }
  const opened = await openExistingStore(dir, options);
  // Safe only now: we hold <dir>/db's lock, so any creator still running has lost the race to the rename.
  await Promise.all(leftovers.map((name) => rm(join(dir, name), { recursive: true, force: true })));
  return { ...opened, fresh };
}

async function listOrCreate(dir: string): Promise<string[]> {
  try {
    const info = await stat(dir);
    if (!info.isDirectory()) throw new DataDirError('notADirectory', dir, 'exists but is not a directory');
  } catch (error) {
    if (error instanceof DataDirError) throw error;
    if (errorCode(error) !== 'ENOENT') throw ioError(dir, 'cannot stat', error);
    try {
      await mkdir(dir, { recursive: true });
      await fsyncDir(dirname(dir));
    } catch (cause) {
      throw ioError(dir, 'cannot create', cause);
    }
  }
  try {
    return await readdir(dir);
  } catch (cause) {
    throw ioError(dir, 'cannot list', cause);
  }
}

/** Builds a complete store under a temporary name and renames it into place. Returns false if another creator won. */
async function createStore(dir: string, options: OpenDataDirOptions): Promise<boolean> {
  const temporary = join(dir, `${CREATING_PREFIX}${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    const db = openLevel(temporary, true);
    try {
      await db.open();
      await db.batch(
        [
          { type: 'put', key: FORMAT_KEY, value: packr.pack(STORE_FORMAT) },
          { type: 'put', key: NODE_ID_KEY, value: packr.pack(options.nodeId) },
          { type: 'put', key: INCARNATION_KEY, value: packr.pack(newIncarnation()) },
          // Undefined (e.g. a restore tool): left unset, so the first real start records its cluster id.
          ...(options.clusterId === undefined ? [] : [{ type: 'put' as const, key: CLUSTER_ID_KEY, value: packr.pack(options.clusterId) }]),
          ...(options.initialState ?? []).map((op) => ({ type: 'put' as const, key: op.key, value: op.value })),
        ],
        { sync: true },
      );
      // Writes the initial snapshot meta (with the initial config) before the store becomes visible.
      const storage = await LevelLogStorage.open(db, { initialConfig: options.initialConfig });
      await storage.close();
    } finally {
      await db.close();
    }
  } catch (cause) {
    await rm(temporary, { recursive: true, force: true });
    throw ioError(dir, 'cannot create a new store', cause);
  }
  try {
    await rename(temporary, join(dir, DB_DIRNAME));
    await fsyncDir(dir);
    return true;
  } catch (cause) {
    await rm(temporary, { recursive: true, force: true });
    const code = errorCode(cause);
    if (code === 'ENOTEMPTY' || code === 'EEXIST') return false; // a concurrent creator got there first
    throw ioError(dir, 'cannot move the new store into place', cause);
  }
}

async function openExistingStore(dir: string, options: OpenDataDirOptions): Promise<Omit<OpenedDataDir, 'fresh'>> {
  const dbPath = join(dir, DB_DIRNAME);
  await checkLevelFilesBeforeOpen(dir, dbPath);
  // createIfMissing:false: LevelDB must never create a fresh database over files it could not recover.
  const db = openLevel(dbPath, false, options.maxOpenFiles);
  try {
    await db.open();
  } catch (error) {
    throw openError(dir, error);
  }
  try {
    await checkIdentity(dir, db, options.nodeId);
    const identity = await loadStoreIdentity(dir, db, options.clusterId);
    const storage = await LevelLogStorage.open(db, { initialConfig: options.initialConfig });
    await finishSnapshotInstall(dir, db, storage);
    const acked = await checkAgainstAckRecord(dir, db, storage, options.appliedIndex);
    storage.recordAcknowledgementsIn(acked);
    return {
      db,
      storage,
      identity,
      close: async () => {
        await storage.close();
        await acked.close();
        await db.close();
      },
    };
  } catch (error) {
    await db.close();
    if (error instanceof DataDirError) throw error;
    throw new DataDirError('corrupt', dir, `the Raft log cannot be opened: ${describe(error)}`, { cause: error });
  }
}

/**
 * A store that came back behind what this member acknowledged (ack-record.ts) is
 * refused: serving it would lose committed writes or let the member vote twice.
 */
async function checkAgainstAckRecord(dir: string, db: LevelDb, storage: LevelLogStorage, appliedField: AppliedIndexField | undefined): Promise<AckRecord> {
  let record: AckRecord;
  try {
    record = await AckRecord.open(dir);
  } catch (error) {
    await storage.close();
    throw ioError(join(dir, ACK_RECORD_FILENAME), 'cannot open the acknowledgement record', error);
  }
  const acknowledged = record.acknowledged;
  let problem: string | null = null;
  if (acknowledged !== null) {
    const rawApplied = appliedField === undefined ? undefined : await db.get(appliedField.key);
    const applied = rawApplied === undefined || appliedField === undefined ? 0 : appliedField.decode(rawApplied);
    problem = rollbackProblem(acknowledged, { ...(await storage.durableState()), applied });
  }
  if (problem !== null) {
    await storage.close();
    await record.close();
    throw new DataDirError(
      'corrupt',
      dir,
      `the store is behind what this member acknowledged (${ACK_RECORD_FILENAME}: term ${acknowledged!.term}, commit ${acknowledged!.commit}): ${problem}. ` +
        `Its LevelDB files were damaged or rolled back; serving it could lose acknowledged writes or vote twice. ` +
        READD_ADVICE,
    );
  }
  return record;
}

/** A snapshot install a crash interrupted is completed before anything reads the store (snapshot-install.ts). */
async function finishSnapshotInstall(dir: string, db: LevelDb, storage: LevelLogStorage): Promise<void> {
  try {
    await finishInterruptedInstall(db, storage, join(dir, SNAPSHOTS_DIRNAME));
  } catch (error) {
    await storage.close();
    throw new DataDirError(
      'corrupt',
      dir,
      `${describe(error)}. This member cannot serve this store: remove it from the cluster (vera member remove ID), delete its data directory, and add it back (vera member add, then start it with --join), as docs/operations.md describes for a wiped member`,
      { cause: error },
    );
  }
}

/**
 * LevelDB rewrites files as it opens (info log rotation, recovery), so a store
 * that is visibly broken is refused before LevelDB ever touches it. A missing
 * CURRENT is the dangerous case: LevelDB would treat the directory as empty.
 */
async function checkLevelFilesBeforeOpen(dir: string, dbPath: string): Promise<void> {
  let current: string;
  try {
    const info = await stat(dbPath);
    if (!info.isDirectory()) throw new DataDirError('corrupt', dir, `${DB_DIRNAME} is not a directory`);
    await access(dbPath, fsConstants.R_OK | fsConstants.W_OK | fsConstants.X_OK);
    current = await readFile(join(dbPath, 'CURRENT'), 'utf8');
  } catch (error) {
    if (error instanceof DataDirError) throw error;
    if (errorCode(error) === 'ENOENT') {
      throw new DataDirError('corrupt', dir, `${DB_DIRNAME}/CURRENT is missing: not a complete LevelDB; refusing to open it`, { cause: error });
    }
    throw ioError(dir, `cannot read ${DB_DIRNAME}`, error);
  }
  const manifest = /^(MANIFEST-[0-9]+)\n$/.exec(current)?.[1];
  if (manifest === undefined) {
    throw new DataDirError('corrupt', dir, `${DB_DIRNAME}/CURRENT does not name a MANIFEST file (got ${JSON.stringify(current.slice(0, 64))})`);
  }
  try {
    const info = await stat(join(dbPath, manifest));
    if (!info.isFile()) throw new Error(`${manifest} is not a file`);
  } catch (cause) {
    throw new DataDirError('corrupt', dir, `${DB_DIRNAME}/CURRENT names ${manifest}, which cannot be found`, { cause });
  }
  // LevelDB would drop a damaged log record (and the rest of its block) with a line in its own
  // info log, and never checks table block checksums on its own: the member would start with less.
  try {
    await checkLevelFiles(dbPath, await readdir(dbPath), manifest);
  } catch (error) {
    if (!(error instanceof LevelFileDamage)) throw ioError(dir, `cannot read ${DB_DIRNAME}`, error);
    throw new DataDirError('corrupt', dir, `${DB_DIRNAME}/${error.message}. LevelDB would drop what it cannot read and start without it. ${READD_ADVICE}`, { cause: error });
  }
}

/** How to bring back a member whose store cannot be trusted (docs/operations.md, "A wiped data directory"). */
const READD_ADVICE =
  'Remove the member from the cluster (vera member remove ID), delete its data directory, and add it back (vera member add, then start it with --join), as docs/operations.md describes for a wiped member';

async function checkIdentity(dir: string, db: LevelDb, nodeId: NodeId): Promise<void> {
  // Read raw first: a store of another format has no checksums to verify.
  const rawFormat = await db.get(FORMAT_KEY, { valueEncoding: 'buffer' });
  if (rawFormat === undefined) {
    throw new DataDirError('foreign', dir, `${DB_DIRNAME} is a LevelDB without the Vera format marker; refusing to use it`);
  }
  const format = formatIn(rawFormat);
  if (format !== STORE_FORMAT) {
    throw new DataDirError('unsupportedFormat', dir, `store format is ${JSON.stringify(format)}, this version reads ${STORE_FORMAT}`);
  }
  const rawNodeId = await db.get(NODE_ID_KEY);
  const storedNodeId = rawNodeId === undefined ? undefined : unpackOrUndefined(rawNodeId);
  if (typeof storedNodeId !== 'string') throw new DataDirError('corrupt', dir, 'the store has no valid node id');
  if (storedNodeId !== nodeId) {
    throw new DataDirError('wrongNode', dir, `the store belongs to node ${JSON.stringify(storedNodeId)}, not ${JSON.stringify(nodeId)}`);
  }
}

/**
 * Reads the incarnation and cluster id. A store from before they existed gets an
 * incarnation now (peers have never seen one, so nobody can be misled by it)
 * and records the cluster id it is started with.
 */
async function loadStoreIdentity(dir: string, db: LevelDb, clusterId: string | null | undefined): Promise<StoreIdentity> {
  const [rawIncarnation, rawClusterId] = await db.getMany([INCARNATION_KEY, CLUSTER_ID_KEY]);
  const ops: Array<{ type: 'put'; key: Buffer; value: Buffer }> = [];
  let incarnation = rawIncarnation === undefined ? undefined : unpackOrUndefined(rawIncarnation);
  if (rawIncarnation === undefined) {
    incarnation = newIncarnation();
    ops.push({ type: 'put', key: INCARNATION_KEY, value: packr.pack(incarnation) });
  } else if (typeof incarnation !== 'string' || incarnation === '') {
    throw new DataDirError('corrupt', dir, 'the store has no valid incarnation id');
  }
  let stored: unknown = null;
  if (rawClusterId === undefined) {
    stored = clusterId ?? null;
    if (clusterId !== undefined) ops.push({ type: 'put', key: CLUSTER_ID_KEY, value: packr.pack(clusterId) });
  } else {
    stored = unpackOrUndefined(rawClusterId);
    if (stored !== null && (typeof stored !== 'string' || stored === '')) throw new DataDirError('corrupt', dir, 'the store has an invalid cluster id');
  }
  if (ops.length > 0) await db.batch(ops, { sync: true });
  return { incarnation: incarnation as string, clusterId: stored as string | null };
}

/** Records the cluster id a joining store learned; never replaces one already known. */
export async function rememberClusterId(db: LevelDb, clusterId: string): Promise<void> {
  const raw = await db.get(CLUSTER_ID_KEY);
  const known = raw === undefined ? null : unpackOrUndefined(raw);
  if (typeof known === 'string' && known !== '') {
    if (known !== clusterId) throw new Error(`the store already belongs to cluster ${known}, not ${clusterId}`);
    return;
  }
  await db.put(CLUSTER_ID_KEY, packr.pack(clusterId), { sync: true });
}

/** The incarnation first seen for each other member. */
export async function readPeerIncarnations(db: LevelDb): Promise<Map<NodeId, string>> {
  const raw = await db.get(PEER_INCARNATIONS_KEY);
  const out = new Map<NodeId, string>();
  if (raw === undefined) return out;
  const value = unpackOrUndefined(raw);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('0x0000 peerIncarnations is not a map');
  for (const [id, inc] of Object.entries(value as Record<string, unknown>)) {
    if (typeof inc !== 'string') throw new Error(`0x0000 peerIncarnations has a bad entry for ${id}`);
    out.set(id, inc);
  }
  return out;
}

export async function writePeerIncarnations(db: LevelDb, incarnations: ReadonlyMap<NodeId, string>): Promise<void> {
  const sorted = Object.fromEntries([...incarnations].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  await db.put(PEER_INCARNATIONS_KEY, packr.pack(sorted), { sync: true });
}

function newIncarnation(): string {
  return randomBytes(16).toString('hex');
}

function openError(dir: string, error: unknown): DataDirError {
  const cause = error instanceof Error && error.cause !== undefined ? error.cause : error;
  if (errorCode(error) === 'LEVEL_LOCKED' || errorCode(cause) === 'LEVEL_LOCKED') {
    return new DataDirError('locked', dir, 'the store is in use by another process or open (LevelDB LOCK is held)', { cause: error });
  }
  return new DataDirError('corrupt', dir, `LevelDB cannot open the store: ${describe(cause)}`, { cause: error });
}

/**
 * LevelDB's memtable, and so the most its write-ahead log (the .log file) holds before
 * it is flushed to a table. The log repeats what the memtable holds; with LevelDB's
 * default of 4 MiB it was most of a hibernating member's hot store (docs/hibernation.md).
 * Smaller memtables mean more, smaller level-0 tables: 1 MiB cost S2 with new keys about
 * a tenth of its throughput, 2 MiB was within the rounds' spread (bench/results/2026-11-28d-memtable).
 */
export const WRITE_BUFFER_BYTES = 2 * 1024 * 1024;

function openLevel(path: string, create: boolean, maxOpenFiles?: number): LevelDb {
  // Open options go to the constructor: it starts opening at once, and a later open() only waits for that.
  return new ClassicLevel<Buffer, Buffer>(path, {
    keyEncoding: 'buffer',
    valueEncoding: checkedValueEncoding as unknown as 'buffer',
    createIfMissing: create,
    errorIfExists: create,
    writeBufferSize: WRITE_BUFFER_BYTES,
    ...(maxOpenFiles === undefined ? {} : { maxOpenFiles }),
  });
}

/** The format name in a stored marker: checksummed (v2 on) or plain (v1). */
function formatIn(stored: Buffer): unknown {
  try {
    return unpackOrUndefined(checkedValueEncoding.decode(stored));
  } catch {
    return unpackOrUndefined(stored);
  }
}

function unpackOrUndefined(raw: Buffer): unknown {
  try {
    return packr.unpack(raw);
  } catch {
    return undefined;
  }
}

function ioError(dir: string, what: string, cause: unknown): DataDirError {
  const code = errorCode(cause);
  const detail = code === 'EACCES' || code === 'EPERM' ? 'permission denied' : describe(cause);
  return new DataDirError('unreadable', dir, `${what}: ${detail}`, { cause });
}

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
