// Hibernation is transparent on every access path (issue 34). Every client op and
// HTTP route is listed from where it is defined (the protocol package's OPS, the
// families' registry of ops and routes, the core routes of src/server/http/http-api.ts),
// and each either reads or changes lists, and then has probes here, or touches
// none, and says why; a new op or route in neither fails the coverage test.
// A probe reads (or writes and then reads) a unit through one path; what it sees of
// the frozen unit equals, byte for byte, what it saw while the unit was hot. Each
// probe runs twice: on a unit frozen before it starts, and on a hot unit that a
// freeze reaches after the request has passed hibernation's guard (a test family's
// guard, run after hibernation's, freezes it there, over a connection of its own):
// the race of a freeze committing while a first access is in flight.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../../src/client/client.js';
import { pluginOnlyFamily } from '../../../src/statemachine/family.js';
import type { PathAccess, Plugin, PluginPathGuard } from '../../../src/kit/plugin.js';
import { HibernateClient } from '../../../src/families/hibernate/client.js';
import { KvClient } from '../../../src/families/kv/client.js';
import { RangeClient } from '../../../src/families/range/client.js';
import { FAMILIES } from '../../../src/families/registry.js';
import { OPS, type Item } from '../../../src/protocol/index.js';
import { loadPlugins } from '../../../src/server/front/plugin-part.js';
import { ADMIN_PATHS } from '../../../src/server/admin/membership.js';
import { startServer, stopServer } from '../../support/member.js';

const UNIT = '/users/alice';
let unitNewest = 0;
const BOOKMARKS = '/users/alice/bookmarks';

// ---------------------------------------------------------------- a freeze in the middle of a request

/** The next access to this path (with this use) freezes its unit, after hibernation's guard let it through. */
let freezeAt: { path: string; use: PathAccess['use'] } | null = null;
let freezesMidFlight = 0;
/** The freezer's own connection: hibernate.freeze, sent while the probe's request waits in the guard. */
let freezerClient: VeraClient | null = null;

const midFlightFreezer: PluginPathGuard = {
  before: async (access) => {
    if (freezeAt === null || access.path !== freezeAt.path || access.use !== freezeAt.use) return false;
    freezeAt = null;
    const r = await new HibernateClient(freezerClient!).freeze(UNIT);
    if (r.frozen === true) freezesMidFlight++;
    return false;
  },
  refuses: () => false,
  entriesAt: async () => null,
  childrenOf: () => [],
  listsAt: async function* () {},
};
const freezerPlugin: Plugin<Record<string, never>, null> = {
  ops: {},
  needs: {},
  touchesNoLists: 'it has no ops, only a path guard',
  createServer: () => ({ handlers: {}, pathGuard: midFlightFreezer }),
};
const freezer = pluginOnlyFamily('test-freezer', async () => freezerPlugin);

// ---------------------------------------------------------------- the probes

interface Ctx {
  readonly client: VeraClient;
  readonly httpUrl: string;
  readonly range: RangeClient;
  readonly kv: KvClient;
}

const json = (x: unknown): string => JSON.stringify(x);
const items = (r: { items?: readonly Item[] }): string => json(r.items);

async function allPaths(range: RangeClient, prefix: string, limit: number): Promise<string> {
  const out: unknown[] = [];
  let after: string | undefined;
  for (let pages = 0; pages < 50; pages++) {
    const page = await range.paths(prefix, { limit, ...(after === undefined ? {} : { after }) });
    out.push(...page.paths);
    if (page.next === undefined) return json(out);
    after = page.next;
  }
  throw new Error('range.paths did not end');
}

async function allItems(range: RangeClient, path: string, consistency?: 'stale'): Promise<string> {
  const out: unknown[] = [];
  let after = 0;
  for (;;) {
    const page = await range.items(path, { limit: 2, after, ...(consistency === undefined ? {} : { stale: true }) });
    out.push(...page.items);
    if (page.next === undefined) return json(out);
    after = page.next;
  }
}

async function httpItems(ctx: Ctx, path: string, consistency: 'stale' | 'linearizable'): Promise<string> {
  const res = await fetch(`${ctx.httpUrl}/v1/data${path}?consistency=${consistency}`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /v1/data${path}: ${res.status} ${text}`);
  // The bytes of the items as sent; the index before them is the read's own.
  return json(text.slice(text.indexOf('"items"')));
}

/** What a read path shows of the unit: compared, byte for byte, with the same read of the hot unit. */
interface ReadProbe {
  readonly read: (ctx: Ctx) => Promise<string>;
  /** The access whose guard pass the mid-flight freeze follows. */
  readonly at: { path: string; use: PathAccess['use'] };
}

/** A write through one path: the list afterwards, and what it must be given the list before. */
interface WriteProbe {
  readonly list: string;
  readonly write: (ctx: Ctx, before: readonly Item[]) => Promise<{ after: readonly Item[]; expected: readonly Item[] }>;
  readonly at: { path: string; use: PathAccess['use'] };
}

const read = (path: string) => ({ path, use: 'read' as const });

const READS: Record<string, ReadProbe> = {
  'get (streamed)': { read: async ({ client }) => items(await client.get(BOOKMARKS)), at: read(BOOKMARKS) },
  'get (one reply)': { read: async ({ client }) => items(await client.get(BOOKMARKS, { stream: false } as never)), at: read(BOOKMARKS) },
  'get (stale)': { read: async ({ client }) => items(await client.get(UNIT, { consistency: 'stale' })), at: read(UNIT) },
  'get (a path of the unit with no items)': { read: async ({ client }) => items(await client.get(`${UNIT}/nothing`)), at: read(`${UNIT}/nothing`) },
  ls: { read: async ({ client }) => json([(await client.ls('/users')).children, (await client.ls(UNIT)).children, (await client.ls(`${UNIT}/deep`)).children]), at: { path: '/users', use: 'list' } },
  'watch (exact)': {
    read: async ({ client }) => {
      const r = await client.watch(BOOKMARKS);
      await client.unwatch(BOOKMARKS);
      return items(r);
    },
    at: { path: BOOKMARKS, use: 'watch' },
  },
  'watch (prefix)': {
    read: async ({ client }) => {
      const { index: _index, ...r } = await client.watch(UNIT, { prefix: true });
      await client.unwatch(UNIT, { prefix: true });
      return json(r);
    },
    at: { path: UNIT, use: 'watch' },
  },
  'range.paths': {
    read: async ({ range }) => json([await allPaths(range, '/users', 1), await allPaths(range, '/users', 1000), await allPaths(range, UNIT, 2), await allPaths(range, `${UNIT}/deep`, 1), await allPaths(range, '/', 3)]),
    at: { path: '/users', use: 'list' },
  },
  'range.items': { read: async ({ range }) => allItems(range, BOOKMARKS), at: read(BOOKMARKS) },
  'range.items (stale)': { read: async ({ range }) => allItems(range, BOOKMARKS, 'stale'), at: read(BOOKMARKS) },
  'txn (compare only)': {
    // The unit's own list is never written here: its newest index is the one it was given.
    read: async ({ kv }) => json(await kv.txn({ compare: [{ path: `${UNIT}/deep/x`, target: 'exists', value: true }, { path: UNIT, target: 'newest', value: unitNewest }, { path: UNIT, target: 'length', value: 1 }] })),
    at: read(UNIT),
  },
  'GET /v1/data (stale)': { read: (ctx) => httpItems(ctx, BOOKMARKS, 'stale'), at: read(BOOKMARKS) },
  'GET /v1/data (linearizable)': { read: (ctx) => httpItems(ctx, BOOKMARKS, 'linearizable'), at: read(BOOKMARKS) },
};

const WRITES: Record<string, WriteProbe> = {
  push: {
    list: BOOKMARKS,
    write: async ({ client }, before) => {
      const item = await client.push(BOOKMARKS, { pushed: 'while frozen' }, { persistent: true, watch: false });
      return { after: (await client.get(BOOKMARKS)).items, expected: [...before, item] };
    },
    at: { path: BOOKMARKS, use: 'write' },
  },
  delete: {
    list: BOOKMARKS,
    write: async ({ client }, before) => {
      await client.delete(BOOKMARKS, before[0]!.index);
      return { after: (await client.get(BOOKMARKS)).items, expected: before.slice(1) };
    },
    at: { path: BOOKMARKS, use: 'write' },
  },
  put: {
    list: `${UNIT}/deep/x`,
    write: async ({ client, kv }, before) => {
      const r = await kv.put(`${UNIT}/deep/x`, 'put while frozen', { keep: 2, ifLastIndex: before.at(-1)!.index });
      expect(r.deleted).toBe(before.length - 1);
      return { after: (await client.get(`${UNIT}/deep/x`)).items, expected: [...before.slice(-1), r.item] };
    },
    at: { path: `${UNIT}/deep/x`, use: 'write' },
  },
  txn: {
    list: BOOKMARKS,
    write: async ({ client, kv }, before) => {
      const r = await kv.txn({ compare: [{ path: BOOKMARKS, target: 'length', value: before.length }], success: [{ op: 'push', path: BOOKMARKS, data: 'txn', persistent: true }] });
      expect(r.succeeded).toBe(true);
      const pushed = r.results[0]!;
      if (pushed.op !== 'push') throw new Error('the txn pushed nothing');
      return { after: (await client.get(BOOKMARKS)).items, expected: [...before, pushed.item] };
    },
    at: { path: BOOKMARKS, use: 'write' },
  },
};

/** What each op and route is covered by: probes, or why it touches no list. */
const COVERAGE: Record<string, readonly string[] | { readonly untouched: string }> = {
  hello: { untouched: 'opens or resumes a session' },
  ping: { untouched: 'the session only' },
  bye: { untouched: 'ends the session (a session ending in a frozen unit cannot hold items there: a unit with ephemeral items is never frozen)' },
  unwatch: { untouched: 'removes a watch, which lives outside the units' },
  push: ['push'],
  delete: ['delete'],
  get: ['get (streamed)', 'get (one reply)', 'get (stale)', 'get (a path of the unit with no items)'],
  ls: ['ls'],
  watch: ['watch (exact)', 'watch (prefix)'],
  put: ['put'],
  txn: ['txn', 'txn (compare only)'],
  'range.paths': ['range.paths'],
  'range.items': ['range.items', 'range.items (stale)'],
  'hibernate.freeze': { untouched: 'the operator moving a unit to the cold store: the act hibernation is' },
  'hibernate.thaw': { untouched: 'the operator bringing a unit back' },
  'hibernate.units': { untouched: 'lists the units\' records, not lists' },
  'GET /v1/data': ['GET /v1/data (stale)', 'GET /v1/data (linearizable)'],
};
const OWN_BUCKETS = 'reads and writes its family\'s own buckets, never a list';
for (const prefix of ['journal.', 'assign.', 'auth.', 'audit.', 'observe.', 'lease.']) COVERAGE[`${prefix}*`] = { untouched: OWN_BUCKETS };
for (const route of ['/healthz', '/livez', '/readyz', '/metrics', '/v1/challenge', '/v1/status']) COVERAGE[`GET ${route}`] = { untouched: 'the member\'s state, no list' };
COVERAGE['GET /'] = { untouched: 'a redirect to the dashboard (/ui/), which reads through the ops above' };
COVERAGE['GET /v1/snapshot'] = { untouched: 'a backup: carries each Frozen unit\'s cold file (hibernate.test.ts "cold files travel with the state")' };
for (const route of ADMIN_PATHS) COVERAGE[route] = { untouched: 'membership, leader transfer, defrag: the cluster, no list' };

function coverageOf(name: string): readonly string[] | { readonly untouched: string } | undefined {
  return COVERAGE[name] ?? COVERAGE[`${name.slice(0, name.indexOf('.') + 1)}*`];
}

describe('hibernation is transparent on every access path', () => {
  it('every client op and HTTP route is covered by a probe below, or touches no list', async () => {
    const parts = await loadPlugins(FAMILIES);
    // A kit plugin states itself why its ops use no list (Plugin.touchesNoLists), and the server gives them no path uses.
    for (const family of FAMILIES) {
      if (family.plugin === undefined) continue;
      const plugin = await family.plugin();
      // An op that declares the lists it touches (Plugin.touches) is covered by its probes below.
      for (const [key, schema] of Object.entries(plugin.ops as Record<string, { readonly name: string }>)) {
        if (plugin.touches?.[key] === undefined) COVERAGE[schema.name] = { untouched: plugin.touchesNoLists };
      }
    }
    const core = [...readFileSync(new URL('../../../src/server/http/http-api.ts', import.meta.url), 'utf8').matchAll(/(?:pathname|path) === '(\/[^']*)'/g)].map((m) => `GET ${m[1]}`);
    expect(core).toContain('GET /v1/data');
    // A family's HTTP route can only name one of its ops (FamilyHttpRoute), which is in the list itself.
    const names = [...OPS, ...parts.familyOps.keys(), ...core, ...ADMIN_PATHS];
    const missing = names.filter((n) => coverageOf(n) === undefined);
    expect(missing, 'ops or routes without a hibernation transparency probe or a reason they touch no list').toEqual([]);
    // Every probe named exists, and every probe is named.
    const named = Object.values(COVERAGE).flatMap((c) => ('untouched' in c ? [] : [...c]));
    expect([...named].sort()).toEqual([...Object.keys(READS), ...Object.keys(WRITES)].sort());
  });

  let ctx: Ctx;
  let hib: HibernateClient;
  beforeAll(async () => {
    const started = await startServer({ families: [...FAMILIES, freezer] });
    const { client } = started;
    ctx = { client, httpUrl: started.url.replace('ws://', 'http://'), range: new RangeClient(client), kv: new KvClient(client) };
    hib = new HibernateClient(client);
    freezerClient = await connect(started.url, { timeoutMs: 10_000 });
    const put = (path: string, data: unknown): Promise<Item> => client.push(path, data, { persistent: true, watch: false });
    unitNewest = (await put(UNIT, { name: 'alice', tags: ['a', 'é', '✓'], n: 1.5 })).index;
    for (const d of ['b1', 2, { deep: { x: [null, true] } }]) await put(BOOKMARKS, d);
    for (const d of ['x1', 'x2']) await put(`${UNIT}/deep/x`, d);
    // Neighbours that sort among the unit's lists ('-' before '/'), and one unit that stays hot.
    await put('/users/alice-b', 'hot neighbour');
    await put('/users/bob', 'bob');
  });
  afterAll(async () => {
    await freezerClient?.close();
    await stopServer();
  });

  async function ensureHot(): Promise<void> {
    await hib.thaw(UNIT);
  }
  async function ensureFrozen(): Promise<void> {
    const r = await hib.freeze(UNIT);
    expect(r.frozen || r.why === 'frozen').toBe(true);
  }

  for (const mode of ['frozen before the request', 'frozen while the request is in flight'] as const) {
    describe(mode, () => {
      for (const [name, probe] of Object.entries(READS)) {
        it(`${name} reads what it read while the unit was hot`, async () => {
          await ensureHot();
          const hot = await probe.read(ctx);
          const frozenBefore = freezesMidFlight;
          if (mode === 'frozen before the request') await ensureFrozen();
          else freezeAt = probe.at;
          const got = await probe.read(ctx);
          expect(JSON.parse(got)).toEqual(JSON.parse(hot));
          expect(got).toBe(hot);
          if (mode !== 'frozen before the request') expect(freezesMidFlight).toBe(frozenBefore + 1);
        });
      }
      for (const [name, probe] of Object.entries(WRITES)) {
        it(`${name} changes the frozen list as it would have changed the hot one`, async () => {
          await ensureHot();
          const before = (await ctx.client.get(probe.list)).items;
          const frozenBefore = freezesMidFlight;
          if (mode === 'frozen before the request') await ensureFrozen();
          else freezeAt = probe.at;
          const { after, expected } = await probe.write(ctx, before);
          expect(json(after)).toBe(json(expected));
          if (mode !== 'frozen before the request') expect(freezesMidFlight).toBe(frozenBefore + 1);
        });
      }
    });
  }
});
