// Real `vera` processes for the membership tests: members on fixed loopback ports
// (others must know a member's ports before it starts), one shared secret, the
// `vera member` CLI run in-process, and bounded waits on observable conditions
// (a log line, or what GET /v1/members and /v1/status report).

import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { connect } from '../../src/client/client.js';
import { main } from '../../src/cli/main.js';
import { captureIO } from '../client/cli-io.js';
import { freePort, VeraProcess, type LogLine } from '../support/vera-process.js';
import { pollUntil } from '../support/poll.js';
import type { StatusBody } from '../../src/server/http/http-api.js';

export interface Spec {
  readonly id: string;
  readonly clientPort: number;
  readonly peerPort: number;
}

export interface MemberView {
  readonly id: string;
  readonly role: 'voter' | 'learner';
  readonly match?: number;
  readonly lag?: number;
}

export class Members {
  readonly secret = randomBytes(12).toString('hex');
  readonly specs = new Map<string, Spec>();
  readonly procs = new Map<string, VeraProcess>();
  private readonly dataDirs = new Map<string, string>();
  private readonly startArgs = new Map<string, { peers?: string; args: string[] }>();

  /** Reserves distinct loopback ports for each id. */
  static async plan(ids: readonly string[]): Promise<Members> {
    const m = new Members();
    const ports = new Set<number>();
    while (ports.size < ids.length * 2) ports.add(await freePort());
    const list = [...ports];
    ids.forEach((id, i) => m.specs.set(id, { id, clientPort: list[2 * i]!, peerPort: list[2 * i + 1]! }));
    return m;
  }

  spec(id: string): Spec {
    const s = this.specs.get(id);
    if (s === undefined) throw new Error(`no member ${id} planned`);
    return s;
  }

  /** `ID=127.0.0.1:PEER/CLIENT,...` for these ids. */
  peersFlag(ids: readonly string[]): string {
    return ids.map((id) => `${id}=127.0.0.1:${this.spec(id).peerPort}/${this.spec(id).clientPort}`).join(',');
  }

  url(id: string): string {
    return `ws://127.0.0.1:${this.spec(id).clientPort}`;
  }

  proc(id: string): VeraProcess {
    const p = this.procs.get(id);
    if (p === undefined) throw new Error(`${id} is not running`);
    return p;
  }

  /** Starts `id`; `peers` as for --peers; `args` extra flags (e.g. --join). Reuses its data directory across restarts. */
  async start(id: string, options: { peers?: string; args?: readonly string[]; startTimeoutMs?: number } = {}): Promise<VeraProcess> {
    const spec = this.spec(id);
    const args = [...(options.args ?? [])];
    this.startArgs.set(id, { ...(options.peers === undefined ? {} : { peers: options.peers }), args });
    const dataDir = this.dataDirs.get(id);
    const proc = await VeraProcess.start({
      id,
      clientPort: spec.clientPort,
      peerPort: spec.peerPort,
      secret: this.secret,
      args,
      ...(options.peers === undefined ? {} : { peers: options.peers }),
      ...(dataDir === undefined ? {} : { dataDir }),
      ...(options.startTimeoutMs === undefined ? {} : { startTimeoutMs: options.startTimeoutMs }),
    });
    this.dataDirs.set(id, proc.dataDir);
    this.procs.set(id, proc);
    return proc;
  }

  /** Makes `id` start from an existing data directory (e.g. one `vera snapshot restore` created); removed by cleanup(). */
  useDataDir(id: string, dataDir: string): void {
    this.dataDirs.set(id, dataDir);
  }

  /** Starts `id` again with the command line it was last started with. */
  restart(id: string): Promise<VeraProcess> {
    const last = this.startArgs.get(id);
    if (last === undefined) throw new Error(`${id} was never started`);
    return this.start(id, last);
  }

  async kill(id: string): Promise<void> {
    await this.proc(id).kill9();
    this.procs.delete(id);
  }

  /** kill -9 and delete its data directory (the next start creates a new store at the same path). */
  async wipe(id: string): Promise<void> {
    const proc = this.proc(id);
    await this.kill(id);
    proc.removeData();
  }

  /** Every member that was started, running or not: stop them and delete their data. */
  async cleanup(): Promise<void> {
    await Promise.all([...this.procs.values()].map((p) => p.kill9()));
    this.procs.clear();
    for (const dir of this.dataDirs.values()) rmSync(dir, { recursive: true, force: true });
  }

  /** Runs `vera <argv> --secret S` in-process; returns its exit code and output. */
  async cli(argv: readonly string[]): Promise<{ code: number; out: string; err: string }> {
    const io = captureIO({ env: {} });
    const code = await main([...argv, '--secret', this.secret], io);
    return { code, out: io.out(), err: io.err() };
  }

  async admin(id: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`http://127.0.0.1:${this.spec(id).clientPort}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.secret}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(5000),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  async status(id: string): Promise<StatusBody> {
    const res = await fetch(`http://127.0.0.1:${this.spec(id).clientPort}/v1/status`, { signal: AbortSignal.timeout(2000) });
    return (await res.json()) as StatusBody;
  }

  /** The leader every one of `among` agrees on (and that says it leads). */
  leader(among: readonly string[], options: { not?: string; timeoutMs?: number } = {}): Promise<string> {
    return pollUntil(
      `a leader among ${among.join(', ')}${options.not === undefined ? '' : ` other than ${options.not}`}`,
      async () => {
        const statuses = await Promise.all(among.map((id) => this.status(id)));
        const leader = statuses[0]?.leader ?? null;
        if (leader === null || leader === options.not || !statuses.every((s) => s.leader === leader)) return undefined;
        return statuses.find((s) => s.id === leader)?.role === 'leader' ? leader : undefined;
      },
      options.timeoutMs,
    );
  }

  /** Waits until the leader (asked through `via`) sees `id` holding its whole log. */
  /** Waits until `id` has matched the leader's whole log (as the leader `via` knows reports it). */
  async caughtUp(via: string, id: string): Promise<MemberView> {
    let last: MemberView | undefined;
    try {
      return await pollUntil(`${id} to catch up`, async () => {
        // Replication progress lives on the leader: ask the one `via` knows, should leadership have moved.
        const st = await this.status(via);
        const at = st.role === 'leader' || st.leader === null ? via : st.leader;
        const r = await this.admin(at, 'GET', '/v1/members');
        last = (r.body.members as MemberView[] | undefined)?.find((x) => x.id === id);
        return last !== undefined && (last.match ?? 0) > 0 && last.lag === 0 ? last : undefined;
      });
    } catch (error) {
      // Say where it stood and what it and the leader last logged: a rare stall must be diagnosable from CI output.
      const tail = (who: string): string => (this.procs.get(who)?.logs.slice(-15) ?? []).map((l) => `  ${who}: ${JSON.stringify(l)}`).join('\n');
      throw new Error(`${(error as Error).message}; last seen ${JSON.stringify(last ?? null)} from ${via}\n${tail(id)}\n${tail(via)}`, { cause: error });
    }
  }

  /** Pushes a persistent item through any of `via` (the client follows redirects to the leader). */
  async push(via: readonly string[], path: string, data: unknown, requestTimeoutMs = 10_000): Promise<number> {
    const [index] = await this.pushAll(via, path, [data], requestTimeoutMs);
    return index!;
  }

  /** Pushes persistent items one after another over one session; their indexes in order. */
  async pushAll(via: readonly string[], path: string, items: readonly unknown[], requestTimeoutMs = 10_000): Promise<number[]> {
    const client = await connect(via.map((id) => this.url(id)), { connectTimeoutMs: requestTimeoutMs, requestTimeoutMs });
    try {
      const indexes: number[] = [];
      for (const data of items) indexes.push((await client.push(path, data, { persistent: true, watch: false })).index);
      return indexes;
    } finally {
      await client.close();
    }
  }

  /** The data of the items `id` holds at `path`, read locally (stale) over HTTP. */
  async localItems(id: string, path: string): Promise<unknown[]> {
    const res = await fetch(`http://127.0.0.1:${this.spec(id).clientPort}/v1/data${path}?consistency=stale`, { signal: AbortSignal.timeout(2000) });
    const body = (await res.json()) as { items?: Array<{ data: unknown }> };
    return (body.items ?? []).map((i) => i.data);
  }

  /** Waits until `id` holds exactly `expected` at `path`. */
  holds(id: string, path: string, expected: readonly unknown[]): Promise<unknown[]> {
    return pollUntil(`${id} to hold ${JSON.stringify(expected)} at ${path}`, async () => {
      const items = await this.localItems(id, path);
      return JSON.stringify(items) === JSON.stringify(expected) ? items : undefined;
    });
  }

  waitForLog(id: string, match: (l: LogLine) => boolean, timeoutMs = 20_000): Promise<LogLine> {
    return this.proc(id).waitForLog(match, timeoutMs);
  }
}
