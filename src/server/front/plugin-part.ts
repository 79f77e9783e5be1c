// How the server runs the families' server sides, each a kit plugin (src/kit/plugin.ts,
// loaded on demand through Family.plugin, so the store kernel never loads server code):
// its op schemas become protocol ops with their permission needs and list uses, and its
// instance's handlers, core ops, duties, HTTP routes, applied hook, metrics, path guard
// and answers to the connection are gathered, once per member, by loadPlugins. The
// instance is made then, with a host (plugin-host.ts) bound to the member's front end once
// it is built (PluginParts.bind): the server calls the instance as the kit declares it.
import { buildersOf, OPS, typedRequest, type AnyOpSchema, type FamilyRequest, type FamilyResult, type ProtocolExtensions, type RequestBuilder } from '../../protocol/index.js';
import type { AnyPlugin, CoreOp, CoreOpHandler, PathAccess, PluginConnection, PluginDuty, PluginPathGuard, PluginRoute, PluginServer, RunsOn } from '../../kit/plugin.js';
import type { AnyFamily } from '../../statemachine/family.js';
import type { ApplyOutcome } from '../../statemachine/types.js';
import { LEGACY_OPS } from '../../families/registry.js';
import type { FrontEnd } from './context.js';
import type { Need, Principal } from '../guard/access.js';
import { Binding, hostOf } from './plugin-host.js';

// What an access does with a path, a stored list entry, a live session: the kit's.
export type { LiveSession, PathAccess, PathUse, StoredEntry } from '../../kit/plugin.js';

/** An op a family adds to the protocol: how its request is checked, what it needs and touches, and how it is answered. */
export interface FamilyOp {
  readonly build: RequestBuilder;
  /**
   * What the request touches, judged before it runs (src/server/guard/access.ts): every op
   * says, so no op of any family can be served unchecked.
   */
  readonly needs: (request: FamilyRequest) => readonly Need[];
  /** The lists at paths the request uses and how, for the path guards (path-guard.ts); none for an op of `touchesNoLists`. */
  readonly touches: (request: FamilyRequest) => readonly PathAccess[];
  readonly handle: (call: FamilyOpCall) => Promise<FamilyResult>;
  /** Where it runs once every member serves clients (Plugin.runsOn; the leader unless the plugin says otherwise). */
  readonly runsOn: RunsOn;
}

export interface FamilyOpCall {
  readonly session: string;
  readonly request: FamilyRequest;
  readonly frameBytes: number;
  /** Who asks (judged already against the op's needs): what a read shows is filtered by it. */
  readonly principal: Principal;
  /** The client's address, as the audit log names it. */
  readonly remote: string;
}

/** The core protocol ops the families answer (all but hello, ping and get), as the kit types them. */
export type CoreOps = { readonly [O in CoreOp]?: CoreOpHandler<O> };

/**
 * What a client connection asks about its session, answered by whichever families keep
 * it (sessions, lease, cluster, watches, lag: PluginServer.connection and resumeRefusal),
 * so the connection imports no family. A member no family gives answers "nothing kept".
 */
export interface ConnectionSeam extends PluginConnection {
  /** Why a hello may not resume the live session `id` (a family holds it for its own use), or null. */
  resumeRefusal(id: string): string | null;
  attach(session: string, member: string): Promise<void>;
}

const NOTHING_KEPT: ConnectionSeam = {
  session: () => undefined,
  sessionCount: () => 0,
  resumeRefusal: () => null,
  resumeTokensSince: Number.POSITIVE_INFINITY,
  holdersSince: Number.POSITIVE_INFINITY,
  activeVersion: () => 0,
  // Never called: with no family recording holders, holdersSince is never reached.
  attach: async () => undefined,
  settleVersion: async () => undefined,
  watchesOf: () => [],
  ackedInLog: () => 0,
};

/** One family's plugin as the server runs it: its instance's members, gathered with the others' by loadPlugins. */
export interface PluginPart {
  /** Ops this family adds to the protocol. */
  readonly protocolOps: Readonly<Record<string, FamilyOp>>;
  /** Core protocol ops this family answers. */
  readonly ops: CoreOps;
  readonly duties: readonly PluginDuty[];
  readonly http: readonly PluginRoute[];
  /** Sees the outcome of every entry this member applies, in log order, once it is in the db. Must not throw or block. */
  readonly onApplied?: (outcome: ApplyOutcome) => void;
  readonly metrics?: () => Promise<string>;
  readonly pathGuard?: PluginPathGuard;
  readonly connection?: Partial<ConnectionSeam>;
  /** Throws when a proposal of `what` needing command version `required` may not be made yet (one family at most: cluster). */
  readonly versionGate?: (what: string, required: number) => void;
  /** Ties the instance's host to the member's front end, once it is built; before any op, duty or hook. */
  bind(fe: FrontEnd): void;
  /** Releases what the instance holds for its member (timers, waiters) when the server closes. */
  readonly close?: () => void;
}

type AnyInstance = PluginServer<Record<string, AnyOpSchema>>;

function protocolOpsOf(plugin: AnyPlugin, instance: AnyInstance): Record<string, FamilyOp> {
  const schemas = Object.entries(plugin.ops as Record<string, AnyOpSchema>);
  // A needs or touches entry for no op is a misspelt one: its op would go unjudged or unguarded.
  for (const [what, table] of [['needs', plugin.needs], ['touches', plugin.touches ?? {}], ['runsOn', plugin.runsOn ?? {}]] as const) {
    for (const key of Object.keys(table)) if (!Object.hasOwn(plugin.ops, key)) throw new Error(`the plugin declares ${what} for ${key}, which is none of its ops`);
  }
  const builders = buildersOf(schemas.map(([, schema]) => schema));
  const protocolOps: Record<string, FamilyOp> = {};
  for (const [key, schema] of schemas) {
    const needs = plugin.needs[key] as ((request: object) => ReturnType<FamilyOp['needs']>) | undefined;
    const touches = plugin.touches?.[key] as ((request: object) => readonly PathAccess[]) | undefined;
    const handler = instance.handlers[key];
    const runsOn: unknown = plugin.runsOn?.[key] ?? 'leader';
    if (runsOn !== 'leader' && runsOn !== 'anywhere') throw new Error(`the plugin says ${schema.name} runs on ${String(runsOn)}, neither 'leader' nor 'anywhere'`);
    // The types demand both; checked here too, so no op is ever served unjudged (docs/security.md).
    if (typeof needs !== 'function') throw new Error(`the plugin declares no needs for ${schema.name}`);
    if (handler === undefined) throw new Error(`the plugin's instance has no handler for ${schema.name}`);
    protocolOps[schema.name] = {
      build: builders.get(schema.name)!,
      needs: (request) => needs(typedRequest(schema, request)),
      // Declared by the plugin: the lists the op uses, or none (touchesNoLists) and no path guard has anything to do.
      touches: touches === undefined ? () => [] : (request) => touches(typedRequest(schema, request)),
      handle: async (call) => {
        const result = await handler(typedRequest(schema, call.request), { session: call.session, user: call.principal, remote: call.remote, frameBytes: call.frameBytes });
        return result as Readonly<Record<string, unknown>>;
      },
      runsOn,
    };
  }
  return protocolOps;
}

/**
 * The instance's answers to the connection, with a family's hold on a session (resumeRefusal).
 * Read member by member, not spread: an answer may be a method of a class (not an own
 * property) or left undefined, and neither may silently fall back to "no family keeps it".
 */
function connectionOf(instance: AnyInstance): Partial<ConnectionSeam> | undefined {
  const seam: Partial<Record<keyof ConnectionSeam, unknown>> = {};
  const answers = instance.connection as Readonly<Record<string, unknown>> | undefined;
  if (answers !== undefined) {
    for (const key of Object.keys(NOTHING_KEPT) as Array<keyof ConnectionSeam>) {
      const answer = answers[key];
      if (answer !== undefined) seam[key] = typeof answer === 'function' ? answer.bind(answers) : answer;
    }
  }
  const { resumeRefusal } = instance;
  if (resumeRefusal !== undefined) seam.resumeRefusal = (session: string) => resumeRefusal.call(instance, session);
  return Object.keys(seam).length === 0 ? undefined : (seam as Partial<ConnectionSeam>);
}

/** The server part of `family`, whose server side is `plugin`: the member's instance, made here. */
export function pluginPart(family: AnyFamily, plugin: AnyPlugin): PluginPart {
  const binding = new Binding(family.name);
  const instance = plugin.createServer(hostOf(binding, family)) as AnyInstance;
  const { applied, metrics, close, versionGate, pathGuard } = instance;
  const connection = connectionOf(instance);
  // The first four families answer no FamilySuccess: their applied value is their own result.
  const legacy = [...LEGACY_OPS.values()].includes(family);
  return {
    protocolOps: protocolOpsOf(plugin, instance),
    ops: instance.coreOps ?? {},
    duties: instance.duties ?? [],
    http: instance.http ?? [],
    ...(applied === undefined
      ? {}
      : {
          onApplied: (outcome: ApplyOutcome) => {
            const r = outcome.result;
            let value: unknown = null;
            // A first family's op added since (sessions' attachSession) answers a family result, as every newer op does.
            if (r.ok && r.op === 'family') value = r.family === family.name ? r.value : null;
            else if (r.ok && legacy) value = LEGACY_OPS.get(r.op) === family ? r : null;
            applied.call(instance, outcome.index, value);
          },
        }),
    ...(metrics === undefined ? {} : { metrics: () => metrics.call(instance) }),
    ...(pathGuard === undefined ? {} : { pathGuard }),
    ...(connection === undefined ? {} : { connection }),
    ...(versionGate === undefined ? {} : { versionGate: (what: string, required: number) => versionGate.call(instance, what, required) }),
    bind: (fe) => binding.bind(fe),
    ...(close === undefined ? {} : { close: () => close.call(instance) }),
  };
}

export interface PluginParts {
  readonly ops: CoreOps;
  /** The ops families added, for the frame decoder. */
  readonly extensions: ProtocolExtensions;
  readonly familyOps: ReadonlyMap<string, FamilyOp>;
  readonly duties: readonly PluginDuty[];
  readonly appliedHooks: ReadonlyArray<(outcome: ApplyOutcome) => void>;
  readonly http: readonly PluginRoute[];
  readonly metrics: ReadonlyArray<() => Promise<string>>;
  readonly pathGuards: readonly PluginPathGuard[];
  readonly connection: ConnectionSeam;
  /** The family's check of every proposal against the cluster's command version (none: every proposal passes). */
  readonly versionGate: (what: string, required: number) => void;
  /** Ties every instance's host to the member's front end, right after it is built. */
  bind(fe: FrontEnd): void;
  /** Closes every instance, newest family first, when the server closes. */
  close(): void;
}

/**
 * Every registered family's plugin, each made into this member's instance. An op answered
 * by two families, or a family op named like a core op, is an error.
 */
export async function loadPlugins(families: readonly AnyFamily[]): Promise<PluginParts> {
  const ops: Record<string, unknown> = {};
  const familyOps = new Map<string, FamilyOp>();
  const duties: PluginDuty[] = [];
  const appliedHooks: Array<(outcome: ApplyOutcome) => void> = [];
  const http: PluginRoute[] = [];
  const metrics: Array<() => Promise<string>> = [];
  const pathGuards: PluginPathGuard[] = [];
  const connection: Partial<Record<keyof ConnectionSeam, unknown>> = {};
  let versionGate: PluginPart['versionGate'];
  const core: ReadonlySet<string> = new Set(OPS);
  // All at once: the module loader reads and compiles the plugins side by side, and a starting member waits on them.
  // The old front-end server part is gone: a family (or a test's fixture) still declaring one would otherwise be served nothing, silently.
  for (const family of families) if ('server' in family) throw new Error(`the ${family.name} family declares server(), which no longer exists: its server side is a kit plugin (plugin())`);
  const parts = await Promise.all(families.map(async (family) => (family.plugin === undefined ? undefined : pluginPart(family, await family.plugin()))));
  for (const [i, family] of families.entries()) {
    const part = parts[i];
    if (part === undefined) continue;
    for (const [op, handler] of Object.entries(part.ops)) {
      if (op in ops) throw new Error(`client op ${op} is answered by two families (the second is ${family.name})`);
      ops[op] = handler;
    }
    for (const [op, spec] of Object.entries(part.protocolOps)) {
      if (core.has(op)) throw new Error(`${family.name} adds an op named ${op}, which is a core op`);
      if (familyOps.has(op)) throw new Error(`client op ${op} is answered by two families (the second is ${family.name})`);
      familyOps.set(op, spec);
    }
    duties.push(...part.duties);
    if (part.onApplied !== undefined) appliedHooks.push(part.onApplied);
    for (const route of part.http) {
      if (!route.prefix.startsWith('/v1/') || http.some((r) => r.prefix === route.prefix)) throw new Error(`${family.name} adds the HTTP prefix ${route.prefix}, which is taken or not under /v1/`);
      http.push(route);
    }
    if (part.metrics !== undefined) metrics.push(part.metrics);
    if (part.pathGuard !== undefined) pathGuards.push(part.pathGuard);
    if (part.versionGate !== undefined) {
      if (versionGate !== undefined) throw new Error(`the proposals' version gate is kept by two families (the second is ${family.name})`);
      versionGate = part.versionGate;
    }
    for (const [key, value] of Object.entries(part.connection ?? {})) {
      if (key in connection) throw new Error(`the connection's ${key} is answered by two families (the second is ${family.name})`);
      connection[key as keyof ConnectionSeam] = value;
    }
  }
  const extensions = new Map([...familyOps].map(([op, spec]) => [op, spec.build]));
  const loaded = parts.filter((p) => p !== undefined);
  return {
    ops: ops as CoreOps,
    extensions,
    familyOps,
    duties,
    appliedHooks,
    http,
    metrics,
    pathGuards,
    connection: { ...NOTHING_KEPT, ...connection } as ConnectionSeam,
    versionGate: versionGate ?? (() => undefined),
    bind: (fe) => {
      for (const part of loaded) part.bind(fe);
    },
    close: () => {
      for (const part of [...loaded].reverse()) part.close?.();
    },
  };
}
