// The counter family's ops, as the client and the server both check them
// (docs/architecture.md uses this family as the example of a plugin).
import { defineOp, invalid } from '../../protocol/index.js';

/** Counters a cluster holds at most: creating one more is refused. */
export const MAX_COUNTERS = 100_000;
export const MAX_NAME_LENGTH = 256;
const NAME = /^[A-Za-z0-9._:/-]+$/;

type Fields = Readonly<Record<string, unknown>>;

export function nameProblem(value: unknown): string | null {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_NAME_LENGTH || !NAME.test(value)) {
    return `name must be 1 to ${MAX_NAME_LENGTH} characters of A-Z a-z 0-9 . _ : / -`;
  }
  return null;
}

/** A safe integer field, or undefined when absent. */
export function integerProblem(value: unknown, name: string): string | null {
  return value === undefined || Number.isSafeInteger(value) ? null : `${name} must be an integer between -(2^53-1) and 2^53-1`;
}

function name(f: Fields): string {
  const problem = nameProblem(f.name);
  if (problem !== null) throw invalid(problem);
  return f.name as string;
}

function integer(f: Fields, field: string): number | undefined {
  const problem = integerProblem(f[field], field);
  if (problem !== null) throw invalid(problem);
  return f[field] as number | undefined;
}

export interface CounterValue {
  readonly name: string;
  /** 0 for a counter that does not exist. */
  readonly value: number;
  readonly exists: boolean;
}

export const COUNTER_OPS = {
  add: defineOp<{ name: string; delta: number; ifValue?: number }, CounterValue>({
    name: 'counter.add',
    fields: ['name', 'delta', 'ifValue'],
    parse: (f) => {
      const ifValue = integer(f, 'ifValue');
      return { name: name(f), delta: integer(f, 'delta') ?? 1, ...(ifValue === undefined ? {} : { ifValue }) };
    },
  }),
  get: defineOp<{ name: string; consistency: 'linearizable' | 'stale' }, CounterValue>({
    name: 'counter.get',
    read: true,
    fields: ['name', 'consistency'],
    parse: (f) => {
      if (f.consistency !== undefined && f.consistency !== 'linearizable' && f.consistency !== 'stale') throw invalid("consistency must be 'linearizable' or 'stale'");
      return { name: name(f), consistency: (f.consistency as 'linearizable' | 'stale' | undefined) ?? 'linearizable' };
    },
  }),
  remove: defineOp<{ name: string }, { readonly removed: boolean }>({
    name: 'counter.remove',
    fields: ['name'],
    parse: (f) => ({ name: name(f) }),
  }),
};
