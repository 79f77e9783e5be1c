// The disk guard's admission arithmetic, with the free space and the clock given
// by the test. The full-disk test drives a real tmpfs; this one pins down the
// cases a once-a-second reading missed (space that vanishes between readings,
// many requests admitted before any of them reaches the disk) and that a busy
// leader does not pay a system call per request.

import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { DiskGuard, FRESH_MS, WRITE_AMPLIFICATION } from '../../src/server/node/disk-guard.js';
import { VeraError } from '../../src/protocol/index.js';

const MIB = 1024 * 1024;
const RESERVE = 64 * MIB;

/** The free space the guard reads, how often it read it, and the time. */
interface Disk {
  bytes: number;
  reads: number;
  ms: number;
}

function guardOver(disk: Disk): DiskGuard {
  const read = (): number => {
    disk.reads++;
    return disk.bytes;
  };
  return new DiskGuard('/unused', RESERVE, pino({ level: 'silent' }), read, () => disk.ms);
}

const diskWith = (bytes: number): Disk => ({ bytes, reads: 0, ms: 0 });

function refusal(guard: DiskGuard, bytes: number): VeraError | null {
  try {
    guard.admit(bytes);
    return null;
  } catch (err) {
    if (err instanceof VeraError) return err;
    throw err;
  }
}

describe('DiskGuard', () => {
  it('reads the free space again at an admission once its reading is stale, so space that vanished since the last periodic reading is seen at once', () => {
    const free = diskWith(10 * 1024 * MIB);
    const guard = guardOver(free);
    guard.poll();
    expect(refusal(guard, 1024)).toBeNull();
    free.bytes = 3 * MIB; // filled by something else, no periodic reading since
    free.ms += FRESH_MS;
    const err = refusal(guard, 1024);
    expect(err?.code).toBe('QUOTA_EXCEEDED');
    expect(err?.message).toMatch(/has 3\.0 MiB free, below its reserve \(--disk-reserve 64\.0 MiB\)/);
    expect(guard.full).toBe(true);
  });

  it('charges what it admitted until a whole poll interval has passed, so a burst cannot overrun the reserve', () => {
    const free = diskWith(RESERVE + 30 * MIB);
    const guard = guardOver(free);
    guard.poll();
    // 30 MiB above the reserve takes 10 MiB of admitted frames at the amplification of 3.
    let admitted = 0;
    while (refusal(guard, MIB) === null) admitted++;
    expect(admitted).toBe(Math.ceil(30 / WRITE_AMPLIFICATION));
    expect(guard.full).toBe(true);
    // A reading just after the burst still charges it: those frames may not be written yet.
    free.bytes = RESERVE * 1.25;
    guard.poll();
    expect(guard.full).toBe(true);
    // A whole interval later, what it admitted is on disk (the reading would show it): the charges are gone.
    guard.poll();
    expect(guard.full).toBe(false);
    expect(refusal(guard, MIB)).toBeNull();
  });

  it('takes writes again only once space is back above 1.25 times the reserve', () => {
    const free = diskWith(RESERVE - 1);
    const guard = guardOver(free);
    guard.poll();
    expect(guard.full).toBe(true);
    free.bytes = RESERVE + MIB; // above the reserve but within the margin: still refused
    free.ms += FRESH_MS;
    expect(refusal(guard, 1)?.code).toBe('QUOTA_EXCEEDED');
    free.bytes = RESERVE * 1.25 + MIB;
    free.ms += FRESH_MS;
    expect(refusal(guard, 1)).toBeNull();
    expect(guard.full).toBe(false);
  });

  it('takes at most one reading per FRESH_MS however many requests it admits', () => {
    const free = diskWith(10 * 1024 * MIB);
    const guard = guardOver(free);
    // 1,000 admissions over 10 periods of FRESH_MS: one reading at the start of each.
    for (let tick = 0; tick < 10 * FRESH_MS; tick++, free.ms++) {
      for (let k = 0; k < 10; k++) expect(refusal(guard, 100)).toBeNull();
    }
    expect(free.reads).toBe(10);
  });

  it('keeps its last reading when the file system cannot be read', () => {
    let fail = false;
    const guard = new DiskGuard('/unused', RESERVE, pino({ level: 'silent' }), () => {
      if (fail) throw new Error('EIO');
      return RESERVE - 1;
    });
    guard.poll();
    fail = true;
    expect(refusal(guard, 1)?.code).toBe('QUOTA_EXCEEDED');
    guard.poll();
    expect(guard.full).toBe(true);
  });
});
