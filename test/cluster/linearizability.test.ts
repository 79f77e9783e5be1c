import { describe, expect, it } from 'vitest';
import { HistoryError, HistoryRecorder, type HistoryItem, type HistoryOp, type OpOutcome } from './history.js';
import { checkHistory, type CheckResult } from './linearizability.js';

// ---------------------------------------------------------------------------- building histories by hand

/** [invokedAt, completedAt]; completedAt null = never answered. */
type Span = readonly [number, number | null];

/** Collects hand-written operations; results: a number = ok with that item index, '?' = unknown, other text = error code. */
class Hist {
  readonly ops: HistoryOp[] = [];

  push(client: string, span: Span, data: unknown, result: number | string, options: { ifLastIndex?: number; path?: string } = {}): this {
    const outcome: OpOutcome<HistoryItem> = typeof result === 'number' ? { kind: 'ok', value: { index: result, data, owner: null } } : toOutcome(result);
    const args = options.ifLastIndex === undefined ? { data } : { data, ifLastIndex: options.ifLastIndex };
    return this.add({ op: 'push', client, path: options.path ?? '/a', args, ...times(span), outcome });
  }

  del(client: string, span: Span, index: number, result: string, path = '/a'): this {
    const outcome: OpOutcome<null> = result === 'ok' ? { kind: 'ok', value: null } : toOutcome(result);
    return this.add({ op: 'delete', client, path, args: { index }, ...times(span), outcome });
  }

  get(client: string, span: Span, items: ReadonlyArray<readonly [number, unknown]> | string, path = '/a'): this {
    const outcome: OpOutcome<readonly HistoryItem[]> = typeof items === 'string' ? toOutcome(items) : { kind: 'ok', value: items.map(([index, data]) => ({ index, data, owner: null })) };
    return this.add({ op: 'get', client, path, args: {}, ...times(span), outcome });
  }

  check(): CheckResult {
    return checkHistory(this.ops);
  }

  private add(op: Omit<HistoryOp, 'id'>): this {
    this.ops.push({ ...op, id: this.ops.length + 1 } as HistoryOp);
    return this;
  }
}

function times(span: Span): { invokedAt: number; completedAt: number | null } {
  return { invokedAt: span[0], completedAt: span[1] };
}

function toOutcome(result: string): OpOutcome<never> {
  return result === '?' ? { kind: 'unknown' } : { kind: 'fail', code: result };
}

function expectLinearizable(h: Hist): void {
  const result = h.check();
  expect(result.explanation).toBe('');
  expect(result.verdict).toBe('linearizable');
}

function expectViolation(h: Hist): CheckResult {
  const result = h.check();
  expect(result.verdict).toBe('not-linearizable');
  expect(result.linearizable).toBe(false);
  return result;
}

// ---------------------------------------------------------------------------- hand-written histories

describe('linearizability checker: hand-written histories', () => {
  it('accepts a sequential history of pushes, gets and deletes', () => {
    const h = new Hist()
      .push('c1', [0, 1], 'x', 3)
      .push('c1', [2, 3], 'y', 5)
      .get('c1', [4, 5], [[3, 'x'], [5, 'y']])
      .del('c1', [6, 7], 3, 'ok')
      .get('c1', [8, 9], [[5, 'y']])
      .del('c1', [10, 11], 3, 'NOT_FOUND');
    expectLinearizable(h);
  });

  it('accepts concurrent pushes whose indexes order them opposite to their invocations', () => {
    // y was invoked later but committed first (lower index): fine, they overlap.
    const h = new Hist()
      .push('c1', [0, 10], 'x', 7)
      .push('c2', [1, 9], 'y', 4)
      .get('c3', [2, 3], [])
      .get('c3', [4, 8], [[4, 'y']])
      .get('c3', [11, 12], [[4, 'y'], [7, 'x']]);
    expectLinearizable(h);
  });

  it('accepts concurrent pushes in either order when a read sees only one of them', () => {
    const base = () => new Hist().push('c1', [0, 10], 'x', 4).push('c2', [0, 10], 'y', 6);
    expectLinearizable(base().get('c3', [1, 9], [[4, 'x']]));
    expectLinearizable(base().get('c3', [1, 9], [[4, 'x'], [6, 'y']]));
    // y alone cannot be seen: x's lower index means it was applied first.
    expectViolation(base().get('c3', [1, 9], [[6, 'y']]));
  });

  it('rejects a stale read after an acknowledged push', () => {
    const result = expectViolation(new Hist().push('c1', [0, 1], 'x', 3).get('c2', [2, 3], []));
    expect(result.explanation).toContain('#2 c2 get');
    expect(result.explanation).toContain('missing [3="x"]');
    expect(result.paths[0]!.involved).toContain(2);
  });

  it('rejects a read that sees a push invoked after the read completed', () => {
    const result = expectViolation(new Hist().get('c1', [0, 1], [[3, 'x']]).push('c2', [2, 3], 'x', 3));
    expect(result.explanation).toContain('invoked after this get completed');
  });

  it('rejects a lost acknowledged push', () => {
    const h = new Hist()
      .push('c1', [0, 1], 'x', 3)
      .push('c2', [2, 3], 'y', 5)
      .get('c3', [4, 5], [[5, 'y']]);
    expectViolation(h);
  });

  it('rejects two concurrent compare-and-set winners on the same ifLastIndex', () => {
    const h = new Hist()
      .get('c0', [0, 1], [])
      .push('c1', [2, 5], 'a', 7, { ifLastIndex: 0 })
      .push('c2', [3, 6], 'b', 8, { ifLastIndex: 0 });
    expectViolation(h);
  });

  it('accepts a compare-and-set race with one winner and one CONFLICT', () => {
    const h = new Hist()
      .get('c0', [0, 1], [])
      .push('c1', [2, 5], 'a', 7, { ifLastIndex: 0 })
      .push('c2', [3, 6], 'b', 'CONFLICT', { ifLastIndex: 0 })
      .push('c2', [7, 8], 'c', 9, { ifLastIndex: 7 });
    expectLinearizable(h);
  });

  it('rejects a CONFLICT when the list was exactly as ifLastIndex said', () => {
    const h = new Hist().push('c1', [0, 1], 'a', 3).push('c2', [2, 3], 'b', 'CONFLICT', { ifLastIndex: 3 });
    expectViolation(h);
  });

  it('accepts an unknown push that later appears, taking its index from the get', () => {
    const h = new Hist()
      .push('c1', [0, null], 'x', '?')
      .get('c2', [1, 2], [])
      .push('c3', [3, 4], 'y', 9)
      .get('c2', [5, 6], [[4, 'x'], [9, 'y']]);
    expectLinearizable(h);
  });

  it('rejects an unknown push that appears with an index below one already acknowledged before it was invoked', () => {
    const h = new Hist().push('c3', [0, 1], 'y', 9).push('c1', [2, 3], 'x', '?').get('c2', [5, 6], [[4, 'x'], [9, 'y']]);
    expectViolation(h);
  });

  it('accepts an unknown push that never appears', () => {
    const h = new Hist()
      .push('c1', [0, 5], 'x', '?')
      .get('c2', [6, 7], [])
      .push('c2', [8, 9], 'y', 10)
      .get('c2', [10, 11], [[10, 'y']]);
    expectLinearizable(h);
  });

  it('rejects an unknown push that appears and then disappears without a delete', () => {
    const h = new Hist()
      .push('c1', [0, null], 'x', '?')
      .get('c2', [5, 6], [[4, 'x']])
      .get('c2', [7, 8], []);
    expectViolation(h);
  });

  it('rejects a get that still shows an item after its delete was acknowledged', () => {
    const h = new Hist()
      .push('c1', [0, 1], 'x', 3)
      .del('c1', [2, 3], 3, 'ok')
      .get('c2', [4, 5], [[3, 'x']]);
    expectViolation(h);
  });

  it('rejects a get whose items are out of index order', () => {
    const h = new Hist()
      .push('c1', [0, 1], 'x', 3)
      .push('c1', [2, 3], 'y', 5)
      .get('c2', [4, 5], [[5, 'y'], [3, 'x']]);
    const result = expectViolation(h);
    expect(result.explanation).toContain('same items in a different order');
  });

  it('rejects an acknowledged push whose index is below one acknowledged before it was invoked', () => {
    expectViolation(new Hist().push('c1', [0, 1], 'x', 5).push('c2', [2, 3], 'y', 3));
  });

  it('rejects a NOT_FOUND delete of an item that is present, and accepts it racing a successful delete', () => {
    const present = new Hist().push('c1', [0, 1], 'x', 3).del('c2', [2, 3], 3, 'NOT_FOUND');
    expectViolation(present);
    const race = new Hist()
      .push('c1', [0, 1], 'x', 3)
      .del('c2', [2, 6], 3, 'NOT_FOUND')
      .del('c3', [3, 5], 3, 'ok');
    expectLinearizable(race);
  });

  it('lets an unknown delete take effect or not, but not be undone', () => {
    const base = () => new Hist().push('c1', [0, 1], 'x', 3).del('c2', [2, null], 3, '?').get('c3', [4, 5], [[3, 'x']]);
    expectLinearizable(base().get('c3', [6, 7], []));
    expectViolation(base().get('c3', [6, 7], []).get('c3', [8, 9], [[3, 'x']]));
  });

  it('treats a definite failure as no effect: an item pushed by a NOT_LEADER push must never appear', () => {
    const base = () => new Hist().push('c1', [0, 1], 'x', 'NOT_LEADER');
    expectLinearizable(base().get('c2', [2, 3], []));
    const result = expectViolation(base().get('c2', [2, 3], [[4, 'x']]));
    expect(result.explanation).toContain('failed with NOT_LEADER');
  });

  it('uses an unseen unknown push to explain a CONFLICT on an apparently empty list', () => {
    const withUnknown = new Hist().push('c1', [0, null], 'x', '?').push('c2', [5, 6], 'y', 'CONFLICT', { ifLastIndex: 0 });
    expectLinearizable(withUnknown);
    // Without it, the list is empty and ifLastIndex 0 must win.
    expectViolation(new Hist().get('c1', [0, 1], []).push('c2', [5, 6], 'y', 'CONFLICT', { ifLastIndex: 0 }));
  });

  it('counts operations that touch in time as concurrent', () => {
    expectLinearizable(new Hist().get('c1', [0, 1], [[3, 'x']]).push('c2', [1, 2], 'x', 3));
  });

  it('checks lists independently and names only the broken one', () => {
    const h = new Hist()
      .push('c1', [0, 1], 'x', 3, { path: '/good' })
      .get('c1', [2, 3], [[3, 'x']], '/good')
      .push('c1', [0, 1], 'y', 4, { path: '/bad' })
      .get('c1', [2, 3], [], '/bad');
    const result = expectViolation(h);
    expect(result.paths.map((p) => [p.path, p.verdict])).toEqual([
      ['/bad', 'not-linearizable'],
      ['/good', 'linearizable'],
    ]);
    expect(result.explanation).toContain('/bad');
    expect(result.explanation).not.toContain('/good');
  });

  it('explains a failure with the smallest failing prefix, not the whole run', () => {
    const h = new Hist();
    let t = 0;
    for (let i = 1; i <= 40; i++, t += 2) h.push('c1', [t, t + 1], `v${i}`, i * 2);
    h.get('c2', [t, t + 1], []); // op #41: everything vanished
    for (let i = 41; i <= 80; i++, t += 2) h.push('c1', [t + 2, t + 3], `v${i}`, i * 2);
    const result = expectViolation(h);
    const path = result.paths[0]!;
    expect(path.explanation).toContain('Smallest failing prefix: the 41 of 81 operations');
    expect(path.explanation).toContain('completion of #41 c2 get');
    expect(path.involved).toContain(41);
  });

  it('reports a push whose returned item carries other data than was pushed', () => {
    const h = new Hist();
    h.ops.push({ id: 1, client: 'c1', op: 'push', path: '/a', args: { data: 'x' }, invokedAt: 0, completedAt: 1, outcome: { kind: 'ok', value: { index: 3, data: 'z' } } });
    const result = expectViolation(h);
    expect(result.explanation).toContain('differs from the data pushed');
  });

  it('gives up instead of running forever when the step budget is exhausted', () => {
    // Twelve concurrent deletes, then a get no order explains: every subset gets tried.
    const h = new Hist();
    for (let i = 1; i <= 12; i++) h.push('c0', [i, i + 0.5], `v${i}`, i);
    for (let i = 1; i <= 12; i++) h.del(`c${i}`, [20, 30], i, 'ok');
    h.get('c0', [31, 32], [[99, 'v1']]);
    expect(checkHistory(h.ops).verdict).toBe('not-linearizable');
    const result = checkHistory(h.ops, { maxStepsPerPath: 50 });
    expect(result.verdict).toBe('gave-up');
    expect(result.explanation).toContain('gave up after');
  });

  it('refuses malformed histories with a HistoryError', () => {
    const twice = new Hist().push('c1', [0, 1], 'same', 3).push('c2', [2, 3], 'same', 4);
    expect(() => twice.check()).toThrow(HistoryError);
    expect(() => twice.check()).toThrow(/unique data per push/);
    expect(() => new Hist().push('c1', [5, 1], 'x', 3).check()).toThrow(/completedAt/);
    expect(() => new Hist().push('c1', [0, null], 'x', 3).check()).toThrow(/needs completedAt/);
    expect(() => new Hist().del('c1', [0, 1], 0, 'ok').check()).toThrow(/positive integer/);
    expect(() => new Hist().get('c1', [0, 1], [[1.5, 'x']]).check()).toThrow(/positive integer index/);
  });
});

// ---------------------------------------------------------------------------- the recorder

describe('HistoryRecorder', () => {
  it('records invocation and completion times, outcomes, and pending operations', async () => {
    let clock = 0;
    const recorder = new HistoryRecorder({ now: () => ++clock });
    const item = await recorder.run('c1', 'push', '/a', { data: 'x' }, async () => ({ index: 3, data: 'x', owner: null }));
    expect(item.index).toBe(3);
    const conflict = Object.assign(new Error('conflict'), { code: 'CONFLICT' });
    await expect(recorder.run('c1', 'push', '/a', { data: 'y', ifLastIndex: 0 }, () => Promise.reject(conflict))).rejects.toBe(conflict);
    const lost = Object.assign(new Error('lost'), { code: 'UNAVAILABLE' });
    await expect(recorder.run('c2', 'delete', '/a', { index: 3 }, () => Promise.reject(lost))).rejects.toBe(lost);
    const pending = recorder.begin('c3', 'get', '/a', {});
    const ops = recorder.history();
    expect(ops.map((o) => [o.id, o.client, o.op, o.invokedAt, o.completedAt, o.outcome.kind])).toEqual([
      [0, 'c1', 'push', 1, 2, 'ok'],
      [1, 'c1', 'push', 3, 4, 'fail'],
      [2, 'c2', 'delete', 5, 6, 'unknown'],
      [3, 'c3', 'get', 7, null, 'unknown'],
    ]);
    expect(ops[1]!.outcome).toEqual({ kind: 'fail', code: 'CONFLICT' });
    pending.ok([]);
    expect(() => pending.unknown()).toThrow(HistoryError);
    expect(recorder.history()[3]!.completedAt).toBe(8);
    // The get saw [] after x was acknowledged: fine only because the unknown delete may have happened.
    expect(checkHistory(recorder.history()).verdict).toBe('linearizable');
    expect(checkHistory(recorder.history().filter((o) => o.op !== 'delete')).verdict).toBe('not-linearizable');
  });

  it('refuses a path that does not start with a slash', () => {
    expect(() => new HistoryRecorder().begin('c1', 'get', 'a', {})).toThrow(HistoryError);
  });
});

// ---------------------------------------------------------------------------- randomized histories

/** Seeded xorshift32 (Marsaglia 2003): each seed always yields the same history. */
class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = (seed * 0x9e3779b1) >>> 0 || 1;
  }
  next(): number {
    this.s ^= this.s << 13;
    this.s >>>= 0;
    this.s ^= this.s >>> 17;
    this.s ^= this.s << 5;
    this.s >>>= 0;
    return this.s / 0x1_0000_0000;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
}

interface GenOptions {
  readonly ops: number;
  readonly paths: number;
  /** Each op runs at a distinct instant 10 apart; its window reaches this far either side. */
  readonly window: number;
}

/**
 * Runs a random workload against a real sequential list (one per path) and records
 * it with random invocation/completion windows around each op's instant, so every
 * generated history is linearizable by construction. Clients only use indexes they
 * observed (the checker's documented assumption).
 */
function generate(seed: number, o: GenOptions): HistoryOp[] {
  const rng = new Rng(seed);
  const lists = new Map<string, HistoryItem[]>();
  const observed = new Map<string, number[]>();
  let raftIndex = 100; // never 1: an unobserved index a delete could hit by accident
  const ops: HistoryOp[] = [];
  for (let k = 0; k < o.ops; k++) {
    const path = `/p${rng.int(o.paths)}`;
    const items = lists.get(path) ?? [];
    lists.set(path, items);
    const seen = observed.get(path) ?? [0];
    observed.set(path, seen);
    const at = 10 * k + 5;
    const invokedAt = at - rng.int(o.window + 1);
    const completedAt = at + rng.int(o.window + 1);
    const roll = rng.next();
    // Whether the client hears the answer: ~15% unknown (effect applied or not), ~5% refused before sending.
    const fate = rng.chance(0.15) ? 'unknown' : rng.chance(0.06) ? 'refused' : 'answered';
    const happens = fate === 'answered' || (fate === 'unknown' && rng.chance(0.5));
    const timing = { id: k, client: `c${rng.int(5)}`, path, invokedAt, completedAt: fate === 'unknown' && rng.chance(0.5) ? null : completedAt };
    if (roll < 0.55) {
      const data = `d${k}`;
      const ifLastIndex = roll < 0.2 ? rng.pick(seen) : undefined;
      const newest = items[items.length - 1]?.index ?? 0;
      const args = ifLastIndex === undefined ? { data } : { data, ifLastIndex };
      let outcome: OpOutcome<HistoryItem> = { kind: 'unknown' };
      if (fate === 'refused') outcome = { kind: 'fail', code: 'NOT_LEADER' };
      else if (happens && ifLastIndex !== undefined && newest !== ifLastIndex) {
        if (fate === 'answered') outcome = { kind: 'fail', code: 'CONFLICT' };
      } else if (happens) {
        raftIndex += 1 + rng.int(3);
        const item = { index: raftIndex, data, owner: null };
        items.push(item);
        if (fate === 'answered') {
          outcome = { kind: 'ok', value: item };
          seen.push(item.index);
        }
      }
      ops.push({ ...timing, op: 'push', args, outcome });
    } else if (roll < 0.75) {
      const index = rng.pick(seen.length > 1 ? seen.slice(1) : [1]);
      const at = items.findIndex((i) => i.index === index);
      let outcome: OpOutcome<null> = { kind: 'unknown' };
      if (fate === 'refused') outcome = { kind: 'fail', code: 'NO_LEADER' };
      else if (happens) {
        raftIndex += 1; // a delete is a Raft entry too
        if (at >= 0) items.splice(at, 1);
        if (fate === 'answered') outcome = at >= 0 ? { kind: 'ok', value: null } : { kind: 'fail', code: 'NOT_FOUND' };
      }
      ops.push({ ...timing, op: 'delete', args: { index }, outcome });
    } else {
      const snapshot = items.map((i) => ({ ...i }));
      const outcome: OpOutcome<readonly HistoryItem[]> = fate === 'answered' ? { kind: 'ok', value: snapshot } : { kind: 'unknown' };
      if (fate === 'answered') for (const i of snapshot) if (!seen.includes(i.index)) seen.push(i.index);
      ops.push({ ...timing, op: 'get', args: {}, outcome });
    }
  }
  return ops;
}

/** Changes one recorded result so that it no longer matches the run (it may still be explainable by another order). */
function mutate(ops: HistoryOp[], rng: Rng): HistoryOp[] {
  const answered = ops.filter((o) => o.outcome.kind !== 'unknown' && !(o.outcome.kind === 'fail' && o.outcome.code !== 'CONFLICT' && o.outcome.code !== 'NOT_FOUND'));
  const victim = rng.pick(answered);
  const pushed = ops.flatMap((o) => (o.op === 'push' ? [o.args.data] : []));
  let changed: HistoryOp;
  if (victim.op === 'get' && victim.outcome.kind === 'ok') {
    const items = [...victim.outcome.value];
    const choice = rng.int(3);
    if (choice === 0 && items.length > 0) items.splice(rng.int(items.length), 1);
    else if (choice === 1 && items.length > 1) items.reverse();
    else items.push({ index: (items[items.length - 1]?.index ?? 0) + 1 + rng.int(3), data: rng.pick(pushed), owner: null });
    changed = { ...victim, outcome: { kind: 'ok', value: items } };
  } else if (victim.op === 'push') {
    if (victim.outcome.kind === 'ok') {
      changed =
        victim.args.ifLastIndex !== undefined && rng.chance(0.5)
          ? { ...victim, outcome: { kind: 'fail', code: 'CONFLICT' } }
          : { ...victim, outcome: { kind: 'ok', value: { ...victim.outcome.value, index: Math.max(1, victim.outcome.value.index + rng.pick([-3, -2, -1, 1, 2])) } } };
    } else {
      // A CONFLICT turned into a win with a plausible fresh index.
      changed = { ...victim, outcome: { kind: 'ok', value: { index: 10 * victim.id + 7, data: victim.args.data, owner: null } } };
    }
  } else {
    changed = { ...victim, outcome: victim.outcome.kind === 'ok' ? { kind: 'fail', code: 'NOT_FOUND' } : { kind: 'ok', value: null } } as HistoryOp;
  }
  return ops.map((o) => (o === victim ? changed : o));
}

/**
 * A history of random results that no server produced: most are not linearizable,
 * some are by luck. Indexes and data come from small pools so that results collide.
 */
function randomResults(seed: number, n: number): HistoryOp[] {
  const rng = new Rng(seed);
  const index = (): number => 100 + rng.int(5);
  const ops: HistoryOp[] = [];
  for (let k = 0; k < n; k++) {
    const invokedAt = rng.int(40);
    const completedAt = rng.chance(0.15) ? null : invokedAt + rng.int(30);
    const unknown = completedAt === null || rng.chance(0.1);
    const timing = { id: k, client: `c${k}`, path: '/a', invokedAt, completedAt };
    const roll = rng.next();
    if (roll < 0.45) {
      const data = `d${k}`;
      const ifLastIndex = rng.chance(0.4) ? (rng.chance(0.3) ? 0 : index()) : undefined;
      const outcome: OpOutcome<HistoryItem> = unknown
        ? { kind: 'unknown' }
        : ifLastIndex !== undefined && rng.chance(0.4)
          ? { kind: 'fail', code: 'CONFLICT' }
          : { kind: 'ok', value: { index: index(), data } };
      ops.push({ ...timing, op: 'push', args: ifLastIndex === undefined ? { data } : { data, ifLastIndex }, outcome });
    } else if (roll < 0.65) {
      const outcome: OpOutcome<null> = unknown ? { kind: 'unknown' } : rng.chance(0.5) ? { kind: 'ok', value: null } : { kind: 'fail', code: 'NOT_FOUND' };
      ops.push({ ...timing, op: 'delete', args: { index: index() }, outcome });
    } else {
      const items: HistoryItem[] = [];
      for (let j = 0, at = 99, count = rng.int(3); j < count; j++) items.push({ index: (at += 1 + rng.int(2)), data: `d${rng.int(n)}` });
      ops.push({ ...timing, op: 'get', args: {}, outcome: unknown ? { kind: 'unknown' } : { kind: 'ok', value: items } });
    }
  }
  return ops;
}

/**
 * Brute force, independent of the checker's search: try every order of the ops that
 * respects real time, letting each unknown-outcome op take effect at any position or
 * never, and run each order through a plain list. Only for tiny histories.
 */
function bruteForceLinearizable(history: readonly HistoryOp[]): boolean {
  interface Step {
    op: HistoryOp;
    required: boolean;
    ret: number;
  }
  const known = (o: HistoryOp): boolean => o.outcome.kind === 'ok' || (o.outcome.kind === 'fail' && ((o.op === 'push' && o.outcome.code === 'CONFLICT' && o.args.ifLastIndex !== undefined) || (o.op === 'delete' && o.outcome.code === 'NOT_FOUND')));
  const steps: Step[] = history
    .filter((o) => known(o) || (o.outcome.kind === 'unknown' && o.op !== 'get'))
    .map((op) => ({ op, required: known(op), ret: known(op) ? op.completedAt! : Infinity }));
  const indexSeenInGets = new Map<unknown, number>();
  for (const o of history) if (o.op === 'get' && o.outcome.kind === 'ok') for (const i of o.outcome.value) if (!indexSeenInGets.has(i.data)) indexSeenInGets.set(i.data, i.index);

  type Entry = { index: number | undefined; data: unknown };
  const apply = (list: Entry[], max: number, s: Step): { list: Entry[]; max: number } | null => {
    const op = s.op;
    const newest = list.length === 0 ? 0 : list[list.length - 1]!.index;
    if (op.op === 'push') {
      const cas = op.args.ifLastIndex;
      const casOk = cas === undefined || newest === cas;
      if (op.outcome.kind === 'fail') return casOk ? null : { list, max };
      if (!casOk) return null;
      const index = op.outcome.kind === 'ok' ? op.outcome.value.index : indexSeenInGets.get(op.args.data);
      if (index !== undefined && index <= max) return null;
      return { list: [...list, { index, data: op.args.data }], max: index ?? max };
    }
    if (op.op === 'delete') {
      const at = list.findIndex((e) => e.index === op.args.index);
      if (op.outcome.kind === 'fail') return at < 0 ? { list, max } : null;
      if (at < 0) return null;
      return { list: list.filter((_, i) => i !== at), max };
    }
    if (op.outcome.kind !== 'ok') return null;
    const seen = op.outcome.value;
    const same = seen.length === list.length && seen.every((it, i) => it.index === list[i]!.index && it.data === list[i]!.data);
    return same ? { list, max } : null;
  };

  const explore = (remaining: Step[], list: Entry[], max: number): boolean => {
    if (remaining.every((s) => !s.required)) return true;
    for (const s of remaining) {
      // s may go first only if no remaining required op completed before s was invoked.
      if (remaining.some((p) => p !== s && p.required && p.ret < s.op.invokedAt)) continue;
      const after = apply(list, max, s);
      if (after !== null && explore(remaining.filter((p) => p !== s), after.list, after.max)) return true;
    }
    return false;
  };
  return explore(steps, [], 0);
}

describe('linearizability checker: randomized histories', () => {
  it('accepts every history generated from a real sequential run (and the brute force agrees)', () => {
    for (let seed = 1; seed <= 150; seed++) {
      const history = generate(seed, { ops: 8, paths: 1, window: 25 });
      expect(bruteForceLinearizable(history), `seed ${seed}`).toBe(true);
      expect(checkHistory(history).verdict, `seed ${seed}`).toBe('linearizable');
    }
  });

  it('agrees with brute force on histories with one result changed, and catches most changes', () => {
    let caught = 0;
    const seeds = 200;
    for (let seed = 1; seed <= seeds; seed++) {
      const rng = new Rng(seed + 10_000);
      const history = mutate(generate(seed, { ops: 8, paths: 1, window: 25 }), rng);
      const expected = bruteForceLinearizable(history);
      const result = checkHistory(history);
      expect(result.verdict, `seed ${seed}: ${result.explanation}`).toBe(expected ? 'linearizable' : 'not-linearizable');
      if (!expected) caught++;
    }
    expect(caught).toBeGreaterThan(seeds * 0.6);
  });

  it('agrees with brute force on histories of random results', () => {
    let linearizable = 0;
    for (let seed = 1; seed <= 3000; seed++) {
      const history = randomResults(seed, 6);
      const expected = bruteForceLinearizable(history);
      const result = checkHistory(history);
      expect(result.verdict, `seed ${seed}: ${result.explanation}`).toBe(expected ? 'linearizable' : 'not-linearizable');
      if (expected) linearizable++;
    }
    // Both verdicts occur, so agreement means something.
    expect(linearizable).toBeGreaterThan(50);
    expect(linearizable).toBeLessThan(2900);
  });

  it('checks a few thousand operations over tens of lists, and finds one changed result among them', () => {
    const history = generate(7, { ops: 3000, paths: 30, window: 40 });
    const result = checkHistory(history);
    expect(result.explanation).toBe('');
    expect(result.paths).toHaveLength(30);

    // Make an acknowledged, never deleted item vanish from every get invoked after its push completed.
    const shows = (o: HistoryOp, data: unknown): boolean => o.op === 'get' && o.outcome.kind === 'ok' && o.outcome.value.some((i) => i.data === data);
    const victim = history.find(
      (p) =>
        p.op === 'push' &&
        p.outcome.kind === 'ok' &&
        p.id > 1500 &&
        !history.some((d) => d.op === 'delete' && d.path === p.path && d.args.index === (p.outcome.kind === 'ok' ? p.outcome.value.index : -1)) &&
        history.some((g) => g.path === p.path && g.invokedAt > p.completedAt! && shows(g, p.args.data)),
    );
    if (victim === undefined || victim.op !== 'push') throw new Error('the generator made no suitable push; change the seed');
    const broken = history.map((o) =>
      o.op === 'get' && o.path === victim.path && o.invokedAt > victim.completedAt! && o.outcome.kind === 'ok'
        ? { ...o, outcome: { kind: 'ok' as const, value: o.outcome.value.filter((i) => i.data !== victim.args.data) } }
        : o,
    );
    const changedGets = broken.filter((o, i) => o !== history[i]).length;
    expect(changedGets).toBeGreaterThan(0);
    const verdict = checkHistory(broken);
    expect(verdict.verdict).toBe('not-linearizable');
    expect(verdict.paths.filter((p) => p.verdict !== 'linearizable').map((p) => p.path)).toEqual([victim.path]);
  });
});
