// Disk use over a long run: with compaction every N entries the Raft log kept
// in a member's database plateaus instead of growing with the number of writes.

import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../src/client/index.js';
import { Bucket, bucketRange } from '../../src/keys/index.js';
import { killAll, VeraProcess } from '../support/vera-process.js';
import { pushMany, statusOf } from './support.js';

let client: VeraClient | null = null;

afterEach(async () => {
  await client?.close().catch(() => undefined);
  client = null;
  await killAll();
});

/** Number of Raft log entries stored in a (stopped) member's database, and the database's size on disk. */
async function logFootprint(dataDir: string): Promise<{ entries: number; dbBytes: number }> {
  const path = join(dataDir, 'db');
  let dbBytes = 0;
  for (const name of await readdir(path)) dbBytes += (await stat(join(path, name))).size;
  const db = new ClassicLevel<Buffer, Buffer>(path, { keyEncoding: 'buffer', valueEncoding: 'buffer', createIfMissing: false });
  await db.open();
  try {
    let entries = 0;
    for await (const _ of db.keys(bucketRange(Bucket.log))) entries++;
    return { entries, dbBytes };
  } finally {
    await db.close();
  }
}

describe('log size over a long run', () => {
  it('2,000 writes with --snapshot-entries 100 keep the stored log below entries + keep', async () => {
    const EVERY = 100;
    const KEEP = 20;
    const member = await VeraProcess.start({ args: ['--snapshot-entries', String(EVERY), '--snapshot-keep', String(KEEP)] });
    try {
      client = await connect(member.url, { requestTimeoutMs: 15_000 });
      // Sample the log length while writing: lastIndex from /v1/status minus the latest compaction logged.
      let maxLogLength = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const st = await statusOf(member.clientPort);
          const compactions = member.logs.filter((l) => l.event === 'snapshot-compacted');
          const start = compactions.length === 0 ? 0 : Number(compactions[compactions.length - 1]!.index);
          maxLogLength = Math.max(maxLogLength, st.lastIndex - start);
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      await pushMany(client, 2000, { prefix: '/long', lists: 10, concurrency: 32, dataBytes: 200 });
      sampling = false;
      await sampler;
      await client.close();
      client = null;

      const compactions = member.logs.filter((l) => l.event === 'snapshot-compacted').length;
      const final = await statusOf(member.clientPort);
      await member.stop();
      const footprint = await logFootprint(member.dataDir);
      console.log(
        `[snapshot] long run: ${final.lastIndex} entries written, ${compactions} compactions, max log length seen ${maxLogLength},` +
          ` log entries on disk at the end ${footprint.entries}, db size ${(footprint.dbBytes / 1024).toFixed(0)} KiB`,
      );
      // Each compaction drops at least EVERY entries; batches make some drop more.
      expect(compactions).toBeGreaterThanOrEqual(8);
      expect(footprint.entries).toBeLessThan(EVERY + KEEP);
      expect(footprint.entries).toBeGreaterThanOrEqual(KEEP);
      expect(maxLogLength).toBeLessThan(4 * (EVERY + KEEP));
    } finally {
      member.removeData();
    }
  });
});
