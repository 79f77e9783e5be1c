// A real cluster of `vera start` processes on 127.0.0.1 for the failover tests:
// ports picked with freePort(), one shared secret, temporary data directories.
// Who leads is read from GET /v1/status, polled: the cluster offers no push
// notification of it, and every poll is bounded.

import { randomBytes } from 'node:crypto';
import { freePort, VeraProcess } from '../support/vera-process.js';
import { pollUntil } from '../support/poll.js';
import type { StatusBody } from '../../src/server/http/http-api.js';

export interface Member {
  readonly id: string;
  readonly clientPort: number;
  readonly peerPort: number;
  readonly process: VeraProcess;
  readonly url: string;
}

export async function fetchStatus(clientPort: number): Promise<StatusBody> {
  const response = await fetch(`http://127.0.0.1:${clientPort}/v1/status`, { signal: AbortSignal.timeout(2000) });
  if (!response.ok) throw new Error(`/v1/status on port ${clientPort} answered ${response.status}`);
  return (await response.json()) as StatusBody;
}

export class Cluster {
  private constructor(readonly members: readonly Member[]) {}

  /** Starts `size` members with the same --peers list and waits until each one serves. */
  static async start(size: number, extraArgs: readonly string[] = []): Promise<Cluster> {
    const ports = await distinctFreePorts(size * 2);
    const specs = Array.from({ length: size }, (_, i) => ({ id: `n${i + 1}`, clientPort: ports[2 * i]!, peerPort: ports[2 * i + 1]! }));
    const peers = specs.map((s) => `${s.id}=127.0.0.1:${s.peerPort}/${s.clientPort}`).join(',');
    const secret = randomBytes(16).toString('hex');
    const processes = await Promise.all(
      specs.map((s) => VeraProcess.start({ id: s.id, clientPort: s.clientPort, peerPort: s.peerPort, peers, secret, args: extraArgs })),
    );
    return new Cluster(specs.map((s, i) => ({ ...s, process: processes[i]!, url: `ws://127.0.0.1:${s.clientPort}` })));
  }

  get urls(): string[] {
    return this.members.map((m) => m.url);
  }

  /** Members whose process has not exited. */
  get running(): Member[] {
    return this.members.filter((m) => m.process.proc.exitCode === null && m.process.proc.signalCode === null);
  }

  /** The leader every running member agrees on (optionally, one other than `not`). */
  async leader(options: { not?: string; timeoutMs?: number } = {}): Promise<Member> {
    return pollUntil(
      options.not === undefined ? 'a leader' : `a leader other than ${options.not}`,
      async () => {
        const statuses = await Promise.all(this.running.map((m) => fetchStatus(m.clientPort)));
        const leaderId = statuses[0]?.leader ?? null;
        if (leaderId === null || leaderId === options.not) return undefined;
        if (!statuses.every((s) => s.leader === leaderId)) return undefined;
        const leading = statuses.find((s) => s.id === leaderId);
        if (leading?.role !== 'leader') return undefined;
        return this.members.find((m) => m.id === leaderId);
      },
      options.timeoutMs,
    );
  }

  /** SIGTERMs every running member; resolves with their exit codes. */
  async stop(): Promise<Array<number | null>> {
    return Promise.all(this.running.map((m) => m.process.stop()));
  }

  removeData(): void {
    for (const m of this.members) m.process.removeData();
  }
}

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}
