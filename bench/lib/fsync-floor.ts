// The disk's floor: what one 4 KiB write followed by fdatasync costs on the
// data disk (the temp dir where every cluster keeps its data). No replicated
// write that is synced before it is acknowledged can beat this. Measured in
// Node with writeSync + fdatasyncSync in a loop, overwriting a preallocated
// file so the file size (metadata) does not change between samples.
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Samples, type LatencySummary } from './samples.js';

export interface FsyncFloor {
  readonly method: string;
  readonly directory: string;
  readonly blockBytes: number;
  readonly latencyMs: LatencySummary;
  readonly opsPerSec: number;
}

export function measureFsyncFloor(durationMs: number, maxSamples = 20_000): FsyncFloor {
  if (!(durationMs > 0)) throw new RangeError(`duration must be positive, got ${durationMs}`);
  const dir = mkdtempSync(join(tmpdir(), 'fsync-floor-'));
  const blockBytes = 4096;
  const slots = 256;
  const block = Buffer.alloc(blockBytes, 0x61);
  const samples = new Samples();
  const fd = openSync(join(dir, 'floor.bin'), 'w');
  try {
    for (let i = 0; i < slots; i++) writeSync(fd, block, 0, blockBytes, i * blockBytes);
    fdatasyncSync(fd);
    const start = performance.now();
    let i = 0;
    while (performance.now() - start < durationMs && samples.count < maxSamples) {
      const t0 = performance.now();
      writeSync(fd, block, 0, blockBytes, (i++ % slots) * blockBytes);
      fdatasyncSync(fd);
      samples.add(performance.now() - t0);
    }
    const elapsed = performance.now() - start;
    return {
      method: 'Node fs.writeSync(4 KiB, in place) + fs.fdatasyncSync in a loop',
      directory: tmpdir(),
      blockBytes,
      latencyMs: samples.summary(),
      opsPerSec: (samples.count / elapsed) * 1000,
    };
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}
