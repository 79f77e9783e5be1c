// The counter family: named integers changed atomically through Raft, with an
// optional compare (`ifValue`), for sequence numbers and fencing tokens. Small on
// purpose: it is the example of a family written against the kit (src/kit/),
// touching nothing outside this folder but its line in the registry
// (docs/architecture.md, "Adding a family").
import { bucketPrefix, bucketRange } from '../../keys/index.js';
import { CorruptValueError, pack, unpack } from '../../statemachine/codec.js';
import { CommandError, failure, type DbSnapshot, type Family, type Plan, type PlanContext } from '../../statemachine/family.js';
import type { VeraDb } from '../../statemachine/types.js';
import { integerProblem, MAX_COUNTERS, nameProblem } from './wire.js';

const SINCE = 9;
const COUNTER_BUCKET = 0x0040;

export type CounterCommand = { readonly op: 'add'; readonly name: string; readonly delta: number; readonly ifValue?: number } | { readonly op: 'remove'; readonly name: string };

/** Every counter's value, by name. */
export type CounterState = Map<string, number>;

const PREFIX = bucketPrefix(COUNTER_BUCKET);
const keyOf = (name: string): Buffer => Buffer.concat([PREFIX, Buffer.from(name, 'utf8')]);

function decodeValue(bytes: Uint8Array): number {
  const value = unpack(bytes);
  if (!Number.isSafeInteger(value)) throw new CorruptValueError('a counter value is not an integer');
  return value as number;
}

async function load(db: VeraDb, snapshot: DbSnapshot): Promise<CounterState> {
  const state: CounterState = new Map();
  for await (const [key, value] of db.iterator({ ...bucketRange(COUNTER_BUCKET), snapshot })) state.set(key.subarray(PREFIX.length).toString('utf8'), decodeValue(value));
  return state;
}

function checked(problem: string | null): void {
  if (problem !== null) throw new CommandError(problem);
}

function plan(command: CounterCommand, { states }: PlanContext): Plan | ReturnType<typeof failure> {
  const state = states.of(counter);
  const current = state.get(command.name);
  if (command.op === 'remove') {
    return {
      result: { ok: true, op: 'family', family: 'counter', value: { removed: current !== undefined } },
      ops: current === undefined ? [] : [{ type: 'del', key: keyOf(command.name) }],
      events: [],
      after: [() => state.delete(command.name)],
    };
  }
  const before = current ?? 0;
  if (command.ifValue !== undefined && command.ifValue !== before) return failure('CONFLICT', `counter ${command.name} is ${before}, not ${command.ifValue}`);
  if (current === undefined && state.size >= MAX_COUNTERS) return failure('QUOTA_EXCEEDED', `the cluster holds ${MAX_COUNTERS} counters, the most it may`);
  const value = before + command.delta;
  if (!Number.isSafeInteger(value)) return failure('BAD_REQUEST', `counter ${command.name} would leave the safe integer range`);
  return {
    result: { ok: true, op: 'family', family: 'counter', value: { name: command.name, value, exists: true } },
    ops: [{ type: 'put', key: keyOf(command.name), value: pack(value) }],
    events: [],
    after: [() => state.set(command.name, value)],
  };
}

export const counter: Family<CounterCommand, CounterState> = {
  name: 'counter',
  since: SINCE,
  buckets: [{ id: COUNTER_BUCKET, name: 'counters' }],
  ops: {
    add: {
      fields: ['name', 'delta', 'ifValue'],
      since: SINCE,
      decode: (c) => {
        checked(nameProblem(c.name));
        checked(integerProblem(c.delta, 'delta'));
        checked(integerProblem(c.ifValue, 'ifValue'));
        if (c.delta === undefined) throw new CommandError('delta is required');
        return { op: 'add', name: c.name as string, delta: c.delta as number, ...(c.ifValue === undefined ? {} : { ifValue: c.ifValue as number }) };
      },
    },
    remove: {
      fields: ['name'],
      since: SINCE,
      decode: (c) => (checked(nameProblem(c.name)), { op: 'remove', name: c.name as string }),
    },
  },
  load,
  plan,
  // Plans from the values in memory, which each entry's after-step moves before the next is planned.
  goesAlone: () => false,
  plugin: async () => (await import('./server.js')).plugin,
  cli: { verbs: ['counter'] },
};
