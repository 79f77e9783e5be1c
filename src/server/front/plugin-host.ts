// The FamilyHost a kit plugin's instance is given (src/kit/plugin.ts): each member a
// job the server already does for every family, answered from the member's front end.
// The instance is made while the server loads its plugins, before the member is open,
// so the host reaches the front end through a Binding set once it is built; the host is
// the only view of the front end a plugin gets.
import { VeraError, type ErrorCode } from '../../protocol/index.js';
import type { FamilyHost } from '../../kit/plugin.js';
import type { AnyFamily } from '../../statemachine/family.js';
import { CloseCode, notLeaderError, type FrontEnd } from './context.js';
import { exposureProblem } from '../guard/exposure.js';
import { suppressedWhat } from '../guard/audit-queue.js';
import { childrenOf, listEntries, listsHeldAt } from '../guard/path-guard.js';
import type { AnyCommand } from '../../families/core-commands.js';
import type { ApplyOutcome, ApplySuccess } from '../../statemachine/types.js';
import { COMMAND_VERSION, LEGACY_OPS } from '../../families/registry.js';
import type { ChangeEvent } from '../../protocol/index.js';

/** A family's own section of the server's configuration, by family name. */
function settingsOf(fe: FrontEnd, family: string): unknown {
  return family === 'hibernate' ? fe.hibernation : null;
}

/** The front end a host serves, bound once; a plugin that calls its host from createServer is told so. */
export class Binding {
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

/**
 * The host of `family`'s instance. Its `leaderOnly` view (the duties') is the same host
 * but for its proposals, which it never forwards (VeraNode.proposeAsLeader).
 */
export function hostOf(binding: Binding, family: AnyFamily): FamilyHost<unknown> {
  const leaderOnly: FamilyHost<unknown> = hostProposing(binding, family, false, () => leaderOnly);
  return hostProposing(binding, family, true, () => leaderOnly);
}

function hostProposing(binding: Binding, family: AnyFamily, forward: boolean, leaderOnly: () => FamilyHost<unknown>): FamilyHost<unknown> {
  const fe = (): FrontEnd => binding.get();
  // One path for propose, proposeOutcome and proposeTo: the first four families' commands name
  // no family (their entries never did: docs/architecture.md), every later one is tagged. A
  // legacy command's value is its result as the kernel gives it (those families answer no FamilySuccess).
  const isLegacy = (name: string, op: string): boolean => LEGACY_OPS.get(op)?.name === name;
  const send = (name: string, command: { readonly op: string }, legacy: boolean): Promise<ApplyOutcome> =>
    proposeTimed(fe(), (legacy ? command : { ...command, family: name }) as unknown as AnyCommand, forward);
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
    commandVersion: () => fe().connectionSeam.activeVersion(),
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
    get leaderOnly() {
      return leaderOnly();
    },
    notLeader: () => notLeaderError(fe()),
    log: {
      debug: (fields, msg) => logger().debug(fields, msg),
      info: (fields, msg) => logger().info(fields, msg),
      warn: (fields, msg) => logger().warn(fields, msg),
      error: (fields, msg) => logger().error(fields, msg),
    },
  };
}

/** Proposes a command, counting it and timing it; `forward: false` never sends it to another member (a duty's). */
async function proposeTimed(fe: FrontEnd, command: AnyCommand, forward: boolean): Promise<ApplyOutcome> {
  const started = performance.now();
  fe.metrics.proposals.inc({ op: command.op });
  let outcome: ApplyOutcome;
  try {
    outcome = await (forward ? fe.node.propose(command) : fe.node.proposeAsLeader(command));
  } catch (err) {
    fe.metrics.proposalsFailed.inc({ op: command.op });
    throw err;
  }
  fe.metrics.proposeLatency.observe((performance.now() - started) / 1000);
  return outcome;
}
