import { VeraCluster } from '../systems/vera.js';
import { connect } from '../../src/client/index.js';
import { AssignClient } from '../../src/families/assign/client.js';
import { LOOPBACK } from '../lib/net.js';
const cluster = new VeraCluster({ logDir: '/tmp/assign-probe/logs', inspector: false, ...(process.argv[2] ? { checkout: process.argv[2] } : {}) });
await cluster.start();
const leader = await cluster.leader();
const url = `ws://${LOOPBACK}:${cluster.members().find((m) => m.id === leader)!.clientPort}`;
const c = await connect(url, { connectTimeoutMs: 20000, requestTimeoutMs: 30000 });
const a = new AssignClient(c);
for (let t = 0; ; t++) { try { await a.service('s', { releaseRate: 0.1 }); break; } catch (e) { if (t > 200) throw e; await new Promise((r) => setTimeout(r, 50)); } }
await a.addNode('s', 'https://d', { capacity: 1e6, available: 0 });
await a.addNode('s', 'https://o', { capacity: 1e6, available: 1e6 });
const N = 20000;
for (let k = 0; k < N; k += 1000) await a.importUsers('s', Array.from({ length: 1000 }, (_, j) => ({ uid: 1000 + k + j, email: `d${k + j}@x`, generation: 1, clientState: '', keysChangedAt: 1, createdAt: 1, replacedAt: 0, node: 'https://d' })));
for (let round = 0; round < 3; round++) for (const b of [1, 10, 50, 100, 300]) {
  const times: number[] = [];
  for (let i = 0; i < 10; i++) { const t = performance.now(); await a.drainBatch('s', 'https://d', b); times.push(performance.now() - t); }
  times.sort((x, y) => x - y); console.log('batch', b, 'median', times[5]!.toFixed(2));
}
await c.close(); await cluster.stop();
