// The two systems of A1 behind one contract (system.ts):
// - Vera: the node assignment family on a 3-member cluster, through the
//   AssignClient; a request that creates or changes a user is a Raft entry
//   synced on a majority before it is answered, an unchanged returning user is
//   a linearizable read. One connection per 16 clients.
// - PostgreSQL 15 with seed 001's schema and Tokenserver's queries
//   (tokenserver-pg.ts), fsync and synchronous_commit on, through a pg.Pool of
//   up to 64 connections (one per client below that).
import pg from 'pg';
import { connect, type VeraClient } from '../../src/client/index.js';
import { AssignClient } from '../../src/families/assign/client.js';
import type { DrainPacing } from '../../src/families/assign/client-drain-pacing.js';
import { startPostgres } from '../journal/servers.js';
import { LOOPBACK } from '../lib/net.js';
import { VeraCluster } from '../systems/vera.js';
import { drainByRate, type AssignSystem, type Clients } from './system.js';
import { TokenserverPg } from './tokenserver-pg.js';

const CLIENTS_PER_CONNECTION = 16;
const MAX_PG_POOL = 64;

/**
 * `checkout`: another built checkout whose bin/vera.js the members run (interleave.ts); this one
 * when absent. `drainPacing`: the drain's pacing, when not the client's default (interleave.ts
 * compares it with none: `UNPACED`).
 */
export async function veraAssign(logDir: string, checkout?: string, drainPacing?: DrainPacing): Promise<AssignSystem> {
  const cluster = new VeraCluster({ logDir, inspector: false, ...(checkout === undefined ? {} : { checkout }) });
  await cluster.start();
  const leader = await cluster.leader();
  const url = `ws://${LOOPBACK}:${cluster.members().find((m) => m.id === leader)!.clientPort}`;
  const opened: VeraClient[] = [];
  const open = async (): Promise<AssignClient> => {
    const c = await connect(url, { connectTimeoutMs: 20_000, requestTimeoutMs: 30_000 });
    c.on('failed', () => undefined);
    opened.push(c);
    return new AssignClient(c);
  };
  const admin = await open();
  return {
    name: 'Vera',
    settings: `3 members; a new or changed user is a Raft entry synced on a majority, an unchanged returning user a linearizable read; one connection per ${CLIENTS_PER_CONNECTION} clients`,
    async setup(service, releaseRate, nodes) {
      // A new cluster raises its command version as its first leader starts: wait for node assignment.
      for (let tries = 0; ; tries++) {
        try {
          await admin.service(service, { releaseRate });
          break;
        } catch (err) {
          if (tries > 200 || !(err instanceof Error && /command version/.test(err.message))) throw err;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      for (const n of nodes) await admin.addNode(service, n.node, { capacity: n.capacity, available: n.available });
    },
    async clients(count): Promise<Clients> {
      const conns = await Promise.all(Array.from({ length: Math.ceil(count / CLIENTS_PER_CONNECTION) }, () => open()));
      return {
        async login(i, service, email, v) {
          const a = await conns[i % conns.length]!.user(service, email, v);
          return { uid: a.uid, node: a.node };
        },
        async event(i, email, generation, eventId) {
          await conns[i % conns.length]!.event('passwordChange', email, generation, eventId);
        },
        close: async () => undefined,
      };
    },
    async addNode(service, n) {
      await admin.addNode(service, n.node, { capacity: n.capacity, available: n.available });
    },
    async bulkUsers(service, node, emails, v, firstUid) {
      // Imported a thousand records per entry, as a Tokenserver database comes in.
      for (let k = 0; k < emails.length; k += 1000) {
        const users = emails.slice(k, k + 1000).map((email, j) => ({ uid: firstUid + k + j, email, generation: v.generation, clientState: v.clientState, keysChangedAt: v.keysChangedAt, createdAt: Date.now(), replacedAt: 0, node }));
        await admin.importUsers(service, users);
      }
    },
    async drain(service, node, { batch, ratePerSecond, onStep }) {
      // vera assign drain: the client's paced steps (assign.decommission with max; the node closed to new users first).
      let before = 0;
      const onBatch = (p: { replaced: number; stepMs: number }): void => {
        onStep?.(p.replaced - before, p.stepMs);
        before = p.replaced;
      };
      const r = await admin.drain(service, node, { batch, ratePerSecond, onBatch, ...(drainPacing === undefined ? {} : { pacing: drainPacing }) });
      return { replaced: r.replaced, steps: r.batches };
    },
    async counters(service) {
      const nodes = await admin.nodes(service);
      return { load: nodes.reduce((s, n) => s + n.load, 0), currentRecords: await admin.count(service), nodesOff: null, duplicates: null };
    },
    async stop() {
      for (const c of opened) await c.close().catch(() => undefined);
      await cluster.stop();
    },
  };
}

export async function postgresAssign(logDir: string): Promise<AssignSystem> {
  const server = await startPostgres(logDir);
  const connectionString = `postgres://bench@${LOOPBACK}:${server.port}/postgres`;
  const admin = new TokenserverPg(new pg.Pool({ connectionString, max: 2 }));
  const pools: pg.Pool[] = [admin.pool];
  return {
    name: 'PostgreSQL 15 (Tokenserver schema)',
    settings: `one server, fsync on, synchronous_commit on; seed 001's tables and indexes; Tokenserver's queries, allocation in one transaction; a pool of one connection per client up to ${MAX_PG_POOL}`,
    async setup(service, releaseRate, nodes) {
      await admin.setup(service, releaseRate, nodes);
    },
    async clients(count): Promise<Clients> {
      const pool = new pg.Pool({ connectionString, max: Math.min(count, MAX_PG_POOL) });
      pools.push(pool);
      const db = admin.withPool(pool);
      return {
        login: (_i, _service, email, v) => db.login(email, v),
        event: (_i, email, generation) => db.passwordChange(email, generation),
        close: () => pool.end(),
      };
    },
    counters: () => admin.counters(),
    addNode: (_service, n) => admin.addNode(n),
    bulkUsers: (_service, node, emails, v) => admin.bulkUsers(node, emails, v),
    drain: (_service, node, options) => drainByRate((batch) => admin.drainStep(node, batch), options),
    async stop() {
      for (const p of pools) await p.end().catch(() => undefined);
      await server.stop();
    },
  };
}

/** No pacing: every step the full batch, the next as soon as the rate allows (the drain before client-drain-pacing.ts). */
export const UNPACED: DrainPacing = { targetHoldMs: Number.POSITIVE_INFINITY, gap: 0, minBatch: Number.MAX_SAFE_INTEGER };
