// S4 ephemeral cleanup: an owner holds an ephemeral item (session timeout /
// lease TTL of ttlMs) through a proxy to the leader; a watcher watches the
// item's list directly. The proxy then cuts the owner off without a goodbye,
// and we time how long until the watcher sees the delete — from the cut, and
// from the owner's last bytes (the last moment the server knew it was alive,
// which is where the timeout starts).
import { CuttableProxy } from '../lib/net.js';
import { Samples, type LatencySummary } from '../lib/samples.js';
import { value128 } from '../lib/load.js';
import { withTimeout } from '../systems/common.js';
import type { BenchClient } from '../systems/system.js';
import { closeAll, type ScenarioContext } from './context.js';

export interface EphemeralTrial {
  readonly sinceLastOwnerBytesMs: number;
  readonly sinceCutMs: number;
}

export interface S4Result {
  readonly ttlMs: number;
  /** What each owner's server granted (null for etcd, whose leases have no session). */
  readonly grantedTimeoutsMs: ReadonlyArray<number | null>;
  readonly owners: number;
  readonly trials: readonly EphemeralTrial[];
  /** Deletes never seen within ttl + 15 s. */
  readonly missed: number;
  readonly sinceLastOwnerBytesMs: LatencySummary;
  readonly sinceCutMs: LatencySummary;
}

interface Owner {
  readonly list: string;
  readonly proxy: CuttableProxy;
  client: BenchClient | null;
  appended: Promise<void>;
  deleted: Promise<number>;
}

export async function runS4(ctx: ScenarioContext): Promise<S4Result> {
  const { owners: count, ttlMs } = ctx.scale.s4;
  const leader = await ctx.cluster.leader();
  const leaderPort = ctx.cluster.members().find((m) => m.id === leader)?.clientPort;
  if (leaderPort === undefined) throw new Error(`no client port for leader ${leader}`);
  const watcher = await ctx.cluster.connect();
  const owners: Owner[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const list = `s4/o${i}-${Date.now()}`;
      let onAppend!: () => void;
      let onDelete!: (at: number) => void;
      const owner: Owner = {
        list,
        proxy: new CuttableProxy(leaderPort),
        client: null,
        appended: new Promise<void>((resolve) => (onAppend = resolve)),
        deleted: new Promise<number>((resolve) => (onDelete = resolve)),
      };
      owners.push(owner);
      const handle = await watcher.watch(list, (change) => (change.kind === 'append' ? onAppend() : onDelete(change.at)));
      await owner.proxy.start();
      owner.client = await ctx.cluster.connect({ onlyPort: owner.proxy.port, sessionTimeoutMs: ttlMs });
      await owner.client.appendEphemeral(list, value128(`s4:${i}`), ttlMs);
      await withTimeout(owner.appended, 10_000, 'the watcher to see the ephemeral item');
      await handle.armed();
    }
    const cutAt = owners.map((o) => o.proxy.cut());
    const deadline = ttlMs + 15_000;
    const seen = await Promise.all(owners.map((o) => withTimeout(o.deleted, deadline, 'the delete').catch(() => Number.NaN)));
    const trials: EphemeralTrial[] = [];
    const sinceBytes = new Samples();
    const sinceCut = new Samples();
    let missed = 0;
    owners.forEach((o, i) => {
      const at = seen[i]!;
      if (Number.isNaN(at)) {
        missed++;
        return;
      }
      const trial = { sinceLastOwnerBytesMs: at - o.proxy.lastClientBytesAt, sinceCutMs: at - cutAt[i]! };
      trials.push(trial);
      sinceBytes.add(trial.sinceLastOwnerBytesMs);
      sinceCut.add(trial.sinceCutMs);
    });
    const grantedTimeoutsMs = owners.map((o) => o.client?.grantedSessionTimeoutMs() ?? null);
    const result: S4Result = { ttlMs, grantedTimeoutsMs, owners: count, trials, missed, sinceLastOwnerBytesMs: sinceBytes.summary(), sinceCutMs: sinceCut.summary() };
    ctx.log(`S4 delete seen ${result.sinceLastOwnerBytesMs.min.toFixed(0)}-${result.sinceLastOwnerBytesMs.max.toFixed(0)} ms after the owner's last bytes (timeout ${ttlMs} ms), ${missed} missed`);
    return result;
  } finally {
    for (const o of owners) {
      o.proxy.cut();
      o.client?.abandon();
    }
    await closeAll([watcher]);
  }
}
