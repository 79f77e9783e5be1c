// What a command family adds to the server: the client ops it answers and the
// duties its leader runs on a timer. A family's folder holds them in server.ts,
// which its Family object loads on demand (`server`), so the store kernel, which
// knows families too, never loads server code. The server gathers every
// registered family's part once at start (loadServerParts).

import type { AnyFamily, DbSnapshot } from '../../statemachine/family.js';
import { OPS, type AnyResult, type FamilyRequest, type FamilyResult, type Op, type ProtocolExtensions, type RequestBuilder, type RequestOf } from '../../protocol/index.js';
import type { ApplyOutcome } from '../../statemachine/index.js';
import type { AnyCommand } from '../../families/core-commands.js';
import type { FrontEnd } from './context.js';
import type { Need, Principal } from '../guard/access.js';
import type { VeraDb } from '../../statemachine/types.js';
import { pluginPart } from './plugin-part.js';
import type { LiveSession, PathAccess, StoredEntry } from '../../kit/plugin.js';

export interface OpCall<O extends Op> {
  readonly fe: FrontEnd;
  /** The session the connection established. */
  readonly session: string;
  readonly request: RequestOf<O>;
  /** The request frame's size: what a write is charged against the disk's free space. */
  readonly frameBytes: number;
}

export type OpHandler<O extends Op> = (call: OpCall<O>) => Promise<AnyResult>;

export type OpHandlers = { readonly [O in Op]?: OpHandler<O> };

/** An op a family adds to the protocol: how its request is checked, and how it is answered. */
export interface FamilyOp {
  readonly build: RequestBuilder;
  /**
   * What the request touches, judged before it runs (src/server/guard/access.ts): every op
   * says, so no op of any family can be served unchecked.
   */
  readonly needs: (request: FamilyRequest) => readonly Need[];
  readonly handle: (call: FamilyOpCall) => Promise<FamilyResult>;
  /**
   * The paths the request uses and how, for the path guards (path-guard.ts); absent: read
   * from `needs` (read, write and watch on a path).
   */
  readonly touches?: (request: FamilyRequest) => readonly PathAccess[];
}

/** Builds a family's protocol ops from its request builders, handlers and needs, refusing an op that lacks one. */
export function familyOps(
  family: string,
  builders: ReadonlyMap<string, RequestBuilder>,
  handlers: Readonly<Record<string, (call: FamilyOpCall) => Promise<FamilyResult>>>,
  needs: Readonly<Record<string, (request: FamilyRequest) => readonly Need[]>>,
  touches: Readonly<Record<string, (request: FamilyRequest) => readonly PathAccess[]>> = {},
): Record<string, FamilyOp> {
  const out: Record<string, FamilyOp> = {};
  for (const [op, build] of builders) {
    const handle = handlers[op];
    const need = needs[op];
    if (handle === undefined || need === undefined) throw new Error(`${family} op ${op} has no ${handle === undefined ? 'handler' : 'needs'}`);
    const touch = touches[op];
    out[op] = { build, handle, needs: need, ...(touch === undefined ? {} : { touches: touch }) };
  }
  for (const op of [...Object.keys(needs), ...Object.keys(touches)]) if (!builders.has(op)) throw new Error(`${family} declares needs or uses for ${op}, which it does not speak`);
  return out;
}

export interface FamilyOpCall {
  readonly fe: FrontEnd;
  readonly session: string;
  readonly request: FamilyRequest;
  readonly frameBytes: number;
  /** Who asks (judged already against the op's needs): what a read shows is filtered by it. */
  readonly principal: Principal;
  /** The client's address, as the audit log names it. */
  readonly remote: string;
}

export interface LeaderDuty {
  /** Also the key of its period in the server's timings. */
  readonly name: string;
  /** Its period (ms) when the server's timings do not name it. */
  readonly periodMs?: number;
  /** Runs once when this member starts leading, before the first tick. */
  readonly start?: (fe: FrontEnd) => void;
  readonly tick: (fe: FrontEnd) => void;
  /** Runs when this member stops leading. */
  readonly stop?: (fe: FrontEnd) => void;
}

/**
 * An HTTP endpoint a family adds on the client port: GET (or POST) `prefix` or below it is
 * turned into one of the family's protocol ops, which the HTTP layer judges and runs
 * like a WebSocket request and answers as JSON.
 */
export interface FamilyHttpRoute {
  /** Starts with /v1/ and names the family, e.g. /v1/journals. */
  readonly prefix: string;
  /** `rest` is the path after the prefix ('' or '/...'); throw a VeraError (NOT_FOUND, BAD_REQUEST) for a target that names no op. */
  readonly get: (fe: FrontEnd, rest: string, url: URL) => FamilyRequest;
  /** POST `prefix` or below it with a JSON object body (at most 64 KiB); absent: GET only. */
  readonly post?: (fe: FrontEnd, rest: string, url: URL, body: Readonly<Record<string, unknown>>) => FamilyRequest;
}

export interface ServerPart {
  /** Core protocol ops this family answers. */
  readonly ops?: OpHandlers;
  /** Ops this family adds to the protocol. */
  readonly protocolOps?: Readonly<Record<string, FamilyOp>>;
  readonly duties?: readonly LeaderDuty[];
  /**
   * Sees the outcome of every entry this member applies, in log order, once it is in
   * the db: how a family tells its own waiters (list changes reach watchers through
   * the notifier instead). Must not throw or block.
   */
  readonly onApplied?: (outcome: ApplyOutcome, fe: FrontEnd) => void;
  readonly http?: readonly FamilyHttpRoute[];
  /** Renders the family's metrics in the Prometheus text format, appended to /metrics. */
  readonly metrics?: (fe: FrontEnd) => Promise<string>;
  /**
   * A rule this family holds over every access to a path (hibernation: a Frozen unit is
   * thawed before a use, and read from its cold file meanwhile): the core runs it on
   * every read, write, watch, listing and resync (path-guard.ts), so no access path has
   * to remember it.
   */
  readonly pathGuard?: PathGuard;
  /**
   * Ties the part to the member's front end, once it is built (a kit plugin's instance gets
   * its host's member here); called once, before any client op, duty or hook.
   */
  readonly bind?: (fe: FrontEnd) => void;
  /** Releases what the part holds for its member (timers, waiters) when the server closes. */
  readonly close?: () => void;
  /** What this family answers a client connection about its session (ConnectionSeam): each member by one family at most. */
  readonly connection?: Partial<ConnectionSeam>;
  /** Throws when a proposal of `what` needing command version `required` may not be made yet (one family at most: cluster). */
  readonly versionGate?: (fe: FrontEnd, what: string, required: number) => void;
}

/**
 * What a client connection asks about its session, answered by whichever families keep
 * it (sessions, lease, cluster, watches, lag) through their parts (ServerPart.connection),
 * so the connection imports no family. A member no family gives answers "nothing kept".
 */
export interface ConnectionSeam {
  /** The live session `id`, or undefined when it expired or never existed. */
  session(fe: FrontEnd, id: string): LiveSession | undefined;
  /** How many sessions are live (what sessionsMax bounds). */
  sessionCount(fe: FrontEnd): number;
  /** Why a hello may not resume the live session `id` (a family holds it for its own use), or null. */
  resumeRefusal(id: string): string | null;
  /** The command version from which a new session records its resume token's hash. */
  readonly resumeTokensSince: number;
  /** The cluster's active command version. */
  activeVersion(fe: FrontEnd): number;
  /** Resolves once `version` is active, or this leader cannot raise it to it, or after `timeoutMs`. */
  settleVersion(fe: FrontEnd, version: number, timeoutMs: number): Promise<void>;
  /** The watches `session` holds, in key order. */
  watchesOf(fe: FrontEnd, session: string): ReadonlyArray<{ readonly path: string; readonly prefix: boolean }>;
  /** The highest notification index `session` acknowledged, as the log records it (0 if none). */
  ackedInLog(fe: FrontEnd, session: string): number;
}

const NOTHING_KEPT: ConnectionSeam = {
  session: () => undefined,
  sessionCount: () => 0,
  resumeRefusal: () => null,
  resumeTokensSince: Number.POSITIVE_INFINITY,
  activeVersion: () => 0,
  settleVersion: async () => undefined,
  watchesOf: () => [],
  ackedInLog: () => 0,
};

// What an access does with a path, and a stored list entry: the kit's (families written on it name them too).
export type { LiveSession, PathAccess, PathUse, StoredEntry } from '../../kit/plugin.js';

export interface PathGuard {
  /**
   * Runs before the access and resolves once it may go on; true when it had to wait.
   * Runs again (and the access is tried again) after the access failed with an error
   * `refuses` claims.
   */
  readonly before: (fe: FrontEnd, access: PathAccess) => Promise<boolean>;
  /** Whether `err` is this guard's refusal, which changed nothing: pass `before` again and try again. */
  readonly refuses: (err: unknown) => boolean;
  /**
   * The entries (key order) of the list at `path` as of `snapshot`, when this family holds
   * them outside the item bucket there; null when the item bucket holds them.
   */
  readonly entriesAt: (fe: FrontEnd, db: VeraDb, snapshot: DbSnapshot, path: string) => Promise<readonly StoredEntry[] | null>;
  /** Names of `path`'s children that lead to lists this family holds outside the item bucket. */
  readonly childrenOf: (fe: FrontEnd, path: string) => readonly string[];
  /**
   * The non-empty lists this family holds outside the item bucket as of `snapshot`, at or
   * below `prefix` and after `after` (when given), in path order (UTF-8 bytes), with their newest index.
   */
  readonly listsAt: (fe: FrontEnd, db: VeraDb, snapshot: DbSnapshot, prefix: string, after: string | undefined) => AsyncIterable<{ readonly path: string; readonly newest: number }>;
}

export interface ServerParts {
  readonly ops: OpHandlers;
  /** The ops families added, for the frame decoder. */
  readonly extensions: ProtocolExtensions;
  readonly familyOps: ReadonlyMap<string, FamilyOp>;
  readonly duties: readonly LeaderDuty[];
  readonly appliedHooks: ReadonlyArray<(outcome: ApplyOutcome, fe: FrontEnd) => void>;
  readonly http: readonly FamilyHttpRoute[];
  readonly metrics: ReadonlyArray<(fe: FrontEnd) => Promise<string>>;
  readonly pathGuards: readonly PathGuard[];
  readonly connection: ConnectionSeam;
  /** The family's check of every proposal against the cluster's command version (none: every proposal passes). */
  readonly versionGate: (fe: FrontEnd, what: string, required: number) => void;
  /** Ties every part to the member's front end (ServerPart.bind), right after it is built. */
  bind(fe: FrontEnd): void;
  /** Closes every part (ServerPart.close), newest family first, when the server closes. */
  close(): void;
}

/**
 * Every registered family's client ops and leader duties. An op answered by two
 * families, or a family op named like a core op, is an error.
 */
export async function loadServerParts(families: readonly AnyFamily[]): Promise<ServerParts> {
  const ops: Record<string, unknown> = {};
  const familyOps = new Map<string, FamilyOp>();
  const duties: LeaderDuty[] = [];
  const appliedHooks: Array<(outcome: ApplyOutcome, fe: FrontEnd) => void> = [];
  const http: FamilyHttpRoute[] = [];
  const metrics: Array<(fe: FrontEnd) => Promise<string>> = [];
  const pathGuards: PathGuard[] = [];
  const connection: Partial<Record<keyof ConnectionSeam, unknown>> = {};
  let versionGate: ServerPart['versionGate'];
  const core: ReadonlySet<string> = new Set(OPS);
  for (const family of families) {
    if (family.server !== undefined && family.plugin !== undefined) throw new Error(`${family.name} has both a server part and a plugin`);
  }
  // All at once: the module loader reads and compiles the parts side by side, and a starting member waits on them.
  const parts = await Promise.all(
    families.map(async (family) => (family.plugin !== undefined ? pluginPart(family, await family.plugin()) : family.server === undefined ? undefined : await family.server())),
  );
  for (const [i, family] of families.entries()) {
    const part = parts[i];
    if (part === undefined) continue;
    for (const [op, handler] of Object.entries(part.ops ?? {})) {
      if (op in ops) throw new Error(`client op ${op} is answered by two families (the second is ${family.name})`);
      ops[op] = handler;
    }
    for (const [op, spec] of Object.entries(part.protocolOps ?? {})) {
      if (core.has(op)) throw new Error(`${family.name} adds an op named ${op}, which is a core op`);
      if (familyOps.has(op)) throw new Error(`client op ${op} is answered by two families (the second is ${family.name})`);
      familyOps.set(op, spec);
    }
    duties.push(...(part.duties ?? []));
    if (part.onApplied !== undefined) appliedHooks.push(part.onApplied);
    for (const route of part.http ?? []) {
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
    ops: ops as OpHandlers,
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
      for (const part of loaded) part.bind?.(fe);
    },
    close: () => {
      for (const part of [...loaded].reverse()) part.close?.();
    },
  };
}

/** Proposes a command, counting it and timing it. */
export async function proposeTimed(fe: FrontEnd, command: AnyCommand): Promise<ApplyOutcome> {
  const started = performance.now();
  fe.metrics.proposals.inc({ op: command.op });
  let outcome: ApplyOutcome;
  try {
    outcome = await fe.node.propose(command);
  } catch (err) {
    fe.metrics.proposalsFailed.inc({ op: command.op });
    throw err;
  }
  fe.metrics.proposeLatency.observe((performance.now() - started) / 1000);
  return outcome;
}
