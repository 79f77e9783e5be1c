// The race Tokenserver repairs on read (syncstorage-rs#1171: two records for one
// user, created by concurrent requests), tried on a real three-member cluster:
// rounds of many simultaneous get-or-create requests for ONE email, each round
// after a change that makes the next request allocate or create (a node
// decommissioned, a new client state), with the leader killed with kill -9 in
// the middle of two rounds (requests whose answer was lost ask again). In every
// round, all the requests got the same record; at the end every member holds exactly one current record
// for the email, node loads equal current records, and the chaos checker
// (test/cluster/assign-checker.ts) finds nothing wrong in the whole history.
import { afterAll, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../../src/client/index.js';
import { AssignClient } from '../../../src/families/assign/client.js';
import { VeraError } from '../../../src/protocol/index.js';
import { checkAssign, type LoginEvent } from '../../cluster/assign-checker.js';
import { ChaosCluster } from '../../cluster/harness.js';
import { pollUntil } from '../../support/poll.js';
import { killAll } from '../../support/vera-process.js';

afterAll(async () => {
  await killAll();
});

const SERVICE = 'race-1.5';
const EMAIL = 'racer@example.com';
const NODES = ['https://a.example.com', 'https://b.example.com', 'https://c.example.com'];
const CLIENTS = 24;
const ROUNDS = 24;
/** Rounds during which the leader is killed: the kill goes out with the round's requests. */
const KILL_ROUNDS = new Set([8, 16]);

describe('one email raced by many clients across leader changes', () => {
  it('never gets two current records, and concurrent identical requests all get the same record', { timeout: 150_000 }, async () => {
    const cluster = await ChaosCluster.start({ size: 3 });
    const clients: VeraClient[] = [];
    try {
      for (let k = 0; k < CLIENTS; k++) clients.push(await connect(cluster.urls, { timeoutMs: 10_000, requestTimeoutMs: 20_000 }));
      const assigns = clients.map((c) => new AssignClient(c));
      const admin = assigns[0]!;
      await pollUntil('the cluster to accept assignment commands', async () => {
        await admin.service(SERVICE, {});
        return true;
      }, 30_000);
      for (const node of NODES) await admin.addNode(SERVICE, node, { capacity: 100 });

      const logins: LoginEvent[] = [];
      let generation = 1;
      let clientState = '';
      for (let round = 0; round < ROUNDS; round++) {
        // What the round races over: a move off a decommissioned node, or a key change (a new record).
        if (round % 2 === 1) {
          const current = await admin.lookup(SERVICE, EMAIL);
          await admin.decommission(SERVICE, current.current.node);
          // Open to new users again (a decommission closes the node): the race is over the move, not where it lands.
          await admin.updateNode(SERVICE, current.current.node, { backoff: 0 });
        } else if (round > 0) {
          generation++;
          clientState = `state${round}`;
        }
        const request = { generation, keysChangedAt: generation, clientState };
        const kill = KILL_ROUNDS.has(round)
          ? (async () => {
              const leader = await cluster.waitForLeader();
              await cluster.kill9(leader);
              await cluster.waitForLeader({ not: leader });
              await cluster.restart(leader);
            })()
          : Promise.resolve();
        const answers = await Promise.all(
          assigns.map(async (a) => {
            // A request whose answer was lost may have been applied: ask again, as Tokenserver's clients do.
            for (let attempt = 0; attempt < 5; attempt++) {
              const sentAt = performance.now();
              try {
                const r = await a.user(SERVICE, EMAIL, request);
                logins.push({ email: EMAIL, sentAt, ackedAt: performance.now(), outcome: 'ok', result: { uid: r.uid, node: r.node, generation: r.generation, clientState: r.clientState } });
                return r.uid;
              } catch (err) {
                const refused = err instanceof VeraError && err.hints.reason !== undefined;
                logins.push({ email: EMAIL, sentAt, ackedAt: performance.now(), outcome: refused ? 'refused' : 'unknown' });
                if (refused) throw err;
              }
            }
            return null;
          }),
        );
        await kill;
        const uids = answers.filter((u): u is number => u !== null);
        // Identical requests racing one another (and their retries): every answer names one record.
        expect(uids, `round ${round}`).toHaveLength(CLIENTS);
        expect(new Set(uids).size, `round ${round}: uids ${uids.join(', ')}`).toBe(1);
      }

      await cluster.waitForQuiet();
      const finals = await Promise.all(
        cluster.members.map(async (m) => {
          const nodes = (await fetch(`${m.httpUrl}/v1/assign/services/${SERVICE}`).then((r) => r.json())) as { nodes: Array<{ node: string; capacity: number; load: number; available: number }> };
          const user = (await fetch(`${m.httpUrl}/v1/assign/services/${SERVICE}/users/${encodeURIComponent(EMAIL)}`).then((r) => r.json())) as {
            records: Array<{ uid: number; email: string; generation: number; keysChangedAt: number; clientState: string; createdAt: number; replacedAt: number; node: string }>;
          };
          return { member: m.id, nodes: nodes.nodes.map(({ node, capacity, load, available }) => ({ node, capacity, load, available })), records: user.records };
        }),
      );
      for (const f of finals) {
        expect(f.records.filter((r) => r.replacedAt === 0), f.member).toHaveLength(1);
        expect(f.nodes.reduce((sum, n) => sum + n.load, 0), f.member).toBe(1);
        // One record per round that moved or re-keyed the user, plus the first: no request made a second.
        expect(f.records, f.member).toHaveLength(ROUNDS);
      }
      const report = checkAssign({ logins, samples: [] }, finals);
      const acked = logins.filter((l) => l.outcome === 'ok').length;
      console.info(`assignment race: ${CLIENTS} clients x ${ROUNDS} rounds, ${acked} answered, ${logins.length - acked} unanswered or refused; ${report.notes.join('; ')}; faults: ${cluster.faults.map((f) => f.what).join('; ')}`);
      expect(report.problems).toEqual([]);
      expect(acked).toBe(CLIENTS * ROUNDS);
      // The kills cost answers that the retries then got: the race did cross leader changes.
      expect(logins.length).toBeGreaterThan(acked);
      expect(cluster.faults.filter((f) => f.what.startsWith('kill9'))).toHaveLength(2);
    } finally {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      await cluster.close();
    }
  });
});
