// The contract a family's server side is written against: a narrow host instead
// of the server's whole front end, typed ops from op schemas instead of untyped
// records, and an instance per member (createServer) instead of module-level
// state. The server adapts a plugin to its own parts (src/server/front/plugin-part.ts);
// a family written this way imports nothing of the server. Importing only
// src/protocol keeps it at the bottom of the import graph, under the families.
import type { AnyOpSchema, FamilyRequest, RequestOfSchema, ResultOfSchema, VeraError } from '../protocol/index.js';

/** A replicated command of the plugin's own family (the host adds the family's name). */
export interface PluginCommand {
  readonly op: string;
  readonly [field: string]: unknown;
}

/** What a permission check is asked: `perm` on `resource` (docs/security.md names the resources). */
export interface PluginNeed {
  readonly perm: 'read' | 'write' | 'watch' | 'admin';
  readonly resource: string;
}

/**
 * What a family's server instance may use of the member it runs on: seven
 * things, each one a job the server already does for every family.
 */
export interface FamilyHost<S> {
  /** Proposes one of this family's commands; resolves with its result once applied here, or throws the refusal as a VeraError. */
  propose(command: PluginCommand): Promise<unknown>;
  /** Waits until this member has applied everything committed before the call (a linearizable read's barrier). */
  barrier(): Promise<void>;
  /** This family's in-memory state, as of the entries applied so far. */
  state(): S;
  /** The replicated clock: the leader's milliseconds in the newest applied entry. */
  now(): number;
  isLeader(): boolean;
  /** The error to answer when the op needs the leader and this member is not it. */
  notLeader(): VeraError;
  readonly log: { info(fields: object, msg: string): void; warn(fields: object, msg: string): void };
}

/** Who calls an op, as the server judged it. */
export interface OpCaller {
  readonly session: string;
  /** The user, or null with authentication off. */
  readonly user: string | null;
  readonly remote: string;
}

export type OpHandler<Schema> = (request: RequestOfSchema<Schema>, caller: OpCaller) => Promise<ResultOfSchema<Schema>>;

/** A plugin's server instance: one per member, made at start, holding all of the family's per-member state. */
export interface PluginServer<Schemas extends Readonly<Record<string, AnyOpSchema>>> {
  readonly handlers: { readonly [K in keyof Schemas]: OpHandler<Schemas[K]> };
  /** Releases what the instance holds (timers, waiters) when the server closes. */
  close?(): void;
}

export interface Plugin<Schemas extends Readonly<Record<string, AnyOpSchema>>, S> {
  /** The family's ops, by a name of the family's choosing. */
  readonly ops: Schemas;
  /** What each op needs of the caller's permissions (every op says, so none is served unchecked). */
  readonly needs: { readonly [K in keyof Schemas]: (request: RequestOfSchema<Schemas[K]>) => readonly PluginNeed[] };
  /**
   * Why none of the family's ops reads or writes a list at a path (so the path guards,
   * hibernation's among them, have nothing to do for them). Plugin ops that touch lists are not supported yet.
   */
  readonly touchesNoLists: string;
  createServer(host: FamilyHost<S>): PluginServer<Schemas>;
}

// biome-ignore lint/suspicious/noExplicitAny: the registry holds plugins of every op set and state
export type AnyPlugin = Plugin<any, any>;

export type { FamilyRequest };
