// S3 watch fan-out: N watchers (each its own client) watch one list; one
// writer appends to it, one write per round. The writer runs in its own
// process, so its acknowledgement is timed without waiting behind the
// watchers' work. A round ends when every watcher has been notified (or
// after a timeout, which counts the missing ones as lost), so each latency is
// one write's delivery, not a queue behind others. Latency is measured from
// the moment the writer's append was acknowledged (negative when a
// notification beat the acknowledgement) and, as a check, from the moment it
// was sent.
import { fork, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { Samples, type LatencySummary } from '../lib/samples.js';
import type { BenchClient, ClientRecipe, WatchHandle } from '../systems/system.js';
import type { FromWriter, ToWriter } from './s3-writer-protocol.js';
import { closeAll, connectMany, type ScenarioContext } from './context.js';

export interface FanoutRun {
  readonly watchers: number;
  readonly rounds: number;
  readonly expected: number;
  readonly received: number;
  readonly lost: number;
  /** Notifications for a write that had already been counted (should be 0). */
  readonly duplicates: number;
  readonly ackToNotifyMs: LatencySummary;
  readonly sendToNotifyMs: LatencySummary;
  readonly ackToNotify: Samples;
}

export async function runS3(ctx: ScenarioContext): Promise<FanoutRun[]> {
  const out: FanoutRun[] = [];
  const { watchers, rounds, roundTimeoutMs } = ctx.scale.s3;
  for (let i = 0; i < watchers.length; i++) {
    const run = await runFanout(ctx, watchers[i]!, rounds[i] ?? rounds[rounds.length - 1] ?? 10, roundTimeoutMs);
    ctx.log(`S3 ${run.watchers} watchers: ack->notify p50 ${run.ackToNotifyMs.p50.toFixed(2)} ms, p99 ${run.ackToNotifyMs.p99.toFixed(2)} ms; ${run.received}/${run.expected} notifications, ${run.lost} lost`);
    out.push(run);
  }
  return out;
}

async function runFanout(ctx: ScenarioContext, watcherCount: number, rounds: number, roundTimeoutMs: number): Promise<FanoutRun> {
  const list = `s3/w${watcherCount}`;
  const writer = await WriterProcess.start(ctx.cluster.recipe(), list);
  let watchers: BenchClient[] = [];
  const arrivals = new Float64Array(watcherCount);
  let currentTag = '';
  let pending = 0;
  let duplicates = 0;
  let roundDone: (() => void) | null = null;
  try {
    watchers = await connectMany(ctx.cluster, watcherCount);
    const handles: WatchHandle[] = [];
    for (let i = 0; i < watchers.length; i += 50) {
      const batch = watchers.slice(i, i + 50).map((w, j) =>
        w.watch(list, (change) => {
          if (change.kind !== 'append' || currentTag === '') return;
          // A system that carries the value lets us reject stray notifications outright.
          if (change.value !== null && !change.value.startsWith(currentTag)) return;
          const k = i + j;
          if (!Number.isNaN(arrivals[k]!)) {
            duplicates++;
            return;
          }
          arrivals[k] = toEpoch(change.at);
          if (--pending === 0) roundDone?.();
        }),
      );
      handles.push(...(await Promise.all(batch)));
    }
    const ackToNotify = new Samples();
    const sendToNotify = new Samples();
    let received = 0;
    for (let round = 0; round < rounds; round++) {
      await Promise.all(handles.map((h) => h.armed()));
      arrivals.fill(Number.NaN);
      pending = watcherCount;
      currentTag = `s3:${watcherCount}:${round}:`;
      const allArrived = new Promise<void>((resolve) => (roundDone = resolve));
      const { sentAt, ackedAt } = await writer.write(currentTag);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([allArrived, new Promise<void>((resolve) => (timer = setTimeout(resolve, roundTimeoutMs)))]);
      clearTimeout(timer);
      for (let k = 0; k < watcherCount; k++) {
        const at = arrivals[k]!;
        if (Number.isNaN(at)) continue;
        received++;
        ackToNotify.add(at - ackedAt);
        sendToNotify.add(at - sentAt);
      }
      currentTag = '';
    }
    const expected = rounds * watcherCount;
    return {
      watchers: watcherCount,
      rounds,
      expected,
      received,
      lost: expected - received,
      duplicates,
      ackToNotifyMs: ackToNotify.summary(),
      sendToNotifyMs: sendToNotify.summary(),
      ackToNotify,
    };
  } finally {
    await writer.close();
    await closeAll(watchers);
  }
}

/** performance.now() of this process as epoch milliseconds (comparable with the writer's clock). */
function toEpoch(now: number): number {
  return performance.timeOrigin + now;
}

const WRITER_MAIN = resolve(import.meta.dirname, 's3-writer-main.ts');

/** The writer in its own Node process (run through tsx, like the suite). */
class WriterProcess {
  private waiting: ((message: FromWriter) => void) | null = null;
  private exitedWith: string | null = null;

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (message: FromWriter) => {
      const waiter = this.waiting;
      this.waiting = null;
      waiter?.(message);
    });
    child.on('exit', (code, signal) => {
      this.exitedWith = `the writer process exited (code ${code}, signal ${signal})`;
      const waiter = this.waiting;
      this.waiting = null;
      waiter?.({ type: 'failed', message: this.exitedWith });
    });
  }

  static async start(recipe: ClientRecipe, list: string): Promise<WriterProcess> {
    const child = fork(WRITER_MAIN, [], { execArgv: ['--import', import.meta.resolve('tsx')], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const writer = new WriterProcess(child);
    const ready = await writer.request({ type: 'init', recipe, list }, 30_000);
    if (ready.type !== 'ready') {
      child.kill('SIGKILL');
      throw new Error(`the writer process did not connect: ${ready.type === 'failed' ? ready.message : ready.type}`);
    }
    return writer;
  }

  private request(message: ToWriter, timeoutMs: number): Promise<FromWriter> {
    if (this.exitedWith !== null) return Promise.resolve({ type: 'failed', message: this.exitedWith });
    return new Promise<FromWriter>((resolvePromise) => {
      const timer = setTimeout(() => {
        this.waiting = null;
        resolvePromise({ type: 'failed', message: `the writer process did not answer '${message.type}' within ${timeoutMs} ms` });
      }, timeoutMs);
      this.waiting = (reply) => {
        clearTimeout(timer);
        resolvePromise(reply);
      };
      this.child.send(message);
    });
  }

  async write(tag: string): Promise<{ sentAt: number; ackedAt: number }> {
    const reply = await this.request({ type: 'write', tag }, 35_000);
    if (reply.type !== 'written') throw new Error(`the writer failed: ${reply.type === 'failed' ? reply.message : reply.type}`);
    return reply;
  }

  async close(): Promise<void> {
    if (this.exitedWith === null) await this.request({ type: 'close' }, 10_000);
    if (this.exitedWith === null) this.child.kill('SIGKILL');
  }
}
