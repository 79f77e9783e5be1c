// H1: hibernation on a 3-member Vera cluster. Loads `units` units of `perUnit`
// items (one list each, /users/uN/items), then measures with every unit hot:
// the members' hot store (the db directories) and RSS, and push latency on the
// active 10% at 16 in flight; then restarts every member and measures RSS
// again (what holding the data costs, without what loading it left behind).
// Freezes the idle 90% while the active set keeps writing: first at the idle
// detector's pace (one entry of 16 units a second), then as fast as it goes,
// timing the freezes and the active set's latency meanwhile. Measures the same
// again with the idle units frozen, then the latency of the first write to a
// frozen unit (which waits for its thaw) and of the first read of another (which
// starts its thaw and reads the cold file), one at a time. Last (issue 34), one large unit
// (`largeUnit` items in two lists) is loaded, frozen and thawed by hand while the
// active set writes, each judged against the same writes just before.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type VeraClient } from '../../src/client/index.js';
import { HibernateClient } from '../../src/families/hibernate/client.js';
import { LOOPBACK } from '../lib/net.js';
import { currentRss } from '../lib/rss.js';
import { Samples, type LatencySummary } from '../lib/samples.js';
import { VeraCluster } from '../systems/vera.js';

export interface H1Scale {
  readonly units: number;
  readonly perUnit: number;
  readonly activeMs: number;
  readonly thawSamples: number;
  /** Items of the one large unit frozen and thawed by hand at the end. */
  readonly largeUnit: number;
}
export const H1_FULL: H1Scale = { units: 10_000, perUnit: 100, activeMs: 8_000, thawSamples: 300, largeUnit: 100_000 };
export const H1_QUICK: H1Scale = { units: 1_000, perUnit: 100, activeMs: 3_000, thawSamples: 100, largeUnit: 100_000 };

/** A large unit frozen and then thawed by hand, and the active set's write latency meanwhile. */
export interface LargeUnitRun {
  readonly items: number;
  /** The active set's writes in the same time just before the freeze. */
  readonly before: LatencySummary;
  readonly freezeSeconds: number;
  readonly freezing: LatencySummary;
  readonly thawSeconds: number;
  readonly thawing: LatencySummary;
}

export interface H1Phase {
  /** The members' db directories as they are on disk. */
  readonly hotBytes: number;
  /** The same after POST /v1/defrag on each member (no space of deleted keys left). */
  readonly defraggedHotBytes: number;
  readonly coldBytes: number;
  /** Right after the active writes, in the processes that also did the loading or freezing. */
  readonly rssBytes: number;
  /** After every member restarted on its data and took a few seconds of active writes. */
  readonly restartedRssBytes: number;
  readonly activeWrites: LatencySummary;
}

/** Units frozen over a time, and the active set's write latency meanwhile. */
export interface FreezeRun {
  readonly units: number;
  readonly seconds: number;
  readonly perSec: number;
  readonly activeWrites: LatencySummary;
}

/** Freezing at the idle detector's pace, and the active set's latency just before (the baseline it is judged against). */
export interface PacedRun extends FreezeRun {
  /** Units asked for each second. */
  readonly pace: number;
  readonly before: LatencySummary;
}

/** Units frozen a second, one freeze a second: the idle detector's most (src/families/hibernate/server.ts) and less. */
const PACES = [16, 8, 4, 2] as const;
/** Flat out: entries of this many units, this many in flight. */
const FAST_BATCH = 16;
const FAST_IN_FLIGHT = 4;

export interface H1Result {
  readonly items: number;
  readonly units: number;
  readonly loadSeconds: number;
  /** The three members' RSS before anything was written: the floor no data can go below. */
  readonly emptyRssBytes: number;
  readonly hot: H1Phase;
  readonly frozen: H1Phase;
  /** As fast as it goes (16 freezes in flight). */
  readonly freeze: FreezeRun;
  /** At paces up to the idle detector's, fastest first (PACES). */
  readonly paced: readonly PacedRun[];
  /** The first write to a frozen unit: it waits for the unit's thaw. */
  readonly thaw: LatencySummary;
  /** The first read of a frozen unit: it starts the thaw and is answered from the cold file. */
  readonly firstRead: LatencySummary;
  readonly large: LargeUnitRun;
  readonly errors: readonly string[];
}

const unit = (k: number): string => `/users/u${k}`;

function bytesUnder(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) n += e.isDirectory() ? bytesUnder(join(dir, e.name)) : statSync(join(dir, e.name)).size;
  return n;
}

function dirBytes(dirs: readonly string[], sub: string): number {
  let n = 0;
  for (const d of dirs) {
    try {
      n += bytesUnder(join(d, sub));
    } catch {
      // not there (a cold store is made with its first file)
    }
  }
  return n;
}

export async function runH1(scale: H1Scale, logDir: string, log: (m: string) => void): Promise<H1Result> {
  const cluster = new VeraCluster({ logDir, inspector: false });
  const opened: VeraClient[] = [];
  const errors: string[] = [];
  try {
    await cluster.start();
    const rssNow = (): number => Object.values(currentRss(cluster.members())).reduce((a, b) => a + b, 0);
    /** Each member's count of compactions of frozen spans. */
    const compactions = async (): Promise<number[]> =>
      Promise.all(
        cluster.members().map(async (m) => {
          const text = await fetch(`http://${LOOPBACK}:${m.clientPort}/metrics`).then((r) => r.text());
          const line = text.split('\n').find((l) => l.startsWith('vera_hibernate_compactions_total '));
          return line === undefined ? 0 : Number(line.split(' ')[1]);
        }),
      );
    let pushers: VeraClient[] = [];
    const open = async (): Promise<VeraClient> => {
      const leader = await cluster.leader();
      const url = `ws://${LOOPBACK}:${cluster.members().find((m) => m.id === leader)!.clientPort}`;
      const c = await connect(url, { connectTimeoutMs: 20_000, requestTimeoutMs: 60_000 });
      c.on('failed', () => undefined);
      opened.push(c);
      return c;
    };
    const connectAll = async (): Promise<void> => {
      pushers = await Promise.all(Array.from({ length: 8 }, () => open()));
      const hib = new HibernateClient(pushers[0]!);
      for (let tries = 0; ; tries++) {
        try {
          await hib.units();
          break;
        } catch (err) {
          if (tries > 200) throw err;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    };
    await connectAll();

    const active = Math.max(1, Math.floor(scale.units / 10));
    /**
     * Pushes to the active 10% at 16 in flight until `done()`; their latencies. The items are
     * ephemeral, and the writers' sessions end after each run (their items go with them), so
     * the data measured in each phase is the data loaded, not that plus every earlier push.
     */
    const activeWrites = async (done: () => boolean, tag: string, lists = (n: number, w: number): string => `${unit((w * 7919 + n) % active)}/items`): Promise<LatencySummary> => {
      const samples = new Samples();
      await Promise.all(
        Array.from({ length: 16 }, async (_, w) => {
          for (let n = 0; !done(); n++) {
            const t = performance.now();
            await pushers[w % pushers.length]!.push(lists(n, w), { tag, n }, { persistent: false, watch: false });
            samples.add(performance.now() - t);
          }
        }),
      );
      // Ends the writers' sessions, and with them their items; every member has applied those
      // ends (each deletes thousands of items in one entry) before the next window is timed.
      for (const c of pushers) await c.close().catch(() => undefined);
      await connectAll();
      await cluster.settled();
      return samples.summary();
    };
    const forMs = (ms: number): (() => boolean) => {
      const until = performance.now() + ms;
      return () => performance.now() >= until;
    };
    // The floor: the members' RSS after the same 3 s of active writes as after each restart, with nothing stored.
    await activeWrites(forMs(3_000), 'empty', (_, w) => `/floor/w${w}`);
    const emptyRssBytes = rssNow();
    log(`empty members after 3 s of writes: RSS ${Math.round(emptyRssBytes / 2 ** 20)} MiB`);

    // Load: 256 in flight, item by item.
    const t0 = performance.now();
    let next = 0;
    const total = scale.units * scale.perUnit;
    await Promise.all(
      Array.from({ length: 256 }, async (_, w) => {
        for (let n = next++; n < total; n = next++) await pushers[w % pushers.length]!.push(`${unit(n % scale.units)}/items`, { n, pad: 'x'.repeat(64) }, { persistent: true, watch: false });
      }),
    );
    const loadSeconds = (performance.now() - t0) / 1000;
    log(`loaded ${total} items in ${scale.units} units in ${loadSeconds.toFixed(1)} s`);

    /** Every member stopped with kill -9 and started again on its data; clients reconnected to the leader. */
    const restartAll = async (): Promise<void> => {
      for (const c of pushers) await c.close().catch(() => undefined);
      for (const m of cluster.members()) await cluster.kill9(m.id);
      await Promise.all(cluster.members().map((m) => cluster.restart(m.id)));
      await cluster.waitHealthy(60_000);
      await connectAll();
    };
    const phase = async (tag: string): Promise<H1Phase> => {
      const activeW = await activeWrites(forMs(scale.activeMs), tag);
      const rssBytes = rssNow();
      const hotBytes = dirBytes(cluster.dataDirs(), 'db');
      const coldBytes = dirBytes(cluster.dataDirs(), 'cold');
      await cluster.defragAll();
      const defraggedHotBytes = dirBytes(cluster.dataDirs(), 'db');
      await restartAll();
      await activeWrites(forMs(3_000), `${tag} restarted`);
      const p: H1Phase = { hotBytes, defraggedHotBytes, coldBytes, rssBytes, restartedRssBytes: rssNow(), activeWrites: activeW };
      log(`${tag}: hot ${Math.round(p.hotBytes / 2 ** 20)} MiB (defragmented ${Math.round(p.defraggedHotBytes / 2 ** 20)} MiB), cold ${Math.round(p.coldBytes / 2 ** 20)} MiB, RSS ${Math.round(p.rssBytes / 2 ** 20)} MiB (after a restart ${Math.round(p.restartedRssBytes / 2 ** 20)} MiB), active writes p50 ${activeW.p50.toFixed(2)} ms p99 ${activeW.p99.toFixed(2)} ms`);
      return p;
    };
    const hot = await phase('all hot');

    let k = active;
    let frozenCount = 0;
    /** Freezes the next `n` units together. */
    const freezeBatch = async (h: HibernateClient, n: number): Promise<void> => {
      const batch: string[] = [];
      while (batch.length < n && k < scale.units) batch.push(unit(k++));
      if (batch.length === 0) return;
      for (const r of await h.freezeMany(batch)) {
        if (r.frozen) frozenCount++;
        else errors.push(`${r.unit} not frozen: ${r.why}`);
      }
    };
    // First at paces up to the idle detector's (one freeze of 16 units a second), each for a while,
    // each judged against the active set measured just before it (the restart left cold caches).
    const freezers = await Promise.all(Array.from({ length: FAST_IN_FLIGHT }, () => open()));
    const paceHib = new HibernateClient(freezers[0]!);
    const paced: PacedRun[] = [];
    for (const pace of PACES) {
      const before = await activeWrites(forMs(scale.activeMs), `before ${pace}/s`);
      const frozenBefore = frozenCount;
      let pacing = true;
      const pacedWrites = activeWrites(() => !pacing, `paced ${pace}/s`);
      const p0 = performance.now();
      for (let tick = 0; performance.now() < p0 + scale.activeMs && k < scale.units; tick++) {
        const due = p0 + tick * 1000;
        if (performance.now() < due) await new Promise((r) => setTimeout(r, due - performance.now()));
        await freezeBatch(paceHib, pace);
      }
      pacing = false;
      const during = await pacedWrites;
      const seconds = (performance.now() - p0) / 1000;
      const run: PacedRun = { pace, units: frozenCount - frozenBefore, seconds, perSec: (frozenCount - frozenBefore) / seconds, activeWrites: during, before };
      paced.push(run);
      log(`froze ${run.units} units at ${pace}/s; active writes p99 ${before.p99.toFixed(2)} ms just before, ${during.p99.toFixed(2)} ms meanwhile (p50 ${before.p50.toFixed(2)} -> ${during.p50.toFixed(2)} ms)`);
    }
    const pacedUnits = frozenCount;

    // Then the rest as fast as it goes while the active set writes.
    let freezing = true;
    const f0 = performance.now();
    const duringFreeze = activeWrites(() => !freezing, 'during');
    await Promise.all(
      freezers.map(async (c) => {
        const h = new HibernateClient(c);
        while (k < scale.units) await freezeBatch(h, FAST_BATCH);
      }),
    );
    const freezeSeconds = (performance.now() - f0) / 1000;
    freezing = false;
    const activeDuringFreeze = await duringFreeze;
    const fastUnits = frozenCount - pacedUnits;
    log(`froze ${fastUnits} units in ${freezeSeconds.toFixed(1)} s (${Math.round(fastUnits / freezeSeconds)}/s); active writes meanwhile p50 ${activeDuringFreeze.p50.toFixed(2)} ms p99 ${activeDuringFreeze.p99.toFixed(2)} ms`);
    for (const c of freezers) await c.close().catch(() => undefined);
    // Each member compacts the span its freezes deleted from once they have been quiet a while (one more
    // compaction after the last freeze): the hot store is measured after that one, not after any earlier.
    const compactionsBefore = await compactions();
    const c0 = performance.now();
    for (;;) {
      const now = await compactions();
      if (now.every((n, i) => n > compactionsBefore[i]!)) break;
      if (performance.now() - c0 > 120_000) {
        errors.push('the members did not compact the frozen span within 120 s');
        break;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    log(`the members compacted the frozen span ${((performance.now() - c0) / 1000).toFixed(1)} s after the last freeze`);
    const frozen = await phase('idle frozen');

    // Thaw latency, one unit at a time: the first write to a frozen unit waits for its thaw;
    // the first read of another starts its thaw and is answered from the cold file meanwhile.
    const thaw = new Samples();
    const firstRead = new Samples();
    const samples = Math.min(scale.thawSamples, Math.floor((scale.units - active) / 2));
    for (let n = 0; n < samples; n++) {
      const written = unit(active + 2 * n);
      const t = performance.now();
      await pushers[0]!.push(`${written}/items`, { thawed: n }, { persistent: true, watch: false });
      thaw.add(performance.now() - t);
      const w = await pushers[0]!.get(`${written}/items`);
      if (w.items.length !== scale.perUnit + 1) errors.push(`${written} came back with ${w.items.length} items after a push, not ${scale.perUnit + 1}`);
      const read = unit(active + 2 * n + 1);
      const r0 = performance.now();
      const r = await pushers[0]!.get(`${read}/items`);
      firstRead.add(performance.now() - r0);
      if (r.items.length !== scale.perUnit) errors.push(`${read} came back with ${r.items.length} items, not ${scale.perUnit}`);
    }
    const thawSummary = thaw.summary();
    const firstReadSummary = firstRead.summary();
    log(`first read of a frozen ${scale.perUnit}-item unit (answered from its cold file while it thaws): p50 ${firstReadSummary.p50.toFixed(2)} ms, p99 ${firstReadSummary.p99.toFixed(2)} ms`);
    log(`thaw (first write to a ${scale.perUnit}-item unit): p50 ${thawSummary.p50.toFixed(2)} ms, p99 ${thawSummary.p99.toFixed(2)} ms`);

    // One large unit, frozen and thawed by hand while the active set writes.
    const LARGE = '/large/unit';
    let nextLarge = 0;
    await Promise.all(
      Array.from({ length: 256 }, async (_, w) => {
        for (let n = nextLarge++; n < scale.largeUnit; n = nextLarge++) await pushers[w % pushers.length]!.push(n % 2 === 0 ? `${LARGE}/a` : `${LARGE}/b`, { n, pad: 'x'.repeat(64) }, { persistent: true, watch: false });
      }),
    );
    const largeHib = new HibernateClient(await open());
    /** The active set's writes while `work` runs (at least a second of them), and how long `work` took. */
    const whileDoing = async (tag: string, work: () => Promise<void>): Promise<{ seconds: number; writes: LatencySummary }> => {
      let running = true;
      const started = performance.now();
      const writes = activeWrites(() => !running && performance.now() - started >= 1000, tag);
      await work();
      const seconds = (performance.now() - started) / 1000;
      running = false;
      return { seconds, writes: await writes };
    };
    const largeBefore = await whileDoing('before the large unit', () => new Promise((r) => setTimeout(r, scale.activeMs / 2)));
    const largeFreeze = await whileDoing('large unit freezing', async () => {
      const r = await largeHib.freeze(LARGE);
      if (!r.frozen) errors.push(`${LARGE} not frozen: ${r.why}`);
    });
    const largeThaw = await whileDoing('large unit thawing', async () => {
      const r = await largeHib.thaw(LARGE);
      if (r.items !== scale.largeUnit) errors.push(`${LARGE} thawed ${r.items} items, not ${scale.largeUnit}`);
    });
    const large: LargeUnitRun = { items: scale.largeUnit, before: largeBefore.writes, freezeSeconds: largeFreeze.seconds, freezing: largeFreeze.writes, thawSeconds: largeThaw.seconds, thawing: largeThaw.writes };
    log(`a ${scale.largeUnit}-item unit: active writes p99 ${large.before.p99.toFixed(2)} ms before, ${large.freezing.p99.toFixed(2)} ms while it froze (${large.freezeSeconds.toFixed(2)} s), ${large.thawing.p99.toFixed(2)} ms while it thawed (${large.thawSeconds.toFixed(2)} s)`);
    return {
      items: total,
      units: scale.units,
      loadSeconds,
      emptyRssBytes,
      hot,
      frozen,
      freeze: { units: fastUnits, seconds: freezeSeconds, perSec: fastUnits / freezeSeconds, activeWrites: activeDuringFreeze },
      paced,
      thaw: thawSummary,
      firstRead: firstReadSummary,
      large,
      errors: errors.slice(0, 20),
    };
  } finally {
    for (const c of opened) await c.close().catch(() => undefined);
    await cluster.stop();
  }
}
