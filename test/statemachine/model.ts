// A tiny in-memory model of the protocol semantics (PROTOCOL.md), written
// independently of the state machine, plus fast-check generators of command
// sequences. Steps are resolved against the model so deletes and ifLastIndex
// hit real items often enough to matter.
import fc from 'fast-check';
import { pack } from 'msgpackr';
import type { Command } from '../../src/families/core-commands.js';
import type { ApplyResult } from '../../src/statemachine/types.js';
import type { ChangeEvent, Item } from '../../src/families/lists/item.js';
import type { SessionInfo } from '../../src/families/sessions/codec.js';

export const SESSIONS = ['s1', 's2', 's3'] as const;
export const PATHS = ['/a', '/a/b', '/a-b', '/a/b/c', '/b', '/é'] as const;
export const PREFIX_PATHS = ['/', '/a', '/a/b', '/b'] as const;
export const LS_PATHS = ['/', '/a', '/a/b', '/b', '/a-b'] as const;

export type Step =
  | { kind: 'noop' }
  | { kind: 'garbage'; bytes: Uint8Array }
  | { kind: 'open'; session: string }
  | { kind: 'close'; session: string; reason: 'bye' | 'expired' }
  | { kind: 'push'; session: string; path: string; data: unknown; persistent: boolean; watch: boolean; cas: 'none' | 'current' | number }
  | { kind: 'delete'; session: string; path: string; pick: number }
  | { kind: 'watch' | 'unwatch'; session: string; path: string; prefix: boolean }
  | { kind: 'ack'; acks: Array<[string, number]> };

const session = fc.constantFrom(...SESSIONS);
const exactOrPrefix = fc.oneof(
  fc.record({ path: fc.constantFrom(...PATHS), prefix: fc.constant(false) }),
  fc.record({ path: fc.constantFrom(...PREFIX_PATHS), prefix: fc.constant(true) }),
);

export const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ kind: 'noop' as const }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<Uint8Array>(
      new Uint8Array([0xc1]),
      pack({ op: 'push', session: 's1', path: '/', data: 1, persistent: false, watch: true }),
      pack({ op: 'watch', session: 's1', path: '/a/', prefix: false }),
      pack('not a command'),
    ).map((bytes) => ({ kind: 'garbage' as const, bytes })),
  },
  { weight: 3, arbitrary: session.map((s) => ({ kind: 'open' as const, session: s })) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('close' as const), session, reason: fc.constantFrom('bye' as const, 'expired' as const) }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('push' as const),
      session,
      path: fc.constantFrom(...PATHS),
      data: fc.oneof(fc.integer(), fc.string({ maxLength: 3 }), fc.constant(null), fc.record({ k: fc.boolean() })),
      persistent: fc.boolean(),
      watch: fc.boolean(),
      cas: fc.oneof(fc.constant('none' as const), fc.constant('current' as const), fc.nat(12)),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('delete' as const), session, path: fc.constantFrom(...PATHS), pick: fc.nat(40) }) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom('watch' as const, 'unwatch' as const), session, exactOrPrefix)
      .map(([kind, s, w]) => ({ kind, session: s, ...w })),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('ack' as const), acks: fc.array(fc.tuple(session, fc.nat(60)), { maxLength: 4 }) }) },
);

export const stepsArb = fc.array(stepArb, { minLength: 1, maxLength: 45 });

const utf8Order = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** What an entry should do, as the model sees it. Errors are compared by code only. */
export interface Expected {
  readonly result: ApplyResult | { ok: false; code: string };
  readonly events: ChangeEvent[];
}

export class Model {
  readonly sessions = new Map<string, SessionInfo>();
  readonly lists = new Map<string, Item[]>();
  readonly exact = new Map<string, Set<string>>();
  readonly prefix = new Map<string, Set<string>>();
  readonly lag = new Map<string, number>();

  /** Turns a step into the entry payload, using the model for state-dependent choices. */
  resolve(step: Step): { command: Command } | { bytes: Uint8Array } | { noop: true } {
    switch (step.kind) {
      case 'noop':
        return { noop: true };
      case 'garbage':
        return { bytes: step.bytes };
      case 'open':
        return { command: { op: 'openSession', session: step.session, timeoutMs: 1000, remote: '10.0.0.1' } };
      case 'close':
        return { command: { op: 'closeSession', session: step.session, reason: step.reason } };
      case 'push': {
        const base = { op: 'push' as const, session: step.session, path: step.path, data: step.data, persistent: step.persistent, watch: step.watch };
        if (step.cas === 'none') return { command: base };
        return { command: { ...base, ifLastIndex: step.cas === 'current' ? this.last(step.path) : step.cas } };
      }
      case 'delete': {
        const items = this.lists.get(step.path) ?? [];
        const index = items.length > 0 && step.pick < 30 ? items[step.pick % items.length]!.index : step.pick;
        return { command: { op: 'delete', session: step.session, path: step.path, index } };
      }
      case 'watch':
      case 'unwatch':
        return { command: { op: step.kind, session: step.session, path: step.path, prefix: step.prefix } };
      case 'ack':
        return { command: { op: 'ack', acks: step.acks } };
    }
  }

  last(path: string): number {
    return this.lists.get(path)?.at(-1)?.index ?? 0;
  }

  apply(index: number, payload: { command: Command } | { bytes: Uint8Array } | { noop: true }): Expected {
    if ('noop' in payload) return { result: { ok: true, op: 'noop' }, events: [] };
    if ('bytes' in payload) return { result: { ok: false, code: 'BAD_REQUEST' }, events: [] };
    const c = payload.command;
    const fail = (code: string): Expected => ({ result: { ok: false, code }, events: [] });
    if (c.op === 'openSession') {
      if (this.sessions.has(c.session)) return fail('CONFLICT');
      this.sessions.set(c.session, { timeoutMs: c.timeoutMs, remote: c.remote });
      return { result: { ok: true, op: 'openSession', session: c.session }, events: [] };
    }
    if (c.op === 'ack') {
      for (const [s, i] of c.acks) if (this.sessions.has(s)) this.lag.set(s, Math.max(this.lag.get(s) ?? 0, i));
      return { result: { ok: true, op: 'ack' }, events: [] };
    }
    if (!this.sessions.has(c.session)) return fail('SESSION_EXPIRED');
    switch (c.op) {
      case 'closeSession': {
        const events: ChangeEvent[] = [];
        for (const path of [...this.lists.keys()].sort(utf8Order)) {
          const items = this.lists.get(path)!;
          for (const item of items.filter((i) => i.owner === c.session)) events.push({ index, type: 'delete', path, item });
          this.setList(path, items.filter((i) => i.owner !== c.session));
        }
        for (const m of [this.exact, this.prefix]) for (const set of m.values()) set.delete(c.session);
        this.lag.delete(c.session);
        this.sessions.delete(c.session);
        return { result: { ok: true, op: 'closeSession' }, events };
      }
      case 'push': {
        if (c.ifLastIndex !== undefined && c.ifLastIndex !== this.last(c.path)) return fail('CONFLICT');
        const item: Item = { index, owner: c.persistent ? null : c.session, data: c.data };
        this.setList(c.path, [...(this.lists.get(c.path) ?? []), item]);
        if (c.watch) this.watchSet(this.exact, c.path).add(c.session);
        return { result: { ok: true, op: 'push', item }, events: [{ index, type: 'push', path: c.path, item }] };
      }
      case 'delete': {
        const items = this.lists.get(c.path) ?? [];
        const item = items.find((i) => i.index === c.index);
        if (item === undefined) return fail('NOT_FOUND');
        if (item.owner !== null && item.owner !== c.session) return fail('FORBIDDEN');
        this.setList(c.path, items.filter((i) => i !== item));
        return { result: { ok: true, op: 'delete' }, events: [{ index, type: 'delete', path: c.path, item }] };
      }
      case 'watch':
        this.watchSet(c.prefix ? this.prefix : this.exact, c.path).add(c.session);
        return c.prefix
          ? { result: { ok: true, op: 'watch', index }, events: [] }
          : { result: { ok: true, op: 'watch', index, items: [...(this.lists.get(c.path) ?? [])] }, events: [] };
      case 'unwatch':
        (c.prefix ? this.prefix : this.exact).get(c.path)?.delete(c.session);
        return { result: { ok: true, op: 'unwatch' }, events: [] };
    }
  }

  watchersOf(path: string): Set<string> {
    const out = new Set(this.exact.get(path) ?? []);
    for (const [p, set] of this.prefix) {
      const covers = p === '/' || p === path || path.startsWith(`${p}/`);
      if (covers) for (const s of set) out.add(s);
    }
    return out;
  }

  children(path: string): string[] {
    const base = path === '/' ? '/' : `${path}/`;
    const names = new Set<string>();
    for (const p of this.lists.keys()) if (p.startsWith(base)) names.add(p.slice(base.length).split('/')[0]!);
    return [...names].sort(utf8Order);
  }

  private setList(path: string, items: Item[]): void {
    if (items.length === 0) this.lists.delete(path);
    else this.lists.set(path, items);
  }

  private watchSet(m: Map<string, Set<string>>, path: string): Set<string> {
    let set = m.get(path);
    if (set === undefined) m.set(path, (set = new Set()));
    return set;
  }
}
