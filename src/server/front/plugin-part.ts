// Runs a kit plugin (src/kit/plugin.ts) as a server part: its op schemas become
// the family's protocol ops, its needs the permission checks, and its instance's
// handlers, duties, HTTP routes, applied hook, metrics, path guard, resume refusal and close the
// part's. The server loads its parts once per member (loadServerParts), so the
// part makes the member's one instance then, with a host that the member's front
// end is bound to once it is built (ServerPart.bind). The FamilyHost is the only
// view of the front end a plugin gets.
import { buildersOf, typedRequest, VeraError, type AnyOpSchema, type ErrorCode } from '../../protocol/index.js';
import type { AnyPlugin, CoreOp, CoreOpHandler, FamilyHost, PluginConnection, PluginServer } from '../../kit/plugin.js';
import type { AnyFamily } from '../../statemachine/family.js';
import { CloseCode, notLeaderError, type FrontEnd } from './context.js';
import { exposureProblem } from '../guard/exposure.js';
import { suppressedWhat } from '../guard/audit-queue.js';
import { childrenOf, listEntries, listsHeldAt } from '../guard/path-guard.js';
import { proposeTimed, type ConnectionSeam, type FamilyHttpRoute, type FamilyOp, type FamilyOpCall, type LeaderDuty, type OpHandlers, type PathAccess, type PathGuard, type ServerPart } from './family-part.js';
import type { AnyCommand } from '../../families/core-commands.js';
import type { ApplyOutcome, ApplySuccess } from '../../statemachine/types.js';
import { COMMAND_VERSION, LEGACY_OPS } from '../../families/registry.js';
import type { ChangeEvent } from '../../protocol/index.js';

/** A family's own section of the server's configuration, by family name. */
function settingsOf(fe: FrontEnd, family: string): unknown {
  return family === 'hibernate' ? fe.hibernation : null;
}

/** The front end a host serves, bound once; a plugin that calls its host from createServer is told so. */
class Binding {
  private fe: FrontEnd | null = null;

  constructor(private readonly family: string) {}

  bind(fe: FrontEnd): void {
    if (this.fe !== null && this.fe !== fe) throw new Error(`the ${this.family} plugin's instance serves one member; it was bound to another front end`);
    this.fe = fe;
  }

  get(): FrontEnd {
    if (this.fe === null) throw new Error(`the ${this.family} plugin called its host before the member was open (from createServer?)`);
    return this.fe;
  }
}

type ProposeOutcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly code: ErrorCode; readonly message: string };

function hostOf(binding: Binding, family: AnyFamily): FamilyHost<unknown> {
  const fe = (): FrontEnd => binding.get();
  // One path for propose, proposeOutcome and proposeTo: the first four families' commands name
  // no family (their entries never did: docs/architecture.md), every later one is tagged. A
  // legacy command's value is its result as the kernel gives it (those families answer no FamilySuccess).
  const isLegacy = (name: string, op: string): boolean => LEGACY_OPS.get(op)?.name === name;
  const send = (name: string, command: { readonly op: string }, legacy: boolean): Promise<ApplyOutcome> =>
    proposeTimed(fe(), (legacy ? command : { ...command, family: name }) as unknown as AnyCommand);
  const successValue = (name: string, legacy: boolean, result: ApplySuccess): unknown => {
    if (legacy) return result;
    if (result.op !== 'family' || result.family !== name) throw new VeraError('INTERNAL', `a ${name} command applied as ${result.op}`);
    return result.value;
  };
  const proposeOutcomeAs = async (name: string, command: { readonly op: string }): Promise<ProposeOutcome> => {
    const legacy = isLegacy(name, command.op);
    const { result } = await send(name, command, legacy);
    if (!result.ok) return { ok: false, code: result.code, message: result.message };
    return { ok: true, value: successValue(name, legacy, result) };
  };
  // Throws the refusal itself, awaiting the proposal once: a push is proposed so.
  const proposeAs = async (name: string, command: { readonly op: string }): Promise<unknown> => {
    const legacy = isLegacy(name, command.op);
    const { result } = await send(name, command, legacy);
    if (!result.ok) throw new VeraError(result.code, result.message);
    return successValue(name, legacy, result);
  };
  const logger = (): FrontEnd['logger'] => fe().logger.child({ family: family.name });
  return {
    propose: (command) => proposeAs(family.name, command),
    proposeOutcome: (command) => proposeOutcomeAs(family.name, command),
    proposeTo: (name, command) => proposeAs(name, command),
    barrier: () => fe().node.linearizableBarrier(fe().readTimeoutMs),
    state: () => fe().node.stateMachine.stateOf(family),
    readNow: (what, read) => fe().node.stateMachine.readNow(what, read),
    linearizableNow: () => fe().node.linearizableNow(),
    countLeaseRead: () => fe().node.countLeaseRead(),
    get reader() {
      return fe().node.stateMachine;
    },
    now: () => fe().node.stateMachine.clock,
    appliedIndex: () => fe().node.stateMachine.appliedIndex,
    // Answered by the family that keeps it (cluster), through the seam the connection asks too.
    commandVersion: () => fe().connectionSeam.activeVersion(fe()),
    get limits() {
      return fe().limits;
    },
    get userLimits() {
      const { items, bytes, sessions } = fe().guard.meter.limits;
      return { items, bytes, sessions };
    },
    member: {
      status: () => {
        const st = fe().node.status();
        return { ...st, applied: fe().node.appliedIndex, voters: st.config.voters, learners: st.config.learners };
      },
      clientUrl: (id) => fe().clientUrl(id),
      connected: (session) => fe().connections.has(session),
      ackedIndex: (session) => fe().notifier.ackedIndex(session),
      takeUnwrittenAcks: () => fe().notifier.takeUnwrittenAcks(),
      endConnection: (session) => {
        fe().notifier.forgetSession(session);
        const connection = fe().connections.get(session);
        if (connection === undefined) return;
        fe().connections.delete(session);
        connection.close(CloseCode.sessionEnded, 'session ended');
      },
      // The event log holds the lists family's events, which are the protocol's ChangeEvent on the wire.
      eventsOf: (path, prefix, after, through, maxBytes, visible) => fe().node.events.eventsOf(path, prefix, after, through, maxBytes, visible) as ChangeEvent[] | null,
      commandVersions: () => ({ build: COMMAND_VERSION, peers: fe().peerCommandVersions }),
      waitApplied: (index) => fe().node.waitApplied(index),
    },
    sessionClocks: {
      track: (session, timeoutMs) => fe().expiry.track(session, timeoutMs),
      touch: (session) => fe().expiry.touch(session),
      has: (session) => fe().expiry.has(session),
      remainingMs: (session) => fe().expiry.remainingMs(session),
      remove: (session) => fe().expiry.remove(session),
      sessions: () => fe().expiry.sessions(),
      get size() {
        return fe().expiry.size;
      },
      takeDue: () => fe().expiry.takeDue(),
      retry: (session) => fe().expiry.retry(session),
      clear: () => fe().expiry.clear(),
      countOpened: () => fe().metrics.sessionsOpened.inc(),
      countExpired: () => fe().metrics.expirations.inc(),
    },
    admitWrite: (bytes) => fe().disk.admit(bytes),
    lists: {
      entries: (db, snapshot, path, after) => listEntries(fe(), db, snapshot, path, after),
      heldAt: (db, snapshot, prefix, after) => listsHeldAt(fe(), db, snapshot, prefix, after),
      childrenOf: (path) => childrenOf(fe(), path),
    },
    access: {
      mayRead: (user, path) => fe().guard.mayRead(user, path),
      maySeeBelow: (user, path) => fe().guard.maySeeBelow(user, path),
      mayWatch: (user, path) => fe().guard.mayWatch(user, path),
      authenticate: (user, password, remote) => fe().guard.authenticate({ user, password }, remote, Date.now()),
      exposedWithoutAuth: () => exposureProblem({ client: fe().clientAddress, insecure: fe().insecure }, false),
      reviewConnections: () => {
        for (const connection of fe().connections.values()) connection.reviewAccess?.();
      },
      takeAuditFacts: (max) => {
        const guard = fe().guard;
        const taken = guard.takeAuditFacts(max);
        return { facts: taken.facts, suppressed: suppressedWhat(taken.suppressed), giveBack: () => guard.returnAuditFacts(taken) };
      },
    },
    settings: () => settingsOf(fe(), family.name),
    isLeader: () => fe().isLeader(),
    notLeader: () => notLeaderError(fe()),
    log: {
      debug: (fields, msg) => logger().debug(fields, msg),
      info: (fields, msg) => logger().info(fields, msg),
      warn: (fields, msg) => logger().warn(fields, msg),
      error: (fields, msg) => logger().error(fields, msg),
    },
  };
}

function protocolOpsOf(plugin: AnyPlugin, instance: PluginServer<Record<string, AnyOpSchema>>, bind: (fe: FrontEnd) => void): Record<string, FamilyOp> {
  const schemas = Object.entries(plugin.ops as Record<string, AnyOpSchema>);
  const builders = buildersOf(schemas.map(([, schema]) => schema));
  const protocolOps: Record<string, FamilyOp> = {};
  for (const [key, schema] of schemas) {
    const needs = plugin.needs[key] as (request: object) => ReturnType<FamilyOp['needs']>;
    const touches = plugin.touches?.[key] as ((request: object) => readonly PathAccess[]) | undefined;
    const handler = instance.handlers[key];
    if (handler === undefined) throw new Error(`the plugin's instance has no handler for ${schema.name}`);
    protocolOps[schema.name] = {
      build: builders.get(schema.name)!,
      needs: (request) => needs(typedRequest(schema, request)),
      // Declared by the plugin: the lists the op uses, or none (touchesNoLists) and no path guard has anything to do.
      touches: touches === undefined ? () => [] : (request) => touches(typedRequest(schema, request)),
      handle: async (call: FamilyOpCall) => {
        bind(call.fe);
        const result = await handler(typedRequest(schema, call.request), { session: call.session, user: call.principal, remote: call.remote, frameBytes: call.frameBytes });
        return result as Readonly<Record<string, unknown>>;
      },
    };
  }
  return protocolOps;
}

/** The core ops the instance answers, as the connection calls them (its call carries the session and frame size a caller needs). */
function coreOpsOf(instance: PluginServer<Record<string, AnyOpSchema>>, bind: (fe: FrontEnd) => void): OpHandlers {
  const ops: Record<string, unknown> = {};
  for (const [op, handler] of Object.entries(instance.coreOps ?? {}) as Array<[CoreOp, CoreOpHandler<CoreOp>]>) {
    ops[op] = (call: { readonly fe: FrontEnd; readonly request: never; readonly session: string; readonly frameBytes: number }) => (bind(call.fe), handler(call.request, call));
  }
  return ops as OpHandlers;
}

/** The instance's answers to the connection (and a family's hold on a session, resumeRefusal), as the seam asks them. */
function connectionOf(instance: PluginServer<Record<string, AnyOpSchema>>, bind: (fe: FrontEnd) => void): Partial<ConnectionSeam> | undefined {
  const c: Partial<PluginConnection> = instance.connection ?? {};
  const { resumeRefusal } = instance;
  const seam: Partial<ConnectionSeam> = {
    ...(c.session === undefined ? {} : { session: (fe: FrontEnd, id: string) => (bind(fe), c.session!(id)) }),
    ...(c.sessionCount === undefined ? {} : { sessionCount: (fe: FrontEnd) => (bind(fe), c.sessionCount!()) }),
    ...(c.resumeTokensSince === undefined ? {} : { resumeTokensSince: c.resumeTokensSince }),
    ...(c.activeVersion === undefined ? {} : { activeVersion: (fe: FrontEnd) => (bind(fe), c.activeVersion!()) }),
    ...(c.settleVersion === undefined ? {} : { settleVersion: (fe: FrontEnd, version: number, timeoutMs: number) => (bind(fe), c.settleVersion!(version, timeoutMs)) }),
    ...(c.watchesOf === undefined ? {} : { watchesOf: (fe: FrontEnd, session: string) => (bind(fe), c.watchesOf!(session)) }),
    ...(c.ackedInLog === undefined ? {} : { ackedInLog: (fe: FrontEnd, session: string) => (bind(fe), c.ackedInLog!(session)) }),
    ...(resumeRefusal === undefined ? {} : { resumeRefusal: (session: string) => resumeRefusal.call(instance, session) }),
  };
  return Object.keys(seam).length === 0 ? undefined : seam;
}

function pathGuardOf(instance: PluginServer<Record<string, AnyOpSchema>>, bind: (fe: FrontEnd) => void): PathGuard | undefined {
  const guard = instance.pathGuard;
  if (guard === undefined) return undefined;
  return {
    before: (fe, access) => (bind(fe), guard.before(access)),
    refuses: (err) => guard.refuses(err),
    entriesAt: (fe, db, snapshot, path) => (bind(fe), guard.entriesAt(db, snapshot, path)),
    childrenOf: (fe, path) => (bind(fe), guard.childrenOf(path)),
    listsAt: (fe, db, snapshot, prefix, after) => (bind(fe), guard.listsAt(db, snapshot, prefix, after)),
  };
}

/** The server part of `family`, whose server side is `plugin`: the member's instance, made here. */
export function pluginPart(family: AnyFamily, plugin: AnyPlugin): ServerPart {
  const binding = new Binding(family.name);
  const instance = plugin.createServer(hostOf(binding, family)) as PluginServer<Record<string, AnyOpSchema>>;
  const bind = (fe: FrontEnd): void => binding.bind(fe);
  const duties: LeaderDuty[] = (instance.duties ?? []).map((duty) => ({
    name: duty.name,
    periodMs: duty.periodMs,
    start: (fe) => (bind(fe), duty.start?.()),
    tick: (fe) => (bind(fe), duty.tick()),
    stop: (fe) => (bind(fe), duty.stop?.()),
  }));
  const http: FamilyHttpRoute[] = (instance.http ?? []).map((route) => ({
    prefix: route.prefix,
    get: (fe, rest, url) => (bind(fe), route.get(rest, url)),
    ...(route.post === undefined ? {} : { post: (fe: FrontEnd, rest: string, url: URL, body: Readonly<Record<string, unknown>>) => (bind(fe), route.post!(rest, url, body)) }),
  }));
  const { applied, metrics, close, versionGate } = instance;
  const pathGuard = pathGuardOf(instance, bind);
  const connection = connectionOf(instance, bind);
  // The first four families answer no FamilySuccess: their applied value is their own result.
  const legacy = [...LEGACY_OPS.values()].includes(family);
  return {
    protocolOps: protocolOpsOf(plugin, instance, bind),
    ops: coreOpsOf(instance, bind),
    duties,
    http,
    ...(applied === undefined
      ? {}
      : {
          onApplied: (outcome, fe) => {
            bind(fe);
            const r = outcome.result;
            let value: unknown = null;
            if (r.ok && legacy) value = LEGACY_OPS.get(r.op) === family ? r : null;
            else if (r.ok && r.op === 'family' && r.family === family.name) value = r.value;
            applied.call(instance, outcome.index, value);
          },
        }),
    ...(metrics === undefined ? {} : { metrics: (fe: FrontEnd) => (bind(fe), metrics.call(instance)) }),
    ...(pathGuard === undefined ? {} : { pathGuard }),
    ...(connection === undefined ? {} : { connection }),
    ...(versionGate === undefined ? {} : { versionGate: (fe: FrontEnd, what: string, required: number) => (bind(fe), versionGate.call(instance, what, required)) }),
    bind,
    ...(close === undefined ? {} : { close: () => close.call(instance) }),
  };
}
