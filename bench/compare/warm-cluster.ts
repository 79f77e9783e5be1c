// What the single-put probes (vt-probe.ts, tl-probe.ts) start from: a 3-member cluster
// warmed up by 4,000 puts at 64 in flight, then one client that has put `singles` items
// one at a time under `prefix`, so the puts measured next meet a warm JIT and store.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VeraCluster } from '../systems/vera.js';
import { connectMany, closeAll } from '../scenarios/context.js';
import type { BenchClient } from '../systems/system.js';
import { runWrites } from './workloads.js';

export interface WarmCluster {
  readonly cluster: VeraCluster;
  readonly leader: string;
  readonly client: BenchClient;
}

export async function startWarmCluster(prefix: string, singles: number): Promise<WarmCluster> {
  const cluster = new VeraCluster({ logDir: mkdtempSync(join(tmpdir(), `${prefix}-`)), inspector: false });
  await cluster.start();
  try {
    const warm = await connectMany(cluster, 16);
    await runWrites(warm, cluster.members(), { id: 'warm', clients: 16, inFlight: 64, puts: 4000, keys: 'few' }, 'warm');
    await closeAll(warm);
    const leader = await cluster.leader();
    const [client] = await connectMany(cluster, 1);
    for (let i = 0; i < singles; i++) await client!.append(`${prefix}w/k${i}`, 'x'.repeat(128));
    return { cluster, leader, client: client! };
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}
