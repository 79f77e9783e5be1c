// Hibernation through the faults: a client that keeps freezing the workload's
// lists (each list path is a unit of its own), one at a time in one entry or
// two at a time in two entries, while the workload's pushes and reads keep
// thawing them. Freezing and thawing change nothing a client sees, so the
// trial's existing checkers judge the lists' history exactly as if nothing had
// slept: a lost, duplicated or reordered item anywhere in freeze, thaw, their
// crash recovery or a leader change between a freeze's two entries fails them.
import { connect, type VeraClient } from '../../src/client/index.js';
import { HibernateClient } from '../../src/families/hibernate/client.js';
import type { Rng } from './workload.js';

export interface HibernationStats {
  readonly attempts: number;
  readonly frozen: number;
  /** Requests that failed (a leader change, an unreachable member): the freeze may or may not have happened. */
  readonly failed: number;
}

export class Hibernator {
  private running = true;
  private loop: Promise<void> = Promise.resolve();
  private attempts = 0;
  private frozen = 0;
  private failed = 0;

  private constructor(
    private readonly client: VeraClient,
    private readonly paths: readonly string[],
    private readonly rng: Rng,
  ) {}

  static async start(urls: readonly string[], paths: readonly string[], rng: Rng): Promise<Hibernator> {
    const client = await connect([...urls], { timeoutMs: 10_000, requestTimeoutMs: 10_000 });
    client.on('failed', () => undefined);
    const h = new Hibernator(client, paths, rng);
    h.loop = h.run();
    return h;
  }

  private async run(): Promise<void> {
    const hib = new HibernateClient(this.client);
    while (this.running) {
      await new Promise((r) => setTimeout(r, this.rng.int(50, 250)));
      if (!this.running) break;
      this.attempts++;
      const first = this.paths[this.rng.int(0, this.paths.length - 1)]!;
      try {
        if (this.rng.next() < 0.5 || this.paths.length < 2) {
          if ((await hib.freeze(first)).frozen) this.frozen++;
        } else {
          const second = this.paths.find((p) => p !== first)!;
          for (const r of await hib.freezeMany([first, second])) if (r.frozen) this.frozen++;
        }
      } catch {
        this.failed++;
      }
    }
  }

  async stop(): Promise<HibernationStats> {
    this.running = false;
    await this.loop;
    await this.client.close().catch(() => undefined);
    return { attempts: this.attempts, frozen: this.frozen, failed: this.failed };
  }
}
