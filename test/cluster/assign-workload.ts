// A node assignment workload for fault trials: a few clients sending Tokenserver's
// get-or-create request for a small pool of emails they share, so requests for
// one email race: plain logins, generation bumps, key changes (a new client
// state: a new record), password-change events and node decommissions (the
// node's users move on their next request). Nodes start with few available
// slots, so capacity is released as the run goes. A sampler reads users on
// random members while the faults run. Everything is recorded for checkAssign
// (assign-checker.ts); `final` reads every member's records and nodes.
import type { VeraClient } from '../../src/client/index.js';
import { afterFailure, openClient } from './pace.js';
import { AssignClient } from '../../src/families/assign/client.js';
import { VeraError } from '../../src/protocol/index.js';
import { pollUntil } from '../support/poll.js';
import type { AssignHistory, AssignMemberState, AssignNode, AssignRecord, LoginEvent } from './assign-checker.js';
import type { ChaosCluster } from './harness.js';
import type { Rng } from './workload.js';

export interface AssignWorkloadOptions {
  readonly service?: string;
  readonly clients?: number;
  readonly emails?: number;
  readonly nodes?: number;
}

interface EmailState {
  generation: number;
  keysChangedAt: number;
  clientState: string;
}

export class AssignWorkload {
  readonly service: string;
  readonly emails: readonly string[];
  readonly nodes: readonly string[];
  private readonly logins: LoginEvent[] = [];
  private readonly samples: Array<AssignHistory['samples'][number]> = [];
  private readonly state = new Map<string, EmailState>();
  private readonly clients: VeraClient[] = [];
  private running = true;
  private loops: Array<Promise<void>> = [];
  private keyChanges = 0;

  private constructor(
    private readonly cluster: ChaosCluster,
    private readonly rng: Rng,
    options: AssignWorkloadOptions,
  ) {
    this.service = options.service ?? 'chaos-1.5';
    this.emails = Array.from({ length: options.emails ?? 10 }, (_, k) => `user${k}@example.com`);
    this.nodes = Array.from({ length: options.nodes ?? 3 }, (_, k) => `https://node${k}.example.com`);
    for (const e of this.emails) this.state.set(e, { generation: 1, keysChangedAt: 1, clientState: '' });
  }

  /** Creates the service and its nodes (once the cluster runs assignment commands) and starts the clients and the sampler. */
  static async start(cluster: ChaosCluster, rng: Rng, options: AssignWorkloadOptions = {}): Promise<AssignWorkload> {
    const w = new AssignWorkload(cluster, rng, options);
    const admin = await w.open();
    await pollUntil('the cluster to accept assignment commands', async () => {
      try {
        await admin.service(w.service, { releaseRate: 0.25 });
        for (const node of w.nodes) {
          // Capacity for every email on each node; only two slots open at first, so releases happen.
          await admin.addNode(w.service, node, { capacity: w.emails.length, available: 2 }).catch((err: unknown) => {
            if (!(err instanceof VeraError && err.code === 'CONFLICT')) throw err; // added by an earlier try
          });
        }
        return true;
      } catch (err) {
        if (err instanceof VeraError && (err.code === 'UNAVAILABLE' || err.code === 'TIMEOUT')) return undefined;
        throw err;
      }
    }, 30_000);
    const clients = options.clients ?? 3;
    w.loops = [...Array.from({ length: clients }, () => w.work()), w.sample()];
    return w;
  }

  private connectOne(): Promise<VeraClient> {
    return openClient(this.cluster.urls, { timeoutMs: 10_000, requestTimeoutMs: 15_000 }, this.clients);
  }

  private async open(): Promise<AssignClient> {
    return new AssignClient(await this.connectOne());
  }

  private async work(): Promise<void> {
    let client = await this.connectOne();
    let assign = new AssignClient(client);
    const recover = async (): Promise<void> => {
      const again = await afterFailure(client, this.running ? () => this.connectOne() : null);
      if (again !== client) assign = new AssignClient((client = again));
    };
    while (this.running) {
      const email = this.rng.pick(this.emails);
      const s = this.state.get(email)!;
      const action = this.rng.weighted({ login: 55, bump: 20, rekey: 18, event: 4, decommission: 3 });
      try {
        if (action === 'decommission') {
          const node = this.rng.pick(this.nodes);
          await assign.decommission(this.service, node);
          // A decommission closes the node to new users; open it again so the nodes never all close.
          await assign.updateNode(this.service, node, { backoff: 0 });
          continue;
        }
        if (action === 'event') {
          s.generation++;
          await assign.event('passwordChange', email, s.generation + 1);
          continue;
        }
      } catch {
        await recover();
        continue; // their effects are checked through the logins that follow
      }
      if (action === 'bump') s.generation++;
      if (action === 'rekey') {
        s.generation++;
        s.keysChangedAt = s.generation;
        s.clientState = `cs${++this.keyChanges}`;
      }
      const sentAt = performance.now();
      try {
        const a = await assign.user(this.service, email, { generation: s.generation, keysChangedAt: s.keysChangedAt, clientState: s.clientState });
        this.logins.push({ email, sentAt, ackedAt: performance.now(), outcome: 'ok', result: { uid: a.uid, node: a.node, generation: a.generation, clientState: a.clientState } });
      } catch (err) {
        // A refusal carries Tokenserver's reason and changed no record; anything else may or may not have been applied.
        const refused = err instanceof VeraError && err.hints.reason !== undefined;
        this.logins.push({ email, sentAt, ackedAt: performance.now(), outcome: refused ? 'refused' : 'unknown' });
        if (!refused) await recover();
      }
    }
  }

  /** Reads one email's records on a random member now and then: that member's applied state, one snapshot each. */
  private async sample(): Promise<void> {
    while (this.running) {
      await new Promise((r) => setTimeout(r, 50));
      const live = this.cluster.live;
      if (live.length === 0) continue;
      const m = this.cluster.member(this.rng.pick(live));
      const email = this.rng.pick(this.emails);
      const records = await this.recordsAt(m.httpUrl, email).catch(() => null);
      if (records !== null) this.samples.push({ member: m.id, email, current: records.filter((r) => r.replacedAt === 0).length });
    }
  }

  private async recordsAt(httpUrl: string, email: string): Promise<AssignRecord[]> {
    const res = await fetch(`${httpUrl}/v1/assign/services/${encodeURIComponent(this.service)}/users/${encodeURIComponent(email)}?consistency=stale`, { signal: AbortSignal.timeout(5000) });
    if (res.status === 404) return [];
    if (!res.ok) throw new Error(`lookup of ${email}: HTTP ${res.status}`);
    return ((await res.json()) as { records: AssignRecord[] }).records;
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  history(): AssignHistory {
    return { logins: [...this.logins], samples: [...this.samples] };
  }

  /** Every listed member's nodes and the records of every email of the pool. */
  async final(among: readonly number[]): Promise<AssignMemberState[]> {
    return Promise.all(
      among.map(async (i) => {
        const m = this.cluster.member(i);
        const res = await fetch(`${m.httpUrl}/v1/assign/services/${encodeURIComponent(this.service)}?consistency=stale`, { signal: AbortSignal.timeout(5000) });
        if (!res.ok) throw new Error(`${m.id}: nodes of ${this.service}: HTTP ${res.status}`);
        const nodes = ((await res.json()) as { nodes: AssignNode[] }).nodes.map(({ node, capacity, load, available }) => ({ node, capacity, load, available }));
        const records: AssignRecord[] = [];
        for (const email of this.emails) {
          for (const r of await this.recordsAt(m.httpUrl, email)) {
            records.push({ uid: r.uid, email: r.email, generation: r.generation, keysChangedAt: r.keysChangedAt, clientState: r.clientState, createdAt: r.createdAt, replacedAt: r.replacedAt, node: r.node });
          }
        }
        return { member: m.id, nodes, records };
      }),
    );
  }

  async close(): Promise<void> {
    this.running = false;
    await Promise.all(this.clients.map((c) => c.close().catch(() => undefined)));
  }
}
