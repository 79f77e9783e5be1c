// The journal on a real three-member cluster (real processes on loopback, a
// fault proxy on every peer link) while the leader is killed with kill -9 and
// restarted, twice, under a producer and six workers. Checked afterwards, from
// the recorded history and every member's state:
//   - every acknowledged add was done, or is still in the journal (flagged):
//     nothing acknowledged is lost;
//   - no item was acknowledged done twice;
//   - no lease was honoured after a later claim of the same item was
//     acknowledged (two workers never both held a valid claim);
//   - every member reports the same counts.
import { afterAll, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../../src/client/index.js';
import { JournalClient } from '../../../src/families/journal/client.js';
import { VeraError } from '../../../src/protocol/index.js';
import { ChaosCluster } from '../../cluster/harness.js';
import { pollUntil } from '../../support/poll.js';
import { killAll } from '../../support/vera-process.js';

afterAll(async () => {
  await killAll();
});

interface ClaimRecord {
  readonly key: string;
  readonly lease: number;
  /** When the claim's answer arrived (performance.now()). */
  readonly ackedAt: number;
}

interface DoneRecord {
  readonly key: string;
  readonly lease: number;
  /** When the done was sent (performance.now()). */
  readonly sentAt: number;
}

const ITEMS = 1500;
const BATCH = 10;
const WORKERS = 6;

describe('the journal under leader kills', () => {
  it('loses no acknowledged item, completes none twice, and never honours a superseded lease', { timeout: 120_000 }, async () => {
    const cluster = await ChaosCluster.start({ size: 3 });
    const clients: VeraClient[] = [];
    try {
      const open = async (): Promise<JournalClient> => {
        const c = await connect(cluster.urls, { timeoutMs: 10_000, requestTimeoutMs: 15_000 });
        clients.push(c);
        return new JournalClient(c);
      };
      const admin = await open();
      // A fresh cluster runs command version 1 until the leader has heard every member advertise the journal's.
      await pollUntil('the cluster to accept journal commands', async () => {
        try {
          await admin.create('jobs', { timeoutMs: 3_000, maxTimeouts: 255 });
          return true;
        } catch (err) {
          if (err instanceof VeraError && err.code === 'UNAVAILABLE') return undefined;
          throw err;
        }
      }, 20_000);

      const added = new Set<string>();
      const addUnknown = new Set<string>();
      const claims: ClaimRecord[] = [];
      const dones: DoneRecord[] = [];
      /** Keys whose done had no answer (a failover mid-call): they may or may not be done. */
      const doneUnknown = new Set<string>();
      let producing = true;

      const producer = (async () => {
        const journals = await open();
        for (let batch = 0; batch < ITEMS / BATCH; batch++) {
          const keys = Array.from({ length: BATCH }, (_, i) => `job-${batch * BATCH + i}`);
          try {
            await journals.add('jobs', keys.map((key) => ({ key, data: { key } })));
            for (const k of keys) added.add(k);
          } catch {
            for (const k of keys) addUnknown.add(k); // outcome unknown: may or may not be in
          }
        }
        producing = false;
      })();

      const worker = async (): Promise<void> => {
        const journals = await open();
        for (;;) {
          let claim;
          try {
            claim = await journals.claim('jobs', { max: 5, waitMs: 500 });
          } catch {
            continue; // a failover: the client reconnects and the claim is asked again
          }
          const ackedAt = performance.now();
          for (const item of claim.items) claims.push({ key: item.key, lease: claim.lease, ackedAt });
          if (claim.items.length === 0 && !producing) {
            const info = await journals.show('jobs').catch(() => null);
            if (info !== null && info.counts.waiting === 0 && info.counts.processing === 0) return;
          }
          for (const item of claim.items) {
            const sentAt = performance.now();
            try {
              await journals.done('jobs', item.key, claim.lease);
              dones.push({ key: item.key, lease: claim.lease, sentAt });
            } catch (err) {
              // CONFLICT: the lease ran out during a failover and the item comes back. Anything else: unknown.
              if (!(err instanceof VeraError && err.code === 'CONFLICT')) doneUnknown.add(item.key);
            }
          }
        }
      };
      const workers = Array.from({ length: WORKERS }, () => worker());

      // Faults: kill -9 the leader twice while work flows, restarting it each time.
      for (let round = 0; round < 2; round++) {
        await pollUntil('work to flow', async () => (claims.length > (round + 1) * 200 || !producing ? true : undefined), 30_000);
        const leader = await cluster.waitForLeader();
        await cluster.kill9(leader);
        await cluster.waitForLeader({ not: leader });
        await cluster.restart(leader);
      }
      await producer;
      await Promise.all(workers);
      await cluster.waitForQuiet();

      // Every member agrees on what is left.
      const shown = await Promise.all(
        cluster.members.map(async (m) => (await fetch(`${m.httpUrl}/v1/journals/jobs`).then((r) => r.json())) as { counts: { waiting: number; processing: number; flagged: number } }),
      );
      for (const s of shown) expect(s.counts).toEqual(shown[0]!.counts);
      expect(shown[0]!.counts).toMatchObject({ waiting: 0, processing: 0 });
      const flagged = new Set((await admin.flagged('jobs')).map((f) => f.key));
      expect(flagged.size).toBe(shown[0]!.counts.flagged);

      // Nothing acknowledged lost: each acknowledged add was done (acknowledged or maybe), or is still there.
      const doneAcked = new Map<string, number>();
      for (const d of dones) doneAcked.set(d.key, (doneAcked.get(d.key) ?? 0) + 1);
      const lost = [...added].filter((k) => !doneAcked.has(k) && !doneUnknown.has(k) && !flagged.has(k));
      expect(lost).toEqual([]);
      // Done at most once.
      expect([...doneAcked].filter(([, n]) => n > 1)).toEqual([]);
      // No lease honoured once a later claim of its item was acknowledged.
      const superseded = dones.filter((d) => claims.some((c) => c.key === d.key && c.lease > d.lease && c.ackedAt < d.sentAt));
      expect(superseded).toEqual([]);
      // Every claimed item was one the producer sent, and the faults really happened under load.
      for (const c of claims) expect(added.has(c.key) || addUnknown.has(c.key)).toBe(true);
      expect(added.size + addUnknown.size).toBe(ITEMS);
      expect(cluster.faults.filter((f) => f.what.startsWith('kill9'))).toHaveLength(2);
      expect(doneAcked.size).toBeGreaterThan(ITEMS * 0.9);
      console.info(
        `journal under leader kills: ${added.size} adds acknowledged (${addUnknown.size} unknown), ${claims.length} claims, ` +
          `${doneAcked.size} dones acknowledged (${doneUnknown.size} unknown), ${flagged.size} flagged; faults: ${cluster.faults.map((f) => f.what).join('; ')}`,
      );
    } finally {
      for (const c of clients) await c.close().catch(() => undefined);
      await cluster.close();
    }
  });
});
