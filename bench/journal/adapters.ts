// The three queues of J1 behind one contract (queue.ts), each through its
// ordinary Node client:
// - Vera: the journal family on a 3-member cluster (every claim and done is a
//   Raft entry synced on a majority), the JournalClient's worker helper
//   (process): completions acknowledged together with the next claim in one
//   entry, long-polling claims (waitMs) woken by the server when idle.
// - BullMQ on Redis (one server, append-only file fsynced always or every second),
//   its Queue.addBulk and a Worker with `concurrency`.
// - pg-boss on PostgreSQL 15 (one server, fsync and synchronous_commit on),
//   insert() and `concurrency` fetch()/complete() loops that sleep 0.5 s when the queue is empty.
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import PgBoss from 'pg-boss';
import { connect, type VeraClient } from '../../src/client/index.js';
import { JournalClient } from '../../src/families/journal/client.js';
import { LOOPBACK } from '../lib/net.js';
import { VeraCluster } from '../systems/vera.js';
import type { QueueSystem, Workers } from './queue.js';
import { startPostgres, startRedis, type RunningServer } from './servers.js';

const PAYLOAD = 'x'.repeat(64);
const ADD_BATCH = 1000;

// ---------------------------------------------------------------- Vera

export async function veraQueues(logDir: string): Promise<QueueSystem> {
  const cluster = new VeraCluster({ logDir, inspector: false });
  await cluster.start();
  const leader = await cluster.leader();
  const url = `ws://${LOOPBACK}:${cluster.members().find((m) => m.id === leader)!.clientPort}`;
  const opened: VeraClient[] = [];
  const open = async (): Promise<VeraClient> => {
    const c = await connect(url, { connectTimeoutMs: 20_000, requestTimeoutMs: 30_000 });
    c.on('failed', () => undefined);
    opened.push(c);
    return c;
  };
  const client = async (): Promise<JournalClient> => new JournalClient(await open());
  const admin = await client();
  return {
    name: 'Vera journal',
    settings: '3 members; every add, claim and done is a Raft entry synced on a majority before it is answered',
    async open(queue, lockMs) {
      await admin.create(queue, { timeoutMs: lockMs, maxTimeouts: 100 });
      return {
        async add(jobs) {
          for (let i = 0; i < jobs.length; i += ADD_BATCH) {
            await admin.add(queue, jobs.slice(i, i + ADD_BATCH).map((j) => ({ key: j.key, data: PAYLOAD, ...(j.dueAt === undefined ? {} : { processAt: j.dueAt }) })));
          }
        },
        async work(concurrency, handle) {
          // The client's own worker helper, on one connection, as one BullMQ Worker with
          // `concurrency` is: completions acknowledged together with the next claim in one
          // entry, a waiting claim when idle. A short wait so that stop() returns soon.
          const worker = (await client()).process(queue, async (item) => handle(item.key), { concurrency, waitMs: 1_000 });
          return stopper(() => worker.stop());
        },
        async takeAndDie() {
          const dying = await open();
          const claim = await new JournalClient(dying).claim(queue, { max: 1, waitMs: 10_000 });
          // The worker's process is gone: its lease is left to time out.
          await dying.close();
          return claim.items[0]!.key;
        },
        close: async () => undefined,
      };
    },
    async stop() {
      for (const c of opened) await c.close().catch(() => undefined);
      await cluster.stop();
    },
  };
}

// ---------------------------------------------------------------- BullMQ

export async function bullmqQueues(appendfsync: 'always' | 'everysec', logDir: string): Promise<QueueSystem> {
  const server = await startRedis(appendfsync, logDir);
  const connections: Redis[] = [];
  const connection = (): Redis => {
    const c = new Redis({ host: LOOPBACK, port: server.port, maxRetriesPerRequest: null });
    c.on('error', () => undefined);
    connections.push(c);
    return c;
  };
  return {
    name: `BullMQ (Redis, appendfsync ${appendfsync})`,
    settings: `one redis-server, appendonly yes, appendfsync ${appendfsync}; BullMQ Worker with lockDuration = the lock timeout`,
    async open(name, lockMs) {
      const queue = new Queue(name, { connection: connection() });
      const workers: Worker[] = [];
      const worker = (concurrency: number, processor: (key: string) => Promise<void>): Worker => {
        const w = new Worker(name, async (job) => processor((job.data as { key: string }).key), {
          connection: connection(),
          concurrency,
          lockDuration: lockMs,
          stalledInterval: Math.max(500, lockMs / 2),
          maxStalledCount: 100,
          removeOnComplete: { count: 0 },
        });
        w.on('error', () => undefined);
        workers.push(w);
        return w;
      };
      return {
        async add(jobs) {
          for (let i = 0; i < jobs.length; i += ADD_BATCH) {
            const now = Date.now();
            await queue.addBulk(jobs.slice(i, i + ADD_BATCH).map((j) => ({ name: 'job', data: { key: j.key, payload: PAYLOAD }, opts: { jobId: j.key, ...(j.dueAt === undefined ? {} : { delay: Math.max(0, j.dueAt - now) }) } })));
          }
        },
        async work(concurrency, handle) {
          const w = worker(concurrency, handle);
          await w.waitUntilReady();
          return stopper(() => w.close());
        },
        async takeAndDie() {
          let taken!: (key: string) => void;
          const got = new Promise<string>((resolve) => (taken = resolve));
          const w = worker(1, (key) => {
            taken(key);
            return new Promise<void>(() => undefined); // never finishes: the process dies holding it
          });
          const key = await got;
          // force: no waiting, no lock renewal, the job stays active until the stalled check.
          await w.close(true);
          return key;
        },
        async close() {
          for (const w of workers) await w.close(true).catch(() => undefined);
          await queue.obliterate({ force: true }).catch(() => undefined);
          await queue.close();
        },
      };
    },
    async stop() {
      for (const c of connections) c.disconnect();
      await server.stop();
    },
  };
}

// ---------------------------------------------------------------- pg-boss

export async function pgBossQueues(logDir: string): Promise<QueueSystem> {
  const server: RunningServer = await startPostgres(logDir);
  const connectionString = `postgres://bench@${LOOPBACK}:${server.port}/postgres`;
  const bosses: PgBoss[] = [];
  const boss = async (): Promise<PgBoss> => {
    // maintenanceIntervalSeconds 1: its minimum, so expired jobs are retried as soon as pg-boss can.
    const b = new PgBoss({ connectionString, max: 32, maintenanceIntervalSeconds: 1, monitorStateIntervalSeconds: 60 });
    b.on('error', () => undefined);
    await b.start();
    bosses.push(b);
    return b;
  };
  const main = await boss();
  return {
    name: 'pg-boss (PostgreSQL 15)',
    settings: 'one PostgreSQL 15 server, fsync on, synchronous_commit on; fetch()/complete() loops, 0.5 s sleep when empty (work()\'s shortest polling interval); pool of 32 connections; jobs expire after the lock timeout and are retried',
    async open(name, lockMs) {
      await main.createQueue(name, { name, expireInSeconds: Math.max(1, Math.round(lockMs / 1000)), retryLimit: 1000, retryDelay: 0 });
      return {
        async add(jobs) {
          for (let i = 0; i < jobs.length; i += ADD_BATCH) {
            await main.insert(jobs.slice(i, i + ADD_BATCH).map((j) => ({ name, data: { key: j.key, payload: PAYLOAD }, ...(j.dueAt === undefined ? {} : { startAfter: new Date(j.dueAt) }) })));
          }
        },
        async work(concurrency, handle) {
          // fetch() and complete() loops rather than work(): work() waits its polling interval
          // after every job (32 jobs/s with 16 workers here), while a loop fetches again at once
          // and sleeps 0.5 s (work()'s shortest interval) only when the queue is empty.
          let stopping = false;
          const loops = Array.from({ length: concurrency }, async () => {
            while (!stopping) {
              const [job] = await main.fetch<{ key: string }>(name, { batchSize: 1 });
              if (job === undefined) {
                await new Promise((resolve) => setTimeout(resolve, 500));
                continue;
              }
              await handle(job.data.key);
              if (stopping) return;
              await main.complete(name, job.id);
            }
          });
          return stopper(async () => {
            stopping = true;
            await Promise.allSettled(loops);
          });
        },
        async takeAndDie() {
          const dying = await boss();
          let taken!: (key: string) => void;
          const got = new Promise<string>((resolve) => (taken = resolve));
          await dying.work(name, { batchSize: 1, pollingIntervalSeconds: 0.5 }, async ([job]) => {
            taken((job!.data as { key: string }).key);
            return new Promise<void>(() => undefined);
          });
          const key = await got;
          // The process is gone: it takes nothing more and never completes the job, which stays
          // active until it expires. (Stopping the instance would fail the job at once, which a
          // killed process cannot do.)
          void dying.offWork(name).catch(() => undefined);
          return key;
        },
        async close() {
          await main.deleteQueue(name).catch(() => undefined);
        },
      };
    },
    async stop() {
      for (const b of bosses) await b.stop({ graceful: false, wait: true }).catch(() => undefined);
      await server.stop();
    },
  };
}

function stopper(stop: () => Promise<unknown>): Workers {
  return { stop: async () => void (await stop()) };
}
