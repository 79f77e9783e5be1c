// The cold store of hibernation (issue 15, seed 004): one file per hibernated
// unit in a directory of its own (the slow, large disk), holding the unit's
// LevelDB entries exactly as they were (keys and values as bytes, so thawing
// restores them byte for byte, whatever family wrote them).
//
// A file is written whole and made durable before anything may rely on it:
// written under a temporary name, synced, renamed into place, and the
// directory synced, so a crash leaves either no file, a leftover temporary
// (ignored, and removed by sweep), or the complete file. Reading verifies it:
// a missing, truncated, corrupt, foreign or unknown-version file is a
// ColdStoreError naming the unit, never silently less data.
//
// Format (version 1), all integers big-endian:
//   magic "VERACOLD" (8) | format version u16 | reserved u16 (0) |
//   body length u32 | SHA-256 of (version, reserved, length, body) (32) | body
// body = deflate(msgpack [unit, meta, [[key, value], ...]]).
// A later format adds a decoder beside decodeV1; files of older versions stay
// readable, and thawing a unit rewrites nothing, so each unit moves to the
// new format the next time it freezes (the seed's schema-change hazard).
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { createDeflate, inflate, inflateSync } from 'node:zlib';
import { pack, unpack, unpackMultiple } from 'msgpackr';
import { fsyncDir } from '../../raft/fsync.js';

export const COLD_FORMAT_VERSION = 1;
const MAGIC = Buffer.from('VERACOLD', 'ascii');
const HEADER_BYTES = MAGIC.length + 2 + 2 + 4 + 32;
/** The largest body one file holds; a larger unit is not hibernated. */
export const MAX_COLD_BODY_BYTES = 1 << 30;
const SUFFIX = '.cold';
const TEMP_MARK = '.tmp-';

/** What one hibernated unit holds. */
export interface ColdUnit {
  /** The unit's path (a child of a hibernation root, such as `/users/alice`). */
  readonly unit: string;
  /** What the hibernation family records beside the entries (counts, the index it froze at). */
  readonly meta: Readonly<Record<string, unknown>>;
  /** The unit's LevelDB entries, keys ascending. */
  readonly entries: ReadonlyArray<readonly [Buffer, Buffer]>;
}

/** A unit to write: its entries as an array, or held (SlicedEntries, PackedEntries). */
export interface ColdUnitToWrite {
  readonly unit: string;
  readonly meta: Readonly<Record<string, unknown>>;
  readonly entries: HeldEntries;
}

/**
 * A unit's entries as a thaw in steps holds them: `length`, and `slice` giving the entries in
 * [from, to) as [key, value] pairs. A plain array is one; so is PackedEntries.
 */
export interface HeldEntries {
  readonly length: number;
  slice(from: number, to: number): Array<readonly [Buffer, Buffer]>;
}

/** A ColdUnit whose entries are held (readInSlices). */
export interface HeldColdUnit {
  readonly unit: string;
  readonly meta: Readonly<Record<string, unknown>>;
  readonly entries: HeldEntries;
}

/**
 * Entries held as where each key and value lies in one buffer (the decompressed body): four
 * numbers in one typed array an entry, where an array of pairs is three objects an entry. A
 * 100,000-item unit held for the steps of its thaw would otherwise put 300,000 objects in the
 * old generation of every member, and each major collection meanwhile would mark them all
 * (94 to 157 ms pauses measured on a loaded machine, every write on that member held as long).
 * `slice` gives views into the buffer (a LevelDB batch copies what it is given).
 */
export class PackedEntries implements HeldEntries {
  constructor(
    private readonly raw: Buffer,
    /** For entry n: key start and end, value start and end, at 4n to 4n + 3. */
    private readonly bounds: Uint32Array,
  ) {}

  get length(): number {
    return this.bounds.length / 4;
  }

  slice(from: number, to: number): Array<readonly [Buffer, Buffer]> {
    const out: Array<readonly [Buffer, Buffer]> = [];
    const b = this.bounds;
    for (let n = Math.max(0, from); n < Math.min(to, this.length); n++) out.push([this.raw.subarray(b[4 * n]!, b[4 * n + 1]!), this.raw.subarray(b[4 * n + 2]!, b[4 * n + 3]!)]);
    return out;
  }
}

/**
 * Entries collected PACK_SLICE at a time, each slice kept as its msgpack encoding (what
 * packInSlices writes for it) and PackedEntries over it: a unit being read for its freeze
 * holds one buffer and one typed array a slice, not three objects an entry (which would
 * live through the whole read and encoding, into the old generation of every member).
 */
export class SlicedEntries implements HeldEntries {
  private readonly slices: PackedEntries[] = [];
  /** Each slice's encoding without its array header, in order. */
  readonly parts: Buffer[] = [];
  private pending: Array<readonly [Buffer, Buffer]> = [];
  private sealed = 0;
  private ended = false;

  get length(): number {
    return this.sealed + this.pending.length;
  }

  push(key: Buffer, value: Buffer): void {
    if (this.ended) throw new Error('entries pushed after their end');
    this.pending.push([key, value]);
    if (this.pending.length === PACK_SLICE) this.seal();
  }

  /**
   * Packs the entries pushed since the last full slice: the bytes pack() gives for them, written
   * directly (an array of two, then two bin values, for each), noting where each lies as it goes.
   * (msgpackr's general encoder, then a walk to find the bounds again, cost each member about
   * three times the CPU for a large unit's freeze, on every member at once.)
   */
  private seal(): void {
    const pending = this.pending;
    if (pending.length === 0) return;
    let size = 0;
    for (const [key, value] of pending) size += 1 + binHeaderBytes(key.length) + key.length + binHeaderBytes(value.length) + value.length;
    const part = Buffer.allocUnsafe(size);
    const bounds = new Uint32Array(4 * pending.length);
    let at = 0;
    for (let n = 0; n < pending.length; n++) {
      const [key, value] = pending[n]!;
      part[at++] = 0x92;
      at = writeBinHeader(part, at, key.length);
      bounds[4 * n] = at;
      at += key.copy(part, at);
      bounds[4 * n + 1] = at;
      at = writeBinHeader(part, at, value.length);
      bounds[4 * n + 2] = at;
      at += value.copy(part, at);
      bounds[4 * n + 3] = at;
    }
    this.parts.push(part);
    this.slices.push(new PackedEntries(part, bounds));
    this.sealed += this.pending.length;
    this.pending = [];
  }

  /** Done pushing: the last slice packed (every slice but the last holds PACK_SLICE entries). */
  end(): this {
    this.seal();
    this.ended = true;
    return this;
  }

  slice(from: number, to: number): Array<readonly [Buffer, Buffer]> {
    this.end();
    const out: Array<readonly [Buffer, Buffer]> = [];
    for (let n = Math.max(0, from); n < Math.min(to, this.length); ) {
      const slice = this.slices[Math.floor(n / PACK_SLICE)]!;
      const at = n % PACK_SLICE;
      const take = Math.min(to - n, slice.length - at);
      for (const e of slice.slice(at, at + take)) out.push(e);
      n += take;
    }
    return out;
  }
}

export type ColdProblem = 'missing' | 'truncated' | 'corrupt' | 'foreign' | 'unknown-version' | 'too-large';

/** A cold file that cannot be read (or written): which unit, what is wrong. */
export class ColdStoreError extends Error {
  override readonly name = 'ColdStoreError';

  constructor(
    readonly unit: string,
    readonly problem: ColdProblem,
    detail: string,
  ) {
    super(`cold store: unit ${unit}: ${problem}: ${detail}`);
  }
}

/** A write whose caller no longer wanted it when its turn came (see ColdStore.write). */
export class SupersededWrite extends Error {
  override readonly name = 'SupersededWrite';

  constructor(readonly file: string) {
    super(`the write of ${file} was no longer wanted`);
  }
}

/** What a stored file says of itself without being decoded. */
export interface ColdFileInfo {
  readonly unit: string;
  readonly bytes: number;
  readonly version: number;
}

const inflateAsync = promisify(inflate);

/** Entries encoded per turn of the event loop: about a millisecond's work, so a 100,000-item unit never holds clients up. */
export const PACK_SLICE = 1_000;

/**
 * A large unit's file is written and synced this many bytes at a time: a Raft log sync that
 * comes while the file is written then waits for at most this much of it to reach the disk
 * (a file system commits every file's dirty data with a sync), not for the whole file.
 */
export const SYNC_CHUNK = 256 * 1024;

/**
 * Paces work done beside the log in slices: each pause waits as long as the work since the
 * last pause took (a turn of the event loop at least), so the slices of a large unit's
 * encoding, compression or decoding take at most about half of a core on each member, and
 * client requests (and on a shared machine, the other members) get the rest.
 */
export class Breather {
  private since = performance.now();
  private hurried = false;

  constructor(
    /** The least each pause waits (ms): with it, the work goes at most a slice per that long, however fast each slice is. */
    private readonly minMs = 0,
    /** How long each pause is, as a multiple of the work since the last (1: the work takes at most half the time). */
    private readonly restPerWork = 1,
    /** The most a pause waits beyond minMs's floor (ms). */
    private readonly maxRestMs = 50,
  ) {}

  /**
   * For a freeze's work beside the log (reading the unit, encoding and compressing its file), which
   * no client waits for: at most a quarter of the member's time, so on a machine whose cores the
   * clients already keep busy the others' writes hardly notice it (a freeze that waited as long as it
   * worked took half of a core on each member, and every member freezes at once).
   */
  static forFreeze(minMs = 0): Breather {
    return new Breather(minMs, 3, 150);
  }

  /** Something waits for the work (a follower's commit, applied while the read is still paced): from now on only yield a turn. */
  hurry(): void {
    this.hurried = true;
  }

  async pause(): Promise<void> {
    const wait = this.hurried ? 0 : Math.max(this.minMs, Math.min((performance.now() - this.since) * this.restPerWork, this.maxRestMs));
    if (wait < 1) await new Promise<void>((go) => setImmediate(go));
    else await new Promise<void>((go) => setTimeout(go, wait));
    this.since = performance.now();
  }
}

/**
 * The least pause between pages of a unit read for its freeze: at most PACK_SLICE entries per
 * this long (20,000 a second). Every member reads the unit at once, and the read's work is
 * also LevelDB's in the thread pool (not paced by the event loop's share alone): read as fast
 * as the Breather alone allows, a 100,000-item unit took all three members' reads into one
 * burst of a third of a second that doubled everyone's write latency on a 2-core machine.
 */
export const READ_PAGE_PAUSE_MS = 50;

/** The length of a msgpack bin header for `length` bytes (msgpack's shortest, as pack() writes it). */
function binHeaderBytes(length: number): number {
  return length < 0x100 ? 2 : length < 0x10000 ? 3 : 5;
}

/** Writes a msgpack bin header for `length` bytes at `at`; where the bytes go. */
function writeBinHeader(out: Buffer, at: number, length: number): number {
  if (length < 0x100) {
    out[at] = 0xc4;
    out[at + 1] = length;
    return at + 2;
  }
  if (length < 0x10000) {
    out[at] = 0xc5;
    out.writeUInt16BE(length, at + 1);
    return at + 3;
  }
  out[at] = 0xc6;
  out.writeUInt32BE(length, at + 1);
  return at + 5;
}

/** A msgpack array header for `n` elements. */
function arrayHeader(n: number): Buffer {
  if (n < 16) return Buffer.from([0x90 | n]);
  const b = Buffer.alloc(n < 0x10000 ? 3 : 5);
  if (n < 0x10000) b.writeUInt16BE(n, 1);
  else b.writeUInt32BE(n, 1);
  b[0] = n < 0x10000 ? 0xdc : 0xdd;
  return b;
}

/**
 * msgpack `[unit, meta, [[key, value], ...]]`, the same bytes pack() gives in one call, built
 * PACK_SLICE entries at a time with a turn of the event loop between: an array's encoding is
 * its header followed by its elements' encodings, so each slice is packed as an array and its
 * own header dropped.
 */
export async function packInSlices(cold: ColdUnitToWrite): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of packedParts(cold)) parts.push(part);
  return Buffer.concat(parts);
}

/** packInSlices' bytes as they are made, a slice at a time, paced by a Breather. */
async function* packedParts(cold: ColdUnitToWrite, breather = new Breather()): AsyncGenerator<Buffer> {
  yield Buffer.concat([arrayHeader(3), pack(cold.unit), pack(cold.meta), arrayHeader(cold.entries.length)]);
  // Packed as they were read, a slice at a time: the same bytes.
  if (cold.entries instanceof SlicedEntries) {
    for (const [n, part] of cold.entries.end().parts.entries()) {
      if (n > 0) await breather.pause();
      yield part;
    }
    return;
  }
  for (let from = 0; from < cold.entries.length; from += PACK_SLICE) {
    if (from > 0) await breather.pause();
    const slice = cold.entries.slice(from, from + PACK_SLICE);
    yield pack(slice).subarray(arrayHeader(slice.length).length);
  }
}

/**
 * deflate(packInSlices(cold)), the same bytes (zlib's output does not depend on how its input
 * is cut when nothing is flushed between), made a slice at a time: each slice is compressed in
 * the thread pool in small pieces as it is packed, so neither the event loop nor a thread of
 * the pool (which LevelDB's reads and writes share) is held for the whole unit, and the
 * encoded unit is never held whole beside its compressed form.
 */
export async function deflateInSlices(cold: ColdUnitToWrite, breather?: Breather): Promise<Buffer> {
  const z = createDeflate();
  const out: Buffer[] = [];
  z.on('data', (chunk: Buffer) => out.push(chunk));
  const ended = new Promise<void>((done, fail) => {
    z.once('end', done);
    z.once('error', fail);
  });
  for await (const part of packedParts(cold, breather)) {
    // Each slice compressed before the next is packed: the pause after a slice covers its compression too.
    await new Promise<void>((done, fail) => z.write(part, (err) => (err ? fail(err) : done())));
  }
  z.end();
  await ended;
  return Buffer.concat(out);
}

/** The last write asked for, per file. */
const writesInFlight = new Map<string, Promise<void>>();

export class ColdStore {
  private made = false;

  private constructor(readonly dir: string) {}

  /** The store in `dir`, created with its first file (a server that never hibernates has none). */
  static async open(dir: string): Promise<ColdStore> {
    return new ColdStore(dir);
  }

  private async ensureDir(): Promise<void> {
    if (this.made) return;
    await mkdir(this.dir, { recursive: true });
    await fsyncDir(dirname(this.dir)); // the directory's own entry, so a power loss cannot forget it
    this.made = true;
  }

  /** The file of a unit: named by a hash of its path, so any path makes a safe file name. */
  fileOf(unit: string): string {
    return join(this.dir, `${createHash('sha256').update(unit, 'utf8').digest('hex').slice(0, 40)}${SUFFIX}`);
  }

  /**
   * Writes the unit's file durably (replacing an older one); its size in bytes. With
   * `wanted`, asked when the write's turn comes (after every earlier write of the file):
   * if it says no, nothing is written and the write fails with SupersededWrite.
   */
  async write(cold: ColdUnitToWrite, wanted?: () => boolean, options: { readonly syncDir?: boolean; readonly breather?: Breather } = {}): Promise<number> {
    // Encoded in slices and compressed in the thread pool: a freeze beside the log must not hold the event loop.
    const body = await deflateInSlices(cold, options.breather);
    if (body.byteLength > MAX_COLD_BODY_BYTES) throw new ColdStoreError(cold.unit, 'too-large', `${body.byteLength} compressed bytes is over ${MAX_COLD_BODY_BYTES}`);
    const header = Buffer.alloc(HEADER_BYTES);
    MAGIC.copy(header, 0);
    header.writeUInt16BE(COLD_FORMAT_VERSION, 8);
    header.writeUInt16BE(0, 10);
    header.writeUInt32BE(body.byteLength, 12);
    checksum(header, body).copy(header, 16);
    await this.ensureDir();
    await this.install(this.fileOf(cold.unit), [header, body], wanted, options.syncDir ?? true);
    return header.byteLength + body.byteLength;
  }

  /**
   * Syncs the directory, making every file renamed into it so far durable. Callers at the same
   * time share a sync: one asked while another runs gets the next one, which all who asked
   * meanwhile share (a freeze of several units syncs the directory once, not once a file).
   */
  syncDir(): Promise<void> {
    if (this.dirSyncNext !== null) return this.dirSyncNext;
    const next = (this.dirSyncRunning ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => {
        this.dirSyncNext = null;
        this.dirSyncRunning = next;
        return fsyncDir(this.dir);
      })
      .finally(() => {
        if (this.dirSyncRunning === next) this.dirSyncRunning = null;
      });
    this.dirSyncNext = next;
    return next;
  }

  private dirSyncRunning: Promise<void> | null = null;
  private dirSyncNext: Promise<void> | null = null;

  /**
   * Writes `parts` as `final`: under a temporary name, synced, renamed, the directory synced.
   * Writes of one file run one after another, in the order they were asked for (in this
   * process, whichever ColdStore asked): a unit's file written in the background while it
   * freezes can never land after a newer one (a snapshot's, or a later freeze's).
   */
  private async install(final: string, parts: Buffer[], wanted?: () => boolean, syncDir = true): Promise<void> {
    const before = writesInFlight.get(final) ?? Promise.resolve();
    const mine = before
      .catch(() => undefined)
      .then(() => {
        if (wanted !== undefined && !wanted()) throw new SupersededWrite(final);
        return this.installNow(final, parts, syncDir);
      });
    writesInFlight.set(final, mine);
    try {
      await mine;
    } finally {
      if (writesInFlight.get(final) === mine) writesInFlight.delete(final);
    }
  }

  private async installNow(final: string, parts: Buffer[], syncDir: boolean): Promise<void> {
    const temp = `${final}${TEMP_MARK}${randomBytes(6).toString('hex')}`;
    const handle = await open(temp, 'wx');
    try {
      const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
      // A chunk at a time, each synced but the last (the sync below covers it and the file's size).
      for (let at = 0; at < bytes.byteLength; at += SYNC_CHUNK) {
        if (at > 0) await handle.datasync();
        const chunk = bytes.subarray(at, at + SYNC_CHUNK);
        for (let done = 0; done < chunk.byteLength; ) done += (await handle.write(chunk, done)).bytesWritten;
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, final);
    if (syncDir) await this.syncDir();
  }

  /** Reads and verifies the unit's file. */
  async read(unit: string): Promise<ColdUnit> {
    return decodeColdFile(unit, await this.readBytes(unit));
  }

  /**
   * As read(), giving the same entries or the same error, for a large unit's thaw in steps:
   * decompressed in the thread pool, and the entries held as where each lies in the
   * decompressed body (HeldEntries), not as a pair of Buffers each.
   */
  async readInSlices(unit: string, breather = new Breather()): Promise<HeldColdUnit> {
    const bytes = await this.readBytes(unit);
    const { version, body } = verifiedBody(unit, bytes);
    if (version !== 1) return decodeColdFile(unit, bytes);
    let raw: Buffer;
    try {
      raw = await inflateAsync(body);
    } catch (err) {
      throw new ColdStoreError(unit, 'corrupt', `the body does not decode: ${(err as Error).message}`);
    }
    const cold = await unpackV1Held(unit, raw, breather);
    if (cold.unit !== unit) throw new ColdStoreError(unit, 'foreign', `the file holds unit ${cold.unit}`);
    return cold;
  }

  /** The unit's file as it is on disk (for a snapshot), unverified. */
  async readBytes(unit: string): Promise<Buffer> {
    try {
      return await readFile(this.fileOf(unit));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new ColdStoreError(unit, 'missing', `no file ${this.fileOf(unit)}`);
      throw err;
    }
  }

  /** Writes a file that came in a snapshot, after verifying it holds `unit`; durable as write() is. */
  async writeBytes(unit: string, bytes: Buffer): Promise<ColdUnit> {
    const cold = decodeColdFile(unit, bytes);
    await this.ensureDir();
    await this.install(this.fileOf(unit), [bytes]);
    return cold;
  }

  async exists(unit: string): Promise<boolean> {
    try {
      await stat(this.fileOf(unit));
      return true;
    } catch {
      return false;
    }
  }

  /** Removes the unit's file (after its thaw is durable in the hot store); durable. */
  async remove(unit: string): Promise<void> {
    await rm(this.fileOf(unit), { force: true });
    await fsyncDir(this.dir);
  }

  /**
   * Removes what a crash can leave: temporary files of writes that never finished,
   * and the files of units `keep` does not claim (thawed, or never frozen). Returns
   * the names removed.
   */
  async sweep(keep: (file: string) => boolean): Promise<string[]> {
    const removed: string[] = [];
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return removed;
      throw err;
    }
    for (const name of names) {
      const temp = name.includes(TEMP_MARK);
      if (!temp && (!name.endsWith(SUFFIX) || keep(join(this.dir, name)))) continue;
      await rm(join(this.dir, name), { force: true });
      removed.push(name);
    }
    if (removed.length > 0) await fsyncDir(this.dir);
    return removed;
  }
}

/** The file's format version and body, once its header, length and checksum are verified. */
function verifiedBody(unit: string, bytes: Buffer): { version: number; body: Buffer } {
  if (bytes.byteLength < HEADER_BYTES) throw new ColdStoreError(unit, 'truncated', `${bytes.byteLength} bytes is shorter than the ${HEADER_BYTES}-byte header`);
  if (!bytes.subarray(0, MAGIC.length).equals(MAGIC)) throw new ColdStoreError(unit, 'corrupt', 'not a cold file (bad magic)');
  const length = bytes.readUInt32BE(12);
  if (bytes.byteLength < HEADER_BYTES + length) throw new ColdStoreError(unit, 'truncated', `the body should be ${length} bytes, ${bytes.byteLength - HEADER_BYTES} are there`);
  if (bytes.byteLength > HEADER_BYTES + length) throw new ColdStoreError(unit, 'corrupt', `${bytes.byteLength - HEADER_BYTES - length} bytes after the body`);
  const body = bytes.subarray(HEADER_BYTES);
  if (!checksum(bytes, body).equals(bytes.subarray(16, 48))) throw new ColdStoreError(unit, 'corrupt', 'the file does not match its checksum');
  return { version: bytes.readUInt16BE(8), body };
}

/** The length of a msgpack array at `at` and where its elements begin, or null if there is none. */
function arrayAt(raw: Buffer, at: number): { length: number; from: number } | null {
  const b = raw[at];
  if (b === undefined) return null;
  if ((b & 0xf0) === 0x90) return { length: b & 0x0f, from: at + 1 };
  if (b === 0xdc && at + 3 <= raw.length) return { length: raw.readUInt16BE(at + 1), from: at + 3 };
  if (b === 0xdd && at + 5 <= raw.length) return { length: raw.readUInt32BE(at + 1), from: at + 5 };
  return null;
}

/**
 * decodeV1's answer for a decompressed body, its entries held as PackedEntries: the list of
 * entries is walked as the msgpack bytes pack() gives for [key bytes, value bytes] pairs (an
 * array of two, then two bin values), recording where each lies, with no object made per entry.
 * A body in any other shape (or a bad one) goes to the general decoder below, which gives the
 * entries, or the same error read() gives.
 */
async function unpackV1Held(unit: string, raw: Buffer, breather: Breather): Promise<HeldColdUnit> {
  const outer = arrayAt(raw, 0);
  if (outer !== null && outer.length === 3) {
    let head: unknown[] = [];
    let end = 0;
    try {
      unpackMultiple(raw.subarray(outer.from), (value: unknown, _start?: number, stop?: number) => {
        head.push(value);
        end = outer.from + (stop ?? 0);
        return head.length < 2 ? undefined : false;
      });
    } catch {
      head = [];
    }
    const [name, meta] = head;
    const list = head.length === 2 ? arrayAt(raw, end) : null;
    if (list !== null && typeof name === 'string' && typeof meta === 'object' && meta !== null && !Array.isArray(meta)) {
      const bounds = await binPairsInSlices(raw, list.from, list.length, breather);
      if (bounds !== null) return { unit: name, meta: meta as Record<string, unknown>, entries: new PackedEntries(raw, bounds) };
    }
  }
  return unpackV1InSlices(unit, raw);
}

/** The length of a msgpack bin value at `at` and where its bytes begin, or null if there is none. */
function binAt(raw: Buffer, at: number): { length: number; from: number } | null {
  const b = raw[at];
  if (b === 0xc4 && at + 2 <= raw.length) return { length: raw[at + 1]!, from: at + 2 };
  if (b === 0xc5 && at + 3 <= raw.length) return { length: raw.readUInt16BE(at + 1), from: at + 3 };
  if (b === 0xc6 && at + 5 <= raw.length) return { length: raw.readUInt32BE(at + 1), from: at + 5 };
  return null;
}

/**
 * Where each of `count` [bin, bin] pairs from `at` lies, if the body is exactly those pairs and
 * ends with them; else null. PACK_SLICE pairs per turn of the event loop: a 100,000-item unit's
 * walk in one turn held every member's thread for 10 to 40 ms at its thaw's start.
 */
async function binPairsInSlices(raw: Buffer, at: number, count: number, breather: Breather): Promise<Uint32Array | null> {
  if (count > raw.length) return null;
  const bounds = new Uint32Array(4 * count);
  /** The bin value at `at` recorded at bounds[slot], bounds[slot + 1]; where it ends, or -1. */
  const bin = (slot: number): number => {
    const b = binAt(raw, at);
    if (b === null || b.from + b.length > raw.length) return -1;
    bounds[slot] = b.from;
    bounds[slot + 1] = b.from + b.length;
    return b.from + b.length;
  };
  for (let n = 0; n < count; n++) {
    if (n > 0 && n % PACK_SLICE === 0) await breather.pause();
    if (raw[at] !== 0x92) return null;
    at++;
    at = bin(4 * n);
    if (at < 0) return null;
    at = bin(4 * n + 2);
    if (at < 0) return null;
  }
  return at === raw.length ? bounds : null;
}

/** decodeV1's answer for a decompressed body, PACK_SLICE entries per turn of the event loop. */
async function unpackV1InSlices(unit: string, raw: Buffer): Promise<ColdUnit> {
  const notTriple = (): ColdStoreError => new ColdStoreError(unit, 'corrupt', 'the body is not [unit, meta, entries]');
  const corrupt = (err: unknown): ColdStoreError => (err instanceof ColdStoreError ? err : new ColdStoreError(unit, 'corrupt', `the body does not decode: ${(err as Error).message}`));
  /** Up to `n` values from `at`: the values and where the last one ended. */
  const values = (at: number, n: number): { got: unknown[]; end: number } => {
    const got: unknown[] = [];
    let end = at;
    if (n === 0) return { got, end };
    try {
      unpackMultiple(raw.subarray(at), (value: unknown, _start?: number, stop?: number) => {
        got.push(value);
        end = at + (stop ?? 0);
        return got.length < n ? undefined : false;
      });
    } catch (err) {
      throw corrupt(err);
    }
    return { got, end };
  };
  const outer = arrayAt(raw, 0);
  if (outer === null || outer.length !== 3) throw notTriple();
  const head = values(outer.from, 2);
  const [name, meta] = head.got;
  if (head.got.length !== 2 || typeof name !== 'string' || typeof meta !== 'object' || meta === null || Array.isArray(meta)) throw notTriple();
  const list = arrayAt(raw, head.end);
  if (list === null) throw notTriple();
  const entries: Array<readonly [Buffer, Buffer]> = [];
  let at = list.from;
  const breather = new Breather();
  while (entries.length < list.length) {
    if (entries.length > 0) await breather.pause();
    const slice = values(at, Math.min(PACK_SLICE, list.length - entries.length));
    if (slice.got.length === 0) throw corrupt(new Error('the entries end early'));
    for (const e of slice.got) {
      if (!Array.isArray(e) || e.length !== 2 || !(e[0] instanceof Uint8Array) || !(e[1] instanceof Uint8Array)) throw new ColdStoreError(unit, 'corrupt', 'an entry is not [key bytes, value bytes]');
      entries.push([Buffer.from(e[0]), Buffer.from(e[1])]);
    }
    at = slice.end;
  }
  if (at !== raw.length) throw corrupt(new Error(`${raw.length - at} bytes after the entries`));
  return { unit: name, meta: meta as Record<string, unknown>, entries };
}

/** Decodes and verifies a cold file's bytes, which must hold `unit`. */
export function decodeColdFile(unit: string, bytes: Buffer): ColdUnit {
  if (bytes.byteLength < HEADER_BYTES) throw new ColdStoreError(unit, 'truncated', `${bytes.byteLength} bytes is shorter than the ${HEADER_BYTES}-byte header`);
  if (!bytes.subarray(0, MAGIC.length).equals(MAGIC)) throw new ColdStoreError(unit, 'corrupt', 'not a cold file (bad magic)');
  const version = bytes.readUInt16BE(8);
  const length = bytes.readUInt32BE(12);
  if (bytes.byteLength < HEADER_BYTES + length) throw new ColdStoreError(unit, 'truncated', `the body should be ${length} bytes, ${bytes.byteLength - HEADER_BYTES} are there`);
  if (bytes.byteLength > HEADER_BYTES + length) throw new ColdStoreError(unit, 'corrupt', `${bytes.byteLength - HEADER_BYTES - length} bytes after the body`);
  const body = bytes.subarray(HEADER_BYTES);
  if (!checksum(bytes, body).equals(bytes.subarray(16, 48))) throw new ColdStoreError(unit, 'corrupt', 'the file does not match its checksum');
  const decoder = DECODERS.get(version);
  if (decoder === undefined) throw new ColdStoreError(unit, 'unknown-version', `format version ${version}; this build reads ${[...DECODERS.keys()].join(', ')}`);
  const cold = decoder(unit, body);
  if (cold.unit !== unit) throw new ColdStoreError(unit, 'foreign', `the file holds unit ${cold.unit}`);
  return cold;
}

/** Covers the header's fields after the magic as well as the body: a flipped length or version is caught too. */
function checksum(header: Buffer, body: Buffer): Buffer {
  return createHash('sha256').update(header.subarray(8, 16)).update(body).digest();
}

/** Format decoders by version: each gives today's ColdUnit. */
const DECODERS = new Map<number, (unit: string, body: Buffer) => ColdUnit>([[1, decodeV1]]);

function decodeV1(unit: string, body: Buffer): ColdUnit {
  let value: unknown;
  try {
    value = unpack(inflateSync(body));
  } catch (err) {
    throw new ColdStoreError(unit, 'corrupt', `the body does not decode: ${(err as Error).message}`);
  }
  if (!Array.isArray(value) || value.length !== 3 || typeof value[0] !== 'string' || typeof value[1] !== 'object' || value[1] === null || !Array.isArray(value[2])) {
    throw new ColdStoreError(unit, 'corrupt', 'the body is not [unit, meta, entries]');
  }
  const entries: Array<readonly [Buffer, Buffer]> = [];
  for (const e of value[2] as unknown[]) {
    if (!Array.isArray(e) || e.length !== 2 || !(e[0] instanceof Uint8Array) || !(e[1] instanceof Uint8Array)) throw new ColdStoreError(unit, 'corrupt', 'an entry is not [key bytes, value bytes]');
    entries.push([Buffer.from(e[0]), Buffer.from(e[1])]);
  }
  return { unit: value[0], meta: value[1] as Record<string, unknown>, entries };
}
