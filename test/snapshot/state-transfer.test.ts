// The state-transfer pipeline on real LevelDB: capture -> chunks -> SnapshotAssembler
// -> replaceState on a second database. What must hold: the receiver's state
// buckets become byte-identical to the sender's, its peer-local 0x0000 bucket and
// its Raft log (0x0002 and the log's own 0x0001 keys) are untouched, and a bad or
// incomplete transfer yields nothing to install.

import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { Packr } from 'msgpackr';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Bucket, bucketPrefix, internalPropertyKey, logKey, propertyKey } from '../../src/keys/index.js';
import { LagBucket } from '../../src/families/lag/keys.js';
import { ListsBucket } from '../../src/families/lists/keys.js';
import { SessionsBucket } from '../../src/families/sessions/keys.js';
import { WatchesBucket } from '../../src/families/watches/keys.js';
import { LAST_LOG_INDEX_KEY, SNAPSHOT_KEY, type LevelDb } from '../../src/raft/leveldb-storage.js';
import {
  appliedIndexIn,
  captureState,
  replaceState,
  readRecords,
  bufferChunks,
  SNAPSHOT_CHUNK_BYTES,
  SnapshotAssembler,
  SnapshotError,
} from '../../src/raft/state-transfer.js';
import { APPLIED_INDEX } from '../../src/statemachine/applied.js';

const packr = new Packr({ useRecords: false });
const APPLIED_KEY = internalPropertyKey('applied');

let base: string;
const opened: LevelDb[] = [];

async function openDb(name: string): Promise<LevelDb> {
  const db = new ClassicLevel<Buffer, Buffer>(join(base, name), { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  opened.push(db);
  return db;
}

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'vera-state-transfer-'));
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.close()));
  await rm(base, { recursive: true, force: true });
});

/** Deterministic pseudo-random bytes (xorshift32), so failures replay exactly. */
function bytesFrom(seed: number, length: number): Buffer {
  const out = Buffer.alloc(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

function keyIn(bucket: number, suffix: string | Buffer): Buffer {
  return Buffer.concat([bucketPrefix(bucket), typeof suffix === 'string' ? Buffer.from(suffix, 'utf8') : suffix]);
}

/**
 * A sender database shaped like a real member's: peer-local properties, the
 * log's own keys and entries, and state over every bucket from 0x0001 on,
 * including one beyond the known buckets (a snapshot runs "to the end").
 * About 3 MiB of state, so the stream spans several chunks.
 */
async function seedSender(db: LevelDb, applied: number): Promise<void> {
  const batch = db.batch();
  batch.put(propertyKey('hardState'), packr.pack({ term: 7, vote: 'n1', commit: applied }));
  batch.put(propertyKey('nodeId'), packr.pack('n1'));
  batch.put(SNAPSHOT_KEY, packr.pack({ index: 10, term: 3, config: { voters: ['n1', 'n2', 'n3'], learners: [] } }));
  batch.put(LAST_LOG_INDEX_KEY, packr.pack(applied + 5));
  for (let i = 11; i <= applied + 5; i++) batch.put(logKey(i), bytesFrom(i, 40));
  batch.put(APPLIED_KEY, packr.pack(applied));
  batch.put(internalPropertyKey('notificationIndex'), packr.pack(applied - 3));
  for (let i = 0; i < 300; i++) {
    // Item values of varied size, a few large enough to straddle chunk boundaries.
    const size = i % 50 === 0 ? 200_000 : 100 + ((i * 37) % 4000);
    batch.put(keyIn(ListsBucket.item, `/data/list/${i % 7}\u0000\u0000${String(i).padStart(8, '0')}`), bytesFrom(1000 + i, size));
  }
  for (let i = 0; i < 40; i++) batch.put(keyIn(SessionsBucket.client, `/client/s${i}`), bytesFrom(5000 + i, 30));
  for (let i = 0; i < 40; i++) batch.put(keyIn(ListsBucket.clientData, `/cdata/s${i}\u0000\u0000x`), Buffer.alloc(0));
  for (let i = 0; i < 40; i++) batch.put(keyIn(WatchesBucket.watch, `/watch/list/${i % 7}\u0000\u0000s${i}`), Buffer.alloc(0));
  batch.put(keyIn(LagBucket.lag, '/lag/s1'), packr.pack({ index: applied - 10 }));
  batch.put(keyIn(0x0008, 'reserved-bucket-key'), Buffer.from('beyond the known buckets'));
  batch.put(keyIn(0xfffe, Buffer.from([0xff, 0xff])), Buffer.from('last possible key'));
  await batch.write();
}

/** A receiver with a history of its own: different log, different peer-local keys, stale state. */
async function seedReceiver(db: LevelDb): Promise<void> {
  const batch = db.batch();
  batch.put(propertyKey('hardState'), packr.pack({ term: 9, vote: 'n2', commit: 4 }));
  batch.put(propertyKey('nodeId'), packr.pack('n2'));
  batch.put(SNAPSHOT_KEY, packr.pack({ index: 0, term: 0, config: { voters: ['n1', 'n2', 'n3'], learners: [] } }));
  batch.put(LAST_LOG_INDEX_KEY, packr.pack(6));
  for (let i = 1; i <= 6; i++) batch.put(logKey(i), bytesFrom(90 + i, 25));
  batch.put(APPLIED_KEY, packr.pack(4));
  batch.put(internalPropertyKey('staleProperty'), Buffer.from('only on the receiver'));
  batch.put(keyIn(ListsBucket.item, '/data/stale\u0000\u0000only-here'), Buffer.from('stale item'));
  batch.put(keyIn(ListsBucket.item, '/data/list/0\u0000\u000000000000'), Buffer.from('older value of a shared key'));
  batch.put(keyIn(0x0009, 'stale-reserved'), Buffer.from('stale'));
  await batch.write();
}

type Dump = Array<[string, string]>;

/** Every key/value in [gte, lt), hex-encoded for readable diffs. */
async function dump(db: LevelDb, range: { gte?: Buffer; lt?: Buffer }, keep: (key: Buffer) => boolean = () => true): Promise<Dump> {
  const out: Dump = [];
  for await (const [key, value] of db.iterator(range)) if (keep(key)) out.push([key.toString('hex'), value.toString('hex')]);
  return out;
}

const isLogOwned = (key: Buffer): boolean => key.equals(SNAPSHOT_KEY) || key.equals(LAST_LOG_INDEX_KEY);
const stateOf = async (db: LevelDb): Promise<Dump> => [
  ...(await dump(db, { gte: bucketPrefix(Bucket.internal), lt: bucketPrefix(Bucket.log) }, (k) => !isLogOwned(k))),
  ...(await dump(db, { gte: bucketPrefix(ListsBucket.item) })),
];
/** What a snapshot must never touch on the receiver: 0x0000, the log bucket, the log's 0x0001 keys. */
const privateOf = async (db: LevelDb): Promise<Dump> => [
  ...(await dump(db, { gte: bucketPrefix(Bucket.property), lt: bucketPrefix(Bucket.internal) })),
  ...(await dump(db, { gte: bucketPrefix(Bucket.internal), lt: bucketPrefix(Bucket.log) }, isLogOwned)),
  ...(await dump(db, { gte: bucketPrefix(Bucket.log), lt: bucketPrefix(ListsBucket.item) })),
];

async function captureChunks(db: LevelDb): Promise<{ index: number; chunks: Buffer[] }> {
  const captured = await captureState(db, APPLIED_INDEX);
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of captured.chunks()) chunks.push(chunk);
    return { index: captured.index, chunks };
  } finally {
    await captured.release();
  }
}

const sha256 = (parts: readonly Buffer[]): string => {
  const hash = createHash('sha256');
  for (const p of parts) hash.update(p);
  return hash.digest('hex');
};

/** Feeds chunks as the driver sends them: data chunks with done=false, then an empty final one carrying the checksum. */
function feed(assembler: SnapshotAssembler, transfer: string, chunks: readonly Buffer[], checksum: string, offsets?: readonly number[]): Buffer | null {
  let offset = 0;
  chunks.forEach((chunk, i) => {
    expect(assembler.accept(transfer, offsets?.[i] ?? offset, chunk, false, '')).toBeNull();
    offset += chunk.length;
  });
  const total = chunks.reduce((n, c) => n + c.length, 0);
  return assembler.accept(transfer, total, new Uint8Array(0), true, checksum);
}

/** Buffer.equals: deep equality over megabytes element by element would be needlessly slow. */
/** Every record of a stream held in memory, parsed as a receiver parses it. */
async function decodeAll(data: Buffer): Promise<Array<[Buffer, Buffer]>> {
  const out: Array<[Buffer, Buffer]> = [];
  for await (const [key, value] of readRecords(bufferChunks(data))) out.push([Buffer.from(key), Buffer.from(value)]);
  return out;
}

const appliedIndexOf = (data: Buffer): Promise<number> => appliedIndexIn(readRecords(bufferChunks(data)), APPLIED_INDEX);

function expectSameBytes(actual: Buffer | null, expected: Buffer): void {
  expect(actual).not.toBeNull();
  expect(actual!.length).toBe(expected.length);
  expect(actual!.equals(expected)).toBe(true);
}

describe('state transfer over LevelDB', () => {
  it('moves the state buckets byte for byte and leaves the receiver’s log and peer-local keys alone', async () => {
    const sender = await openDb('sender');
    const receiver = await openDb('receiver');
    await seedSender(sender, 500);
    await seedReceiver(receiver);
    const receiverPrivateBefore = await privateOf(receiver);

    const { index, chunks } = await captureChunks(sender);
    expect(index).toBe(500);
    // Several chunks, each cut once it reaches the chunk size (so at most one record over it).
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks.slice(0, -1)) {
      expect(chunk.length).toBeGreaterThanOrEqual(SNAPSHOT_CHUNK_BYTES);
      expect(chunk.length).toBeLessThan(SNAPSHOT_CHUNK_BYTES + 200_000 + 100);
    }

    const data = feed(new SnapshotAssembler(), 'n1/7/500', chunks, sha256(chunks));
    expect(data).not.toBeNull();
    expect(await appliedIndexOf(data!)).toBe(500);
    // The stream carries no key a receiver must keep for itself.
    for (const [key] of await decodeAll(data!)) {
      expect(key.readUInt16BE(0)).not.toBe(Bucket.property);
      expect(key.readUInt16BE(0)).not.toBe(Bucket.log);
      expect(isLogOwned(key)).toBe(false);
    }

    await replaceState(receiver, readRecords(bufferChunks(data!)));

    const expected = await stateOf(sender);
    expect(expected.length).toBeGreaterThan(400);
    expect(await stateOf(receiver)).toEqual(expected);
    expect(await privateOf(receiver)).toEqual(receiverPrivateBefore);
  });

  it('installs an empty state machine as an empty state (stale receiver state is deleted)', async () => {
    const sender = await openDb('sender');
    const receiver = await openDb('receiver');
    await seedReceiver(receiver);
    const { index, chunks } = await captureChunks(sender);
    expect(index).toBe(0);
    expect(chunks).toEqual([]);
    const data = feed(new SnapshotAssembler(), 'n1/1/0', chunks, sha256(chunks));
    expect(data).toEqual(Buffer.alloc(0));
    await replaceState(receiver, readRecords(bufferChunks(data!)));
    expect(await stateOf(receiver)).toEqual([]);
  });

  it('refuses a transfer whose checksum does not match, and stages nothing from it', async () => {
    const sender = await openDb('sender');
    await seedSender(sender, 200);
    const { chunks } = await captureChunks(sender);
    const good = sha256(chunks);
    const assembler = new SnapshotAssembler();

    // One byte flipped in transit.
    const damaged = chunks.map((c) => Buffer.from(c));
    const victim = damaged[1]!;
    victim.writeUInt8(victim.readUInt8(1234) ^ 0x40, 1234);
    expect(() => feed(assembler, 'n1/7/200', damaged, good)).toThrow(SnapshotError);
    expect(() => feed(assembler, 'n1/7/200', damaged, good)).toThrow(/checksum mismatch/);

    // A wrong checksum for intact data.
    expect(() => feed(assembler, 'n1/7/200', chunks, sha256([Buffer.from('something else')]))).toThrow(/checksum mismatch/);

    // The refused transfer left nothing behind: a late final chunk of it completes nothing.
    const total = chunks.reduce((n, c) => n + c.length, 0);
    expect(assembler.accept('n1/7/200', total, new Uint8Array(0), true, good)).toBeNull();
    // ...and the same assembler still takes a clean transfer afterwards.
    expectSameBytes(feed(assembler, 'n1/7/200', chunks, good), Buffer.concat(chunks));
  });

  it('discards the staging when a chunk is missing or out of order, so nothing partial is ever handed out', async () => {
    const sender = await openDb('sender');
    const receiver = await openDb('receiver');
    await seedSender(sender, 300);
    await seedReceiver(receiver);
    const before = await dump(receiver, {});
    const { chunks } = await captureChunks(sender);
    expect(chunks.length).toBeGreaterThanOrEqual(4);
    const checksum = sha256(chunks);
    const offsets = chunks.map((_, i) => chunks.slice(0, i).reduce((n, c) => n + c.length, 0));
    const assembler = new SnapshotAssembler();

    // Chunk 1 lost: every later chunk and the final one are refused (null), never a stream with a hole.
    const withoutSecond = chunks.filter((_, i) => i !== 1);
    expect(feed(assembler, 'n1/7/300', withoutSecond, checksum, offsets.filter((_, i) => i !== 1))).toBeNull();

    // Chunks 1 and 2 swapped.
    const swapped = [chunks[0]!, chunks[2]!, chunks[1]!, ...chunks.slice(3)];
    const swappedOffsets = [offsets[0]!, offsets[2]!, offsets[1]!, ...offsets.slice(3)];
    expect(feed(assembler, 'n1/7/300', swapped, checksum, swappedOffsets)).toBeNull();

    // A duplicated chunk (a retransmission) is just as fatal to this attempt.
    const duplicated = [chunks[0]!, chunks[1]!, chunks[1]!, ...chunks.slice(2)];
    const duplicatedOffsets = [offsets[0]!, offsets[1]!, offsets[1]!, ...offsets.slice(2)];
    expect(feed(assembler, 'n1/7/300', duplicated, checksum, duplicatedOffsets)).toBeNull();

    // None of those reached the receiver's database.
    expect(await dump(receiver, {})).toEqual(before);
  });

  it('restarts cleanly when a new transfer begins at offset 0, from the same or another leader', async () => {
    const first = await openDb('first');
    const second = await openDb('second');
    await seedSender(first, 300);
    await seedSender(second, 400);
    await second.put(keyIn(ListsBucket.item, '/data/only-in-second\u0000\u0000a'), Buffer.from('second'));
    const a = await captureChunks(first);
    const b = await captureChunks(second);
    const assembler = new SnapshotAssembler();

    // Half of transfer A, then A starts over from 0 (the sender retried): only the retry counts.
    for (const [i, chunk] of a.chunks.slice(0, 2).entries()) {
      expect(assembler.accept('n1/7/300', i === 0 ? 0 : a.chunks[0]!.length, chunk, false, '')).toBeNull();
    }
    expectSameBytes(feed(assembler, 'n1/7/300', a.chunks, sha256(a.chunks)), Buffer.concat(a.chunks));

    // Half of A, then a new leader's transfer B from 0: B completes alone, with none of A mixed in.
    expect(assembler.accept('n1/7/300', 0, a.chunks[0]!, false, '')).toBeNull();
    const gotB = feed(assembler, 'n3/8/400', b.chunks, sha256(b.chunks));
    expectSameBytes(gotB, Buffer.concat(b.chunks));
    expect(await appliedIndexOf(gotB!)).toBe(400);

    // A stale chunk of A arriving mid-way through B (not at offset 0) cannot join B's staging.
    expect(assembler.accept('n3/8/400', 0, b.chunks[0]!, false, '')).toBeNull();
    expect(assembler.accept('n1/7/300', a.chunks[0]!.length, a.chunks[1]!, false, '')).toBeNull();
    const total = b.chunks.reduce((n, c) => n + c.length, 0);
    expect(assembler.accept('n3/8/400', total, new Uint8Array(0), true, sha256(b.chunks))).toBeNull();
  });

  it('captures a consistent view: writes made after capture, even between chunks, are not in the stream', async () => {
    const db = await openDb('live');
    await seedSender(db, 600);
    const expectedState = await stateOf(db);

    const captured = await captureState(db, APPLIED_INDEX);
    const chunks: Buffer[] = [];
    let writes = 0;
    try {
      expect(captured.index).toBe(600);
      // Applying carries on: the applied index moves, items are added, overwritten and deleted.
      const applyMore = async (): Promise<void> => {
        writes++;
        const next = 600 + writes;
        await db.batch([
          { type: 'put', key: APPLIED_KEY, value: packr.pack(next) },
          { type: 'put', key: keyIn(ListsBucket.item, `/data/list/0\u0000\u0000${String(next).padStart(8, '0')}`), value: Buffer.from(`new ${next}`) },
          { type: 'put', key: keyIn(ListsBucket.item, `/data/list/${writes % 7}\u0000\u0000${String(writes).padStart(8, '0')}`), value: Buffer.from('overwritten') },
          { type: 'del', key: keyIn(SessionsBucket.client, `/client/s${writes}`) },
        ]);
      };
      await applyMore();
      for await (const chunk of captured.chunks()) {
        chunks.push(chunk);
        await applyMore();
      }
    } finally {
      await captured.release();
    }
    expect(writes).toBeGreaterThan(3);
    const data = Buffer.concat(chunks);
    expect(await appliedIndexOf(data)).toBe(600);

    // The stream holds exactly the state as of the capture, not the state now.
    const streamed: Dump = (await decodeAll(data)).map(([k, v]) => [k.toString('hex'), v.toString('hex')]);
    expect(streamed).toEqual(expectedState);
    expect(await stateOf(db)).not.toEqual(expectedState);
  });

  it('refuses a stream that is cut short or that carries keys a snapshot must not carry', async () => {
    const sender = await openDb('sender');
    await seedSender(sender, 50);
    const { chunks } = await captureChunks(sender);
    const data = Buffer.concat(chunks);
    await expect(decodeAll(data.subarray(0, data.length - 3))).rejects.toThrow(SnapshotError);
    await expect(decodeAll(data.subarray(0, 2))).rejects.toThrow(/record header/);

    const record = (key: Buffer, value: Buffer): Buffer => {
      const out = Buffer.alloc(8 + key.length + value.length);
      out.writeUInt32BE(key.length, 0);
      key.copy(out, 4);
      out.writeUInt32BE(value.length, 4 + key.length);
      value.copy(out, 8 + key.length);
      return out;
    };
    for (const forbidden of [propertyKey('hardState'), logKey(3), SNAPSHOT_KEY, LAST_LOG_INDEX_KEY, Buffer.from([0x00])]) {
      await expect(decodeAll(Buffer.concat([data, record(forbidden, Buffer.from('x'))]))).rejects.toThrow(/must not/);
    }
  });
});
