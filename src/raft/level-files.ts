// Checks every checksum in a LevelDB directory's write-ahead logs (.log) and
// table files (.ldb/.sst) before LevelDB opens it. LevelDB itself, without
// paranoid checks (which classic-level does not expose), drops a damaged log
// record and the rest of its 32 KiB block with only a line in its info log,
// and reads table blocks without verifying their checksums: one changed byte
// could make a member start without writes it had, or miss a key. Here any
// damage is an error that names the file and offset.
//
// Formats (LevelDB's doc/log_format.md and doc/table_format.md):
// - a log is 32 KiB blocks of records: masked CRC-32C (4, LE), length (2, LE),
//   type (1: full, 2: first, 3: middle, 4: last), payload; the CRC covers the
//   type byte and the payload; fewer than 7 bytes left in a block are padding.
// - a table ends with a 48-byte footer: the metaindex and index block handles
//   (varint offset and size each) and a magic number. Each block is followed by
//   a type byte (0 raw, 1 snappy) and the masked CRC-32C of block plus type. The
//   index block maps keys to data block handles; the metaindex names the filter.

import { open } from 'node:fs/promises';
import { crc32c } from './crc32c.js';

const BLOCK_BYTES = 32 * 1024;
const HEADER_BYTES = 7;
const FOOTER_BYTES = 48;
const BLOCK_TRAILER_BYTES = 5;
const TABLE_MAGIC = Buffer.from('57fb808b247547db', 'hex'); // 0xdb4775248b80fb57, little-endian
const MASK_DELTA = 0xa282ead8;

export class LevelFileDamage extends Error {
  override readonly name = 'LevelFileDamage';
  constructor(
    readonly file: string,
    readonly offset: number,
    readonly problem: string,
  ) {
    super(`${file} is damaged at byte ${offset}: ${problem}`);
  }
}

function unmask(masked: number): number {
  const rot = (masked - MASK_DELTA) >>> 0;
  return ((rot >>> 17) | (rot << 15)) >>> 0;
}

/**
 * Every record of a write-ahead log must be whole and match its checksum. Only
 * the newest log (`newest`) may end in a record cut short by a crash, as a
 * write in progress leaves it; what such a record held was not synced before
 * the crash (a synced write is complete), and the high-water record
 * (ack-record.ts) catches the loss of anything the member relied on.
 */
export function checkLogBytes(file: string, bytes: Buffer, newest: boolean): void {
  let fragmented = false; // inside a first..last run
  const tornTail = (at: number, problem: string): void => {
    if (!newest) throw new LevelFileDamage(file, at, problem);
  };
  for (let block = 0; block < bytes.length; block += BLOCK_BYTES) {
    const end = Math.min(block + BLOCK_BYTES, bytes.length);
    const lastBlock = end - block < BLOCK_BYTES; // only the file's final, partial block can hold a torn tail
    let at = block;
    while (at < end) {
      if (end - at < HEADER_BYTES) {
        if (!lastBlock) break; // padding at the end of a full block
        return tornTail(at, 'the log ends inside a record header');
      }
      const length = bytes.readUInt16LE(at + 4);
      const type = bytes[at + 6]!;
      if (at + HEADER_BYTES + length > end) {
        if (!lastBlock) throw new LevelFileDamage(file, at, 'a record runs past the end of its block (bad record length)');
        return tornTail(at, 'the log ends inside a record');
      }
      if (type === 0 && length === 0 && lastBlock && bytes.subarray(at).every((b) => b === 0)) return tornTail(at, 'the log ends in zeros');
      const crc = crc32c(bytes.subarray(at + 6, at + HEADER_BYTES + length));
      if (crc !== unmask(bytes.readUInt32LE(at))) throw new LevelFileDamage(file, at, 'checksum mismatch in a log record');
      if (type < 1 || type > 4) throw new LevelFileDamage(file, at, `unknown log record type ${type}`);
      if ((type === 1 || type === 2) === fragmented) throw new LevelFileDamage(file, at, 'log record fragments out of order');
      fragmented = type === 2 || type === 3;
      at += HEADER_BYTES + length;
    }
  }
  if (fragmented && !newest) throw new LevelFileDamage(file, bytes.length, 'the log ends inside a fragmented record');
}

/**
 * Every block of a table (data, filter, metaindex, index) must match its checksum, and the blocks must tile the file.
 * A data block's checksum covers its stored (compressed) bytes, so it is checked without decompressing it: only the
 * index and metaindex blocks are decompressed (tableBlocks reads them), which keeps a start on a large store quick.
 */
export function checkTableBytes(file: string, bytes: Buffer): void {
  const { footerAt, handles } = tableBlocks(file, bytes);
  for (const handle of handles) checkBlock(file, bytes, handle);
  // Blocks are written back to back: anything not covered by a checked block is unaccounted for.
  let next = 0;
  for (const handle of handles) {
    if (handle.offset !== next) throw new LevelFileDamage(file, next, 'bytes between blocks that no block handle covers');
    next = handle.offset + handle.size + BLOCK_TRAILER_BYTES;
  }
  if (next !== footerAt) throw new LevelFileDamage(file, next, 'bytes before the footer that no block handle covers');
}

export interface BlockHandle {
  readonly offset: number;
  readonly size: number;
}

/** Every block of a table, in file order (the index and metaindex blocks are checked as they are read). */
export function tableBlocks(file: string, bytes: Buffer): { footerAt: number; handles: BlockHandle[] } {
  if (bytes.length < FOOTER_BYTES) throw new LevelFileDamage(file, 0, 'shorter than a table footer');
  const footerAt = bytes.length - FOOTER_BYTES;
  if (!bytes.subarray(bytes.length - 8).equals(TABLE_MAGIC)) throw new LevelFileDamage(file, bytes.length - 8, 'bad table magic number');
  const footer = new Reader(file, bytes, footerAt, bytes.length - 8, footerAt);
  const metaindex = footer.handle();
  const index = footer.handle();
  const handles: BlockHandle[] = [metaindex, index];
  for (const parent of [index, metaindex]) {
    for (const value of blockValues(file, parent.offset, readBlock(file, bytes, parent))) handles.push(new Reader(file, value, 0, value.length, parent.offset).handle());
  }
  return { footerAt, handles: handles.sort((a, b) => a.offset - b.offset) };
}

/** The checksum LevelDB stores after a block: of its contents and its compression type byte, masked. */
export function blockChecksum(bytes: Buffer, handle: BlockHandle): number {
  const crc = crc32c(bytes.subarray(handle.offset, handle.offset + handle.size + 1));
  return (((crc >>> 15) | (crc << 17)) + MASK_DELTA) >>> 0;
}

/** Checks a block's bounds, checksum and compression type byte; returns that type. */
function checkBlock(file: string, bytes: Buffer, handle: BlockHandle): number {
  const end = handle.offset + handle.size;
  if (end + BLOCK_TRAILER_BYTES > bytes.length) throw new LevelFileDamage(file, handle.offset, 'a block handle points past the end of the file');
  if (blockChecksum(bytes, handle) !== bytes.readUInt32LE(end + 1)) throw new LevelFileDamage(file, handle.offset, 'checksum mismatch in a table block');
  const type = bytes[end]!;
  if (type !== 0 && type !== 1) throw new LevelFileDamage(file, end, `unknown block compression ${type}`);
  return type;
}

/** Reads a block by its handle, checks it (checkBlock) and returns its contents, decompressed. */
function readBlock(file: string, bytes: Buffer, handle: BlockHandle): Buffer {
  const type = checkBlock(file, bytes, handle);
  const contents = bytes.subarray(handle.offset, handle.offset + handle.size);
  return type === 0 ? contents : snappyDecompress(file, handle.offset, contents);
}

/** The values of a block's entries (prefix-compressed keys; the restart array at its end). */
function blockValues(file: string, offset: number, block: Buffer): Buffer[] {
  if (block.length < 4) throw new LevelFileDamage(file, offset, 'a block too short for its restart count');
  const restarts = block.readUInt32LE(block.length - 4);
  const dataEnd = block.length - 4 - 4 * restarts;
  if (dataEnd < 0) throw new LevelFileDamage(file, offset, 'a block restart array larger than the block');
  const reader = new Reader(file, block, 0, dataEnd, offset);
  const values: Buffer[] = [];
  while (!reader.done()) {
    reader.varint(); // shared key bytes
    const unshared = reader.varint();
    const valueLength = reader.varint();
    reader.skip(unshared);
    values.push(reader.take(valueLength));
  }
  return values;
}

class Reader {
  constructor(
    private readonly file: string,
    private readonly bytes: Buffer,
    private at: number,
    private readonly end: number,
    /** Where the bytes read are in the file, for messages. */
    private readonly fileOffset = 0,
  ) {}

  done(): boolean {
    return this.at >= this.end;
  }

  varint(): number {
    let value = 0;
    for (let shift = 0; shift < 64; shift += 7) {
      if (this.at >= this.end) break;
      const byte = this.bytes[this.at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
    }
    throw new LevelFileDamage(this.file, this.fileOffset, 'a malformed varint');
  }

  handle(): BlockHandle {
    return { offset: this.varint(), size: this.varint() };
  }

  skip(n: number): void {
    this.take(n);
  }

  take(n: number): Buffer {
    if (this.at + n > this.end) throw new LevelFileDamage(this.file, this.fileOffset, 'an entry runs past the end of its block');
    const out = this.bytes.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
}

/** Snappy's raw format: the uncompressed length, then literals and back-references. */
function snappyDecompress(file: string, offset: number, input: Buffer): Buffer {
  const bad = (what: string): LevelFileDamage => new LevelFileDamage(file, offset, `a snappy block that does not decompress (${what})`);
  let length = 0;
  let i = 0;
  for (let shift = 0; ; shift += 7) {
    if (i >= input.length || shift > 28) throw bad('a malformed length');
    const byte = input[i++]!;
    length += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) break;
  }
  if (length > 64 * 1024 * 1024) throw bad('implausible length');
  const out = Buffer.alloc(length);
  let o = 0;
  while (i < input.length) {
    const tag = input[i++]!;
    const kind = tag & 3;
    if (kind === 0) {
      let len = tag >>> 2;
      if (len >= 60) {
        const extra = len - 59;
        if (i + extra > input.length) throw bad('literal length past the end');
        len = 0;
        for (let k = 0; k < extra; k++) len += input[i + k]! * 2 ** (8 * k);
        i += extra;
      }
      len += 1;
      if (i + len > input.length || o + len > length) throw bad('literal past the end');
      input.copy(out, o, i, i + len);
      i += len;
      o += len;
      continue;
    }
    let len: number;
    let distance: number;
    if (kind === 1) {
      if (i >= input.length) throw bad('copy past the end');
      len = ((tag >>> 2) & 7) + 4;
      distance = ((tag >>> 5) << 8) | input[i++]!;
    } else if (kind === 2) {
      if (i + 2 > input.length) throw bad('copy past the end');
      len = (tag >>> 2) + 1;
      distance = input.readUInt16LE(i);
      i += 2;
    } else {
      if (i + 4 > input.length) throw bad('copy past the end');
      len = (tag >>> 2) + 1;
      distance = input.readUInt32LE(i);
      i += 4;
    }
    if (distance === 0 || distance > o || o + len > length) throw bad('a back-reference out of range');
    for (let k = 0; k < len; k++, o++) out[o] = out[o - distance]!;
  }
  if (o !== length) throw bad('shorter than its stated length');
  return out;
}

/** The whole records of a log whose checksums were checked, fragments joined; a torn tail yields nothing. */
function logRecords(bytes: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let parts: Buffer[] = [];
  for (let block = 0; block < bytes.length; block += BLOCK_BYTES) {
    const end = Math.min(block + BLOCK_BYTES, bytes.length);
    for (let at = block; end - at >= HEADER_BYTES; ) {
      const length = bytes.readUInt16LE(at + 4);
      const type = bytes[at + 6]!;
      if (at + HEADER_BYTES + length > end || (type === 0 && length === 0)) break;
      const payload = bytes.subarray(at + HEADER_BYTES, at + HEADER_BYTES + length);
      if (type === 1) out.push(payload);
      else if (type === 2) parts = [payload];
      else {
        parts.push(payload);
        if (type === 4) out.push(Buffer.concat(parts));
      }
      at += HEADER_BYTES + length;
    }
  }
  return out;
}

/** What a MANIFEST's version edits leave live: the table files, and the oldest log LevelDB replays. */
export interface LiveFiles {
  readonly tables: ReadonlySet<number>;
  /** Logs numbered below this (other than `prevLog`) are obsolete: LevelDB deletes them unread. */
  readonly logNumber: number;
  readonly prevLog: number;
}

// VersionEdit tags (LevelDB db/version_edit.cc).
const EDIT = { comparator: 1, logNumber: 2, nextFile: 3, lastSequence: 4, compactPointer: 5, deletedFile: 6, newFile: 7, prevLogNumber: 9 } as const;

/**
 * Replays a MANIFEST's version edits. A table a crash left half written (a
 * compaction's output not yet recorded) is not live, and LevelDB deletes it at
 * open: only live files are LevelDB's state, so only they are checked.
 */
export function liveFiles(manifest: string, bytes: Buffer): LiveFiles {
  const tables = new Set<number>();
  let logNumber = 0;
  let prevLog = 0;
  for (const record of logRecords(bytes)) {
    const r = new Reader(manifest, record, 0, record.length);
    while (!r.done()) {
      const tag = r.varint();
      if (tag === EDIT.comparator) r.skip(r.varint());
      else if (tag === EDIT.logNumber) logNumber = r.varint();
      else if (tag === EDIT.prevLogNumber) prevLog = r.varint();
      else if (tag === EDIT.nextFile || tag === EDIT.lastSequence) r.varint();
      else if (tag === EDIT.compactPointer) {
        r.varint();
        r.skip(r.varint());
      } else if (tag === EDIT.deletedFile) {
        r.varint();
        tables.delete(r.varint());
      } else if (tag === EDIT.newFile) {
        r.varint();
        tables.add(r.varint());
        r.varint(); // size
        r.skip(r.varint()); // smallest key
        r.skip(r.varint()); // largest key
      } else throw new LevelFileDamage(manifest, 0, `unknown version edit tag ${tag}`);
    }
  }
  return { tables, logNumber, prevLog };
}

/**
 * Checks the MANIFEST that CURRENT names (a log too, which LevelDB reads the same
 * forgiving way), then every log LevelDB will replay and every table the MANIFEST
 * holds live; throws LevelFileDamage at the first damage found. Files a crash left
 * behind that LevelDB will delete unread (a half-written compaction output, a log
 * already flushed) are not its state and are not judged.
 */
export async function checkLevelFiles(dbPath: string, names: readonly string[], manifest: string): Promise<void> {
  const manifestBytes = await readWhole(`${dbPath}/${manifest}`);
  checkLogBytes(manifest, manifestBytes, true);
  const live = liveFiles(manifest, manifestBytes);
  const numberOf = (name: string): number => Number.parseInt(name, 10);
  const logs = names
    .filter((n) => /^[0-9]+\.log$/.test(n) && (numberOf(n) >= live.logNumber || numberOf(n) === live.prevLog))
    .sort((a, b) => numberOf(a) - numberOf(b));
  const tables = names.filter((n) => /^[0-9]+\.(ldb|sst)$/.test(n) && live.tables.has(numberOf(n)));
  for (const [i, name] of logs.entries()) checkLogBytes(name, await readWhole(`${dbPath}/${name}`), i === logs.length - 1);
  for (const name of tables) checkTableBytes(name, await readWhole(`${dbPath}/${name}`));
}

async function readWhole(path: string): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}
