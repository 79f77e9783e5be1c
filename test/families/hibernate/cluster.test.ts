// Hibernation on a real three-member cluster. Units frozen on every member; the
// followers serving stale reads of them from their own cold files; the
// leader killed with kill -9 while concurrent reads thaw them, and every item
// read back through the new leader and on every member. A member wiped and
// re-added after compaction gets the Frozen units' cold files in its snapshot,
// then applies their thaws like the others (a member without a unit's file
// would stop on that thaw).
import { afterAll, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../../src/client/index.js';
import { HibernateClient } from '../../../src/families/hibernate/client.js';
import { ChaosCluster } from '../../cluster/harness.js';
import { main } from '../../../src/cli/main.js';
import { captureIO } from '../../client/cli-io.js';
import { pollUntil } from '../../support/poll.js';
import { killAll } from '../../support/vera-process.js';

afterAll(async () => {
  await killAll();
});

const UNITS = 12;
const unit = (k: number): string => `/users/u${k}`;

async function metricOn(cluster: ChaosCluster, i: number, name: string): Promise<number> {
  const text = await fetch(`${cluster.member(i).httpUrl}/metrics`).then((r) => r.text());
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
}

async function staleItems(cluster: ChaosCluster, i: number, path: string): Promise<unknown[]> {
  const res = await fetch(`${cluster.member(i).httpUrl}/v1/data${path}?consistency=stale`);
  return ((await res.json()) as { items: Array<{ data: unknown }> }).items.map((x) => x.data);
}

describe('hibernation on a cluster', () => {
  it('survives a leader kill during thaws and reaches a member re-added by snapshot', { timeout: 150_000 }, async () => {
    const cluster = await ChaosCluster.start({ size: 3, args: ['--snapshot-entries', '50', '--snapshot-keep', '10'] });
    const clients: VeraClient[] = [];
    const open = async (): Promise<VeraClient> => {
      const c = await connect(cluster.urls, { timeoutMs: 10_000, requestTimeoutMs: 20_000 });
      clients.push(c);
      return c;
    };
    try {
      const client = await open();
      const hib = new HibernateClient(client);
      await pollUntil('the cluster to accept hibernation', async () => (await hib.units(), true), 30_000);
      for (let k = 0; k < UNITS; k++) for (const d of ['x', 'y']) await client.push(`${unit(k)}/list`, `${d}${k}`, { persistent: true, watch: false });
      for (let k = 0; k < UNITS; k++) expect(await hib.freeze(unit(k))).toMatchObject({ frozen: true, items: 2 });
      await cluster.waitForQuiet();
      for (const m of cluster.members) expect(await metricOn(cluster, m.index, 'vera_hibernate_units_frozen')).toBe(UNITS);

      // Every member holds the cold files: a follower serves a stale read of a frozen unit from them, thawing nothing.
      const leader = await cluster.waitForLeader();
      const followers = cluster.members.map((m) => m.index).filter((i) => i !== leader);
      for (const f of followers) for (let k = 0; k < UNITS; k++) expect(await staleItems(cluster, f, `${unit(k)}/list`), `member ${f}`).toEqual([`x${k}`, `y${k}`]);
      const io = captureIO();
      expect(await main(['get', `${unit(0)}/list`, '--stale', '--json', '--server', `${cluster.member(followers[0]!).url},${cluster.member(leader).url}`], io)).toBe(0);
      expect((JSON.parse(io.out()) as { items: Array<{ data: unknown }> }).items.map((i) => i.data)).toEqual(['x0', 'y0']);
      for (const m of cluster.members) expect(await metricOn(cluster, m.index, 'vera_hibernate_units_frozen')).toBe(UNITS);

      // Half the units thaw under concurrent reads while the leader dies; the rest thaw after.
      const reader = await open();
      const reads = Array.from({ length: UNITS / 2 }, (_, k) => reader.get(`${unit(k)}/list`).then((r) => r.items.map((i) => i.data)).catch(() => null));
      await cluster.kill9(leader);
      await Promise.all(reads);
      await cluster.waitForLeader({ not: leader });
      await cluster.restart(leader);
      const after = await open();
      for (let k = 0; k < UNITS; k++) expect((await after.get(`${unit(k)}/list`)).items.map((i) => i.data)).toEqual([`x${k}`, `y${k}`]);
      await cluster.waitForQuiet();
      for (const m of cluster.members) {
        expect(await metricOn(cluster, m.index, 'vera_hibernate_units_frozen'), m.id).toBe(0);
        for (let k = 0; k < UNITS; k++) expect(await staleItems(cluster, m.index, `${unit(k)}/list`), `${m.id} ${unit(k)}`).toEqual([`x${k}`, `y${k}`]);
      }

      // Freeze again, push past compaction, then wipe a follower and add it back: it learns the state by snapshot.
      const hib2 = new HibernateClient(after);
      for (let k = 0; k < UNITS; k++) expect(await hib2.freeze(unit(k))).toMatchObject({ frozen: true });
      for (let n = 0; n < 120; n++) await after.push('/traffic', n, { persistent: true, watch: false });
      const now = await cluster.waitForLeader();
      const follower = cluster.members.map((m) => m.index).find((i) => i !== now)!;
      await cluster.wipe(follower);
      try {
        await cluster.rejoin(follower, 60_000);
      } catch (err) {
        // What the members said about snapshots and errors, to tell a slow machine from a broken transfer.
        const said = cluster.members.flatMap((m) => cluster.logsOf(m.index).filter((l) => /snapshot|cold|hibernat/i.test(String(l.event ?? l.msg)) || Number(l.level) >= 40).map((l) => `${m.id}: ${JSON.stringify(l)}`));
        throw new Error(`${(err as Error).message}\n${said.slice(-40).join('\n')}`);
      }
      await cluster.waitForQuiet();
      expect(cluster.logsOf(follower).some((l) => l.event === 'snapshot-installed')).toBe(true);
      expect(await metricOn(cluster, follower, 'vera_hibernate_units_frozen')).toBe(UNITS);
      expect(await metricOn(cluster, follower, 'vera_hibernate_cold_bytes')).toBeGreaterThan(0);
      // The thaws reach it too: it has every file, so it applies them and holds the items.
      for (let k = 0; k < UNITS; k++) expect((await after.get(`${unit(k)}/list`)).items).toHaveLength(2);
      await cluster.waitForQuiet();
      expect(cluster.stateOf(follower)).toBe('up');
      for (let k = 0; k < UNITS; k++) expect(await staleItems(cluster, follower, `${unit(k)}/list`)).toEqual([`x${k}`, `y${k}`]);
    } finally {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      await cluster.close();
    }
  });

  it('a freeze whose leader dies between its two entries is finished by the next leader, the same on every member', { timeout: 150_000 }, async () => {
    const cluster = await ChaosCluster.start({ size: 3 });
    const clients: VeraClient[] = [];
    const open = async (): Promise<VeraClient> => {
      const c = await connect(cluster.urls, { timeoutMs: 10_000, requestTimeoutMs: 20_000 });
      clients.push(c);
      return c;
    };
    const BIG = 8;
    const PER_UNIT = 5000;
    try {
      const client = await open();
      const hib = new HibernateClient(client);
      await pollUntil('the cluster to accept hibernation', async () => (await hib.units(), true), 30_000);
      // Units large enough that the files take a while beside the log: a window between the two entries.
      let next = 0;
      await Promise.all(
        Array.from({ length: 64 }, async () => {
          for (let n = next++; n < BIG * PER_UNIT; n = next++) await client.push(`${unit(n % BIG)}/list`, n, { persistent: true, watch: false });
        }),
      );
      const leader = await cluster.waitForLeader();
      const freezer = await open();
      const freezing = new HibernateClient(freezer).freezeMany(Array.from({ length: BIG }, (_, k) => unit(k))).catch(() => null);
      // The leader dies as soon as the first entry is applied and before the second.
      const watcher = await open();
      let begun = false;
      for (const t0 = performance.now(); performance.now() - t0 < 20_000 && !begun; ) begun = (await new HibernateClient(watcher).units()).some((u) => u.state === 'freezing');
      expect(begun).toBe(true);
      await cluster.kill9(leader);
      await freezing;
      await cluster.waitForLeader({ not: leader });
      await cluster.restart(leader);
      const after = await open();
      const afterHib = new HibernateClient(after);
      // The new leader commits the leftover freeze: every unit ends Frozen (nothing wrote to them).
      await pollUntil('the leftover freeze to be committed', async () => {
        const units = await afterHib.units();
        return units.length === BIG && units.every((u) => u.state === 'frozen') ? true : undefined;
      }, 60_000);
      await cluster.waitForQuiet();
      for (const m of cluster.members) expect(await metricOn(cluster, m.index, 'vera_hibernate_units_frozen'), m.id).toBe(BIG);
      expect(cluster.members.flatMap((m) => cluster.logsOf(m.index)).some((l) => /a freeze begun earlier/.test(String(l.msg)))).toBe(true);
      // Every item comes back (the reads thaw), and every member holds the same.
      for (let k = 0; k < BIG; k++) expect((await after.get(`${unit(k)}/list`)).items).toHaveLength(PER_UNIT);
      await cluster.waitForQuiet();
      for (const m of cluster.members) {
        for (let k = 0; k < BIG; k++) expect((await staleItems(cluster, m.index, `${unit(k)}/list`)).length, `${m.id} ${unit(k)}`).toBe(PER_UNIT);
      }
    } finally {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      await cluster.close();
    }
  });
});
