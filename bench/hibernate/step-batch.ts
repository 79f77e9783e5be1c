// What a hibernation step costs the entries applied with it (issue 34), on one state
// machine over a real LevelDB, alone in this process: runs of committed entries as a
// Ready hands them over (8 client pushes, a dropHot or thawStep of 250 items, 8 more
// pushes), each run timed from the first entry to the last one's batch written. Two
// units of the same size are drained (then thawed) step by step in turn, one with the
// steps going alone (each in a LevelDB batch of its own, what the entries before it are
// written ahead of) and one with the steps sharing the run's batch, so the machine's
// load falls on both alike.
//   tsx bench/hibernate/step-batch.ts [--items N]
import { parseArgs } from 'node:util';
import { encodeCommand } from '../../src/families/commands.js';
import type { Command } from '../../src/families/core-commands.js';
import { hibernate } from '../../src/families/hibernate/index.js';
import { REGISTRY } from '../../src/families/registry.js';
import { StateMachine } from '../../src/statemachine/state-machine.js';
import { openTempDb } from '../../test/statemachine/helpers.js';

const { values: args } = parseArgs({ options: { items: { type: 'string', default: '50000' } } });
const ITEMS = Number(args.items);
const STEP = 250;
const CLIENTS = 8;

const temp = await openTempDb();
const sm = await StateMachine.open(temp.db, REGISTRY);
let index = 0;
const entry = (c: Record<string, unknown>) => ({ index: ++index, term: 1, kind: 'command' as const, data: encodeCommand(c as unknown as Command, 1_000_000) });
const apply = async (cs: Array<Record<string, unknown>>) => sm.applyMany(cs.map(entry));
const value = async (c: Record<string, unknown>): Promise<Record<string, unknown>> => {
  const [o] = await apply([c]);
  if (!o!.result.ok || o!.result.op !== 'family') throw new Error(`${String(c.op)}: ${JSON.stringify(o!.result)}`);
  return o!.result.value as Record<string, unknown>;
};
await apply([{ op: 'openSession', session: 's1', timeoutMs: 600_000, remote: 'bench' }]);
const push = (path: string, data: unknown): Record<string, unknown> => ({ op: 'push', session: 's1', path, data, persistent: true, watch: false });
const units = ['/big/alone', '/big/shared'];
for (const unit of units) for (let n = 0; n < ITEMS; n += 500) await apply(Array.from({ length: 500 }, (_, k) => push(k % 2 ? `${unit}/a` : unit, { n: n + k, pad: 'x'.repeat(64) })));
const seen = new Map<string, number>();
for (const unit of units) {
  const [o] = await apply([push(unit, 'last')]);
  seen.set(unit, (o!.result as { item: { index: number } }).item.index);
}
await value({ family: 'hibernate', op: 'freezeUnits', units: units.map((unit) => ({ unit, seen: seen.get(unit)! })) });
const frozenAt = index;
await Promise.all([...sm.stateOf(hibernate).writing.values()].map((w) => w.done));
await value({ family: 'hibernate', op: 'commitFreeze', units, step: STEP });

const realGoesAlone = hibernate.goesAlone;
const times: Record<string, Record<string, number[]>> = { dropHot: { alone: [], shared: [] }, thawStep: { alone: [], shared: [] } };
let k = 0;
/** One run: pushes, the step, pushes; the step alone or sharing the batch. */
const run = async (mode: 'alone' | 'shared', step: Record<string, unknown>): Promise<Record<string, unknown>> => {
  (hibernate as { goesAlone: typeof realGoesAlone }).goesAlone = mode === 'alone' ? () => true : realGoesAlone;
  const cs = [...Array.from({ length: CLIENTS }, () => push(`/active/u${k++ % 100}`, { k })), step, ...Array.from({ length: CLIENTS }, () => push(`/active/u${k++ % 100}`, { k }))];
  const t = performance.now();
  const out = await apply(cs);
  times[String(step.op)]![mode]!.push(performance.now() - t);
  const r = out[CLIENTS]!.result;
  if (!r.ok || r.op !== 'family') throw new Error(JSON.stringify(r));
  return r.value as Record<string, unknown>;
};
const modeOf = (unit: string): 'alone' | 'shared' => (unit === '/big/alone' ? 'alone' : 'shared');
for (let done = 0; done < units.length; ) {
  done = 0;
  for (const unit of units) {
    if (!sm.stateOf(hibernate).draining.has(unit)) {
      done++;
      continue;
    }
    await run(modeOf(unit), { family: 'hibernate', op: 'dropHot', unit, frozenAt, step: STEP });
  }
}
for (const unit of units) {
  await value({ family: 'hibernate', op: 'thawBegin', unit, frozenAt });
  await sm.stateOf(hibernate).thawRead(unit, frozenAt);
}
const from = new Map(units.map((u) => [u, 0]));
for (let left = units.length; left > 0; ) {
  left = 0;
  for (const unit of units) {
    const at = from.get(unit)!;
    if (at < 0) continue;
    left++;
    const v = await run(modeOf(unit), { family: 'hibernate', op: 'thawStep', unit, frozenAt, from: at, step: STEP });
    from.set(unit, v.done === true ? -1 : (v.next as number));
  }
}
(hibernate as { goesAlone: typeof realGoesAlone }).goesAlone = realGoesAlone;
const q = (a: number[], p: number): number => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(p * a.length))]!;
for (const [op, modes] of Object.entries(times)) {
  console.log(`${op}: ${Object.entries(modes).map(([mode, ms]) => `${mode} n ${ms.length} p50 ${q(ms, 0.5).toFixed(2)} p90 ${q(ms, 0.9).toFixed(2)} p99 ${q(ms, 0.99).toFixed(2)} ms`).join(' | ')}`);
}
await temp.cleanup();
