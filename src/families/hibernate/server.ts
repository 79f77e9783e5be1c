// Hibernation on the server: freezing and thawing a unit by hand, listing the
// Frozen units, and the thaw that any operation on a path in a Frozen unit
// waits for first (one thaw entry per unit however many requests arrive; they
// all wait for it, then run in the order they came). Metrics: units and bytes
// frozen, freezes and thaws, thaw time.
import { VeraError, type FamilyResult } from '../../protocol/index.js';
import type { FrontEnd } from '../../server/context.js';
import { expectOk, notLeaderError } from '../../server/context.js';
import { proposeTimed, type FamilyOp, type FamilyOpCall, type ServerPart } from '../../server/family-part.js';
import type { ApplyOutcome } from '../../statemachine/types.js';
import { hibernate, type HibernateCommand, type HibernateValue } from './index.js';
import { unitItemRanges } from './keys.js';
import { HIBERNATE_OPS } from './wire.js';

async function propose(fe: FrontEnd, command: HibernateCommand): Promise<HibernateValue> {
  const r = expectOk(await proposeTimed(fe, { family: 'hibernate', ...command } as never));
  if (r.op !== 'family' || r.family !== 'hibernate') throw new VeraError('INTERNAL', `hibernate ${command.op} applied as ${r.op}`);
  return r.value as HibernateValue;
}

/** Thaws in flight, per member (front end) and unit. */
const thawing = new WeakMap<FrontEnd, Map<string, Promise<void>>>();

interface Counters {
  freezes: number;
  thaws: number;
  thawMs: number[];
}
const countersOf = new WeakMap<FrontEnd, Counters>();
function counters(fe: FrontEnd): Counters {
  let c = countersOf.get(fe);
  if (c === undefined) countersOf.set(fe, (c = { freezes: 0, thaws: 0, thawMs: [] }));
  return c;
}

/**
 * Waits until `path` is not in a Frozen unit, thawing its unit if it is; true when it
 * had to. One thaw per unit at a time: later callers wait for the one in flight.
 */
export async function thawFor(fe: FrontEnd, path: string): Promise<boolean> {
  const unit = fe.node.stateMachine.stateOf(hibernate).unitOf(path);
  if (unit === null) return false;
  // Only the leader proposes the thaw; a follower would serve the unit as empty, so it sends the reader there.
  if (!fe.isLeader()) throw notLeaderError(fe);
  let flights = thawing.get(fe);
  if (flights === undefined) thawing.set(fe, (flights = new Map()));
  let flight = flights.get(unit);
  if (flight === undefined) {
    const started = performance.now();
    flight = propose(fe, { op: 'thaw', unit })
      .then(() => {
        const c = counters(fe);
        c.thawMs.push(performance.now() - started);
        if (c.thawMs.length > 1000) c.thawMs.shift();
      })
      .finally(() => flights!.delete(unit));
    flights.set(unit, flight);
  }
  await flight;
  return true;
}

/** The newest item index among the unit's lists, read from the db (what a freeze is judged against). */
async function newestIn(fe: FrontEnd, unit: string): Promise<number> {
  return fe.node.stateMachine.read('hibernation newest', async (db, snapshot) => {
    let newest = 0;
    for (const range of unitItemRanges(unit)) {
      for await (const [key] of db.iterator({ ...range, snapshot, values: false })) newest = Math.max(newest, key.readUInt32BE(key.length - 8) * 2 ** 32 + key.readUInt32BE(key.length - 4));
    }
    return newest;
  });
}

type Handler = (call: FamilyOpCall) => Promise<FamilyResult>;

const handlers: Record<string, Handler> = {
  'hibernate.freeze': async ({ fe, request: r }) => {
    const unit = r.path as string;
    await fe.node.linearizableBarrier(fe.readTimeoutMs);
    const v = await propose(fe, { op: 'freeze', unit, seen: await newestIn(fe, unit) });
    if (v.op !== 'freeze') throw new VeraError('INTERNAL', 'a freeze gave another result');
    return v.frozen ? { unit, frozen: true, items: v.items, bytes: v.bytes } : { unit, frozen: false, why: v.why };
  },
  'hibernate.thaw': async ({ fe, request: r }) => {
    const unit = r.path as string;
    const v = await propose(fe, { op: 'thaw', unit });
    if (v.op !== 'thaw') throw new VeraError('INTERNAL', 'a thaw gave another result');
    return { unit, thawed: v.thawed, items: v.items };
  },
  'hibernate.units': async ({ fe }) => {
    await fe.node.linearizableBarrier(fe.readTimeoutMs);
    const frozen = [...fe.node.stateMachine.stateOf(hibernate).frozen].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return {
      units: frozen.map(([unit, f]) => ({ unit, state: 'frozen', frozenAt: f.frozenAt, bytes: f.bytes, items: f.lists.reduce((n, l) => n + l.items, 0), lists: f.lists.map((l) => ({ ...l })) })),
    };
  },
};

function onApplied(outcome: ApplyOutcome, fe: FrontEnd): void {
  const r = outcome.result;
  if (!r.ok || r.op !== 'family' || r.family !== 'hibernate') return;
  const v = r.value as HibernateValue;
  if (v.op === 'freeze' && v.frozen) counters(fe).freezes++;
  if (v.op === 'thaw' && v.thawed) counters(fe).thaws++;
}

async function metrics(fe: FrontEnd): Promise<string> {
  const state = fe.node.stateMachine.stateOf(hibernate);
  const c = counters(fe);
  let bytes = 0;
  for (const f of state.frozen.values()) bytes += f.bytes;
  const sorted = [...c.thawMs].sort((a, b) => a - b);
  const q = (p: number): number => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!);
  return [
    '# HELP vera_hibernate_units_frozen Units in the cold store.',
    '# TYPE vera_hibernate_units_frozen gauge',
    `vera_hibernate_units_frozen ${state.frozen.size}`,
    '# HELP vera_hibernate_cold_bytes Bytes of the Frozen units\' cold files.',
    '# TYPE vera_hibernate_cold_bytes gauge',
    `vera_hibernate_cold_bytes ${bytes}`,
    '# HELP vera_hibernate_freezes_total Units frozen, applied on this member since it started.',
    '# TYPE vera_hibernate_freezes_total counter',
    `vera_hibernate_freezes_total ${c.freezes}`,
    '# HELP vera_hibernate_thaws_total Units thawed, applied on this member since it started.',
    '# TYPE vera_hibernate_thaws_total counter',
    `vera_hibernate_thaws_total ${c.thaws}`,
    '# HELP vera_hibernate_thaw_ms Time from a request meeting a Frozen unit to its thaw being applied (this member as leader, last 1000 thaws).',
    '# TYPE vera_hibernate_thaw_ms summary',
    `vera_hibernate_thaw_ms{quantile="0.5"} ${q(0.5).toFixed(3)}`,
    `vera_hibernate_thaw_ms{quantile="0.99"} ${q(0.99).toFixed(3)}`,
    `vera_hibernate_thaw_ms_count ${c.thawMs.length}`,
    '',
  ].join('\n');
}

const protocolOps: Record<string, FamilyOp> = Object.fromEntries([...HIBERNATE_OPS].map(([op, build]) => [op, { build, handle: handlers[op]! }]));

export const server: ServerPart = { protocolOps, onApplied, metrics, pathGate: thawFor };
