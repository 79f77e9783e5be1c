// Helpers for the snapshot tests that run real `vera start` processes: a cluster
// whose members can be killed and restarted on the same ports and data
// directories, bounded polling of HTTP state, and bulk writes.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { VeraClient } from '../../src/client/index.js';
import { freePort, VeraProcess } from '../support/vera-process.js';
import { pollUntil } from '../support/poll.js';
import type { StatusBody } from '../../src/server/http/http-api.js';

export interface MemberSpec {
  readonly id: string;
  readonly clientPort: number;
  readonly peerPort: number;
  readonly dataDir: string;
}


export interface ListBody {
  readonly index: number;
  readonly items: ReadonlyArray<{ index: number; data: unknown; owner: string | null }>;
}

export async function getJson<T>(port: number, path: string): Promise<T> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5000) });
  if (!response.ok) throw new Error(`GET ${path} on ${port} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
}

export const statusOf = (port: number): Promise<StatusBody> => getJson<StatusBody>(port, '/v1/status');
export const listOf = (port: number, path: string): Promise<ListBody> => getJson<ListBody>(port, `/v1/data${path}`);

/** A cluster on fixed ports, so a member can be restarted where the others expect it. */
export class TestCluster {
  readonly processes = new Map<string, VeraProcess>();
  private readonly peers: string;
  readonly secret = randomBytes(16).toString('hex');

  private constructor(
    readonly specs: readonly MemberSpec[],
    private readonly args: readonly string[],
  ) {
    this.peers = specs.map((s) => `${s.id}=127.0.0.1:${s.peerPort}/${s.clientPort}`).join(',');
  }

  static async start(size: number, args: readonly string[]): Promise<TestCluster> {
    const ports = new Set<number>();
    while (ports.size < size * 2) ports.add(await freePort());
    const list = [...ports];
    const specs = Array.from({ length: size }, (_, i) => ({
      id: `n${i + 1}`,
      clientPort: list[2 * i]!,
      peerPort: list[2 * i + 1]!,
      dataDir: mkdtempSync(join(tmpdir(), `vera-snap-n${i + 1}-`)),
    }));
    const cluster = new TestCluster(specs, args);
    try {
      await Promise.all(specs.map((s) => cluster.startMember(s.id)));
    } catch (error) {
      await cluster.stopAll();
      cluster.removeData();
      throw error;
    }
    return cluster;
  }

  spec(id: string): MemberSpec {
    const spec = this.specs.find((s) => s.id === id);
    if (spec === undefined) throw new Error(`no member ${id}`);
    return spec;
  }

  process(id: string): VeraProcess {
    const p = this.processes.get(id);
    if (p === undefined) throw new Error(`member ${id} is not running`);
    return p;
  }

  /** Starts (or restarts) a member on its ports and data directory. */
  async startMember(id: string): Promise<VeraProcess> {
    const s = this.spec(id);
    const p = await VeraProcess.start({ id, dataDir: s.dataDir, clientPort: s.clientPort, peerPort: s.peerPort, peers: this.peers, secret: this.secret, args: this.args });
    this.processes.set(id, p);
    return p;
  }

  async kill9(id: string): Promise<void> {
    await this.process(id).kill9();
    this.processes.delete(id);
  }

  get urls(): string[] {
    return this.specs.map((s) => `ws://127.0.0.1:${s.clientPort}`);
  }

  /** The leader every running member agrees on. */
  async leader(): Promise<MemberSpec> {
    return pollUntil('a leader all running members agree on', async () => {
      const statuses = await Promise.all([...this.processes.keys()].map((id) => statusOf(this.spec(id).clientPort)));
      const leader = statuses[0]?.leader ?? null;
      if (leader === null || !statuses.every((s) => s.leader === leader)) return undefined;
      return statuses.find((s) => s.id === leader)?.role === 'leader' ? this.spec(leader) : undefined;
    });
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.processes.values()].map((p) => p.kill9()));
    this.processes.clear();
  }

  removeData(): void {
    for (const s of this.specs) rmSync(s.dataDir, { recursive: true, force: true });
  }
}

/** Pushes `count` persistent items spread over `lists` paths, `concurrency` at a time; returns the items' indexes. */
export async function pushMany(client: VeraClient, count: number, options: { prefix: string; lists: number; concurrency: number; dataBytes?: number; from?: number }): Promise<number[]> {
  const indexes: number[] = [];
  const filler = 'x'.repeat(options.dataBytes ?? 0);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const n = (options.from ?? 0) + next++;
      const item = await client.push(`${options.prefix}/${n % options.lists}`, { n, filler }, { persistent: true, watch: false });
      indexes.push(item.index);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return indexes;
}
