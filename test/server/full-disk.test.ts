// A data disk that fills up, on a real (tmpfs) file system. An adversary who
// filled it saw clients cut off with 1006 and the member exit 70, because
// LevelDB cannot write again after a failed write. Now the member refuses
// requests that add data while the disk is below its reserve, goes on serving
// everything else, and takes writes again once space is freed: no restart.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { pollUntil } from '../support/poll.js';
import { killAll } from '../support/vera-process.js';
import { openSession, startLeader } from './fixture.js';
import type { WireClient } from './wire-client.js';

const MIB = 1024 * 1024;
const mounts: string[] = [];
const clients: WireClient[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  await killAll();
  for (const dir of mounts.splice(0)) {
    execFileSync('umount', ['-l', dir]);
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A fresh tmpfs of `sizeMiB` (the test runs as root, as CI does). */
function smallDisk(sizeMiB: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'vera-small-disk-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m`, 'tmpfs', dir]);
  mounts.push(dir);
  return dir;
}

function freeBytes(dir: string): number {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
}

describe('a full data disk', () => {
  it('refuses pushes with QUOTA_EXCEEDED while reads, deletes and the connection go on, and takes writes again once space is freed', async () => {
    const disk = smallDisk(96);
    const vp = await startLeader({ dataDir: join(disk, 'data'), args: ['--disk-reserve', '32MiB'] });
    const { client } = await openSession(vp, 'msgpack');
    clients.push(client);
    const first = await client.call('push', { path: '/disk/items', data: 'before the disk filled', persistent: true });

    // Leave 3 MiB: a few half-MiB pushes would reach ENOSPC if nothing stopped them.
    const filler = join(disk, 'filler');
    writeFileSync(filler, Buffer.alloc(freeBytes(disk) - 3 * MIB));
    const blob = 'x'.repeat(MIB / 2);
    const refused = await pollUntil(
      'a push refused for lack of disk space',
      async () => {
        const reply = await client.request('push', { path: '/disk/blobs', data: blob, watch: false });
        return reply.error === undefined ? undefined : reply.error;
      },
      10_000,
      100,
    );
    expect(refused.code).toBe('QUOTA_EXCEEDED');
    expect(refused.message).toMatch(/below its reserve \(--disk-reserve 32\.0 MiB\)/);
    // The member's log lines arrive through a pipe, maybe after the reply.
    await pollUntil('the disk-low log line', async () => vp.logs.find((l) => l.event === 'disk-low'), 5_000, 20);

    // Everything that does not add data still works, on the same connection.
    const got = await client.call('get', { path: '/disk/items' });
    expect((got.items as Array<{ data: unknown }>).map((i) => i.data)).toEqual(['before the disk filled']);
    const watch = await client.request('watch', { path: '/disk/other' });
    expect(watch.error?.code).toBe('QUOTA_EXCEEDED');
    expect((await client.request('delete', { path: '/disk/items', index: (first.item as { index: number }).index })).error).toBeUndefined();
    expect(vp.proc.exitCode).toBeNull();

    rmSync(filler);
    const resumed = await pollUntil(
      'a push accepted once space was freed',
      async () => {
        const reply = await client.request('push', { path: '/disk/blobs', data: blob, watch: false });
        return reply.error === undefined ? reply : undefined;
      },
      10_000,
      100,
    );
    expect((resumed.item as { index: number }).index).toBeGreaterThan(0);
    await pollUntil('the disk-ok log line', async () => vp.logs.find((l) => l.event === 'disk-ok'), 5_000, 20);
  }, 60_000);

  it('admits a burst of pushes sent all at once only as far as the space above the reserve allows', async () => {
    const disk = smallDisk(96);
    const vp = await startLeader({ dataDir: join(disk, 'data'), args: ['--disk-reserve', '32MiB'] });
    const { client } = await openSession(vp, 'msgpack');
    clients.push(client);

    // 4 MiB above the reserve, and 40 MiB of pushes arriving before any is written:
    // a guard that only looked at the free space would admit them all and hit ENOSPC.
    writeFileSync(join(disk, 'filler'), Buffer.alloc(freeBytes(disk) - 36 * MIB));
    const blob = 'x'.repeat(MIB / 2);
    const replies = await Promise.all(Array.from({ length: 80 }, () => client.request('push', { path: '/disk/burst', data: blob, watch: false })));
    const accepted = replies.filter((r) => r.error === undefined).length;
    const refusedCodes = new Set(replies.flatMap((r) => (r.error === undefined ? [] : [r.error.code])));
    // Each half-MiB frame is charged three times over: two fit in 4 MiB, a third would not.
    expect(accepted).toBeGreaterThanOrEqual(1);
    expect(accepted).toBeLessThanOrEqual(3);
    expect([...refusedCodes]).toEqual(['QUOTA_EXCEEDED']);

    expect(vp.proc.exitCode).toBeNull();
    const got = await client.call('get', { path: '/disk/burst' });
    expect((got.items as unknown[]).length).toBe(accepted);
    expect(freeBytes(disk)).toBeGreaterThan(0);
  }, 60_000);
});
