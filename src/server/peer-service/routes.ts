// Which op runs where once every member serves clients (docs/scale-out.md "Relayed
// ops"), and which replicated commands a member may forward to the leader.
//
// Ops. A core op (docs/protocol.md) is classified here, one by one. A family op runs
// where its plugin says (Plugin.runsOn), at the `leader` unless it says `anywhere`:
// a member relays a leader op's request to the leader (relay.ts), which runs the
// same handler. So stage 1 is correct before any family is reviewed, and a new op
// gets a route without anyone remembering to give it one.
//
// Commands. The leader's desk proposes a member's forward only when the command is
// one a client's request makes (a core op's or a family op's handler, the path
// guards' thaw). What only the leader's own duties propose (an expiry, the command
// version, acknowledgements it gathered) is refused at the desk: such a command is
// right only when the leader judged it, and a member forwarding one (a deposed
// leader's duty finishing late) must not get it into the log.
import type { Op } from '../../protocol/index.js';
import type { RunsOn } from '../../kit/plugin.js';

export type { RunsOn };

/** Each core op, classified explicitly: the compiler asks for a line when the protocol gains an op. */
export const CORE_ROUTES: { readonly [O in Op]: { readonly runsOn: RunsOn; readonly why: string } } = {
  hello: { runsOn: 'anywhere', why: 'opens the session on the member the client reached (its openSession or attachSession is forwarded)' },
  ping: { runsOn: 'anywhere', why: "answered with the member's applied index; acks reach the leader in liveness batches" },
  get: { runsOn: 'anywhere', why: 'a local read (linearizable: after a ReadIndex from the leader)' },
  ls: { runsOn: 'anywhere', why: 'a local read, like get' },
  push: { runsOn: 'anywhere', why: 'proposes lists.push, forwarded; answered from the member’s own apply' },
  delete: { runsOn: 'anywhere', why: 'proposes lists.delete, forwarded' },
  watch: { runsOn: 'anywhere', why: 'proposes watches.watch, forwarded; notifications come from the member’s apply stream' },
  unwatch: { runsOn: 'anywhere', why: 'proposes watches.unwatch, forwarded' },
  bye: { runsOn: 'anywhere', why: "proposes the session's closeSession {reason: 'bye'}, forwarded" },
};

/** What routes need to know of a family op (plugin-part.ts FamilyOp). */
export interface RoutedOp {
  readonly runsOn: RunsOn;
}

/** Where `op` runs: a core op by CORE_ROUTES, a family op by its plugin; undefined for an op nobody answers. */
export function routeOf(op: string, familyOps: ReadonlyMap<string, RoutedOp>): RunsOn | undefined {
  if (Object.hasOwn(CORE_ROUTES, op)) return CORE_ROUTES[op as Op].runsOn;
  return familyOps.get(op)?.runsOn;
}

/** Who proposes a replicated command: a client's request (possibly only in some forms), or the leader's duties alone. */
export type CommandOrigin =
  | {
      readonly from: 'client';
      /** Why this form of the command is the leader's alone, or null: for a command both make (closeSession). */
      readonly leaderForm?: (command: Readonly<Record<string, unknown>>) => string | null;
    }
  | { readonly from: 'leader'; readonly why: string };

const client: CommandOrigin = { from: 'client' };
const leader = (why: string): CommandOrigin => ({ from: 'leader', why });

/**
 * Every command of every family (src/families/registry.ts), by family and op: a family that
 * adds a command adds its line here (test/server/routes.test.ts fails until it does), so no
 * command of a leader's duty can become forwardable by being forgotten.
 */
export const COMMAND_ORIGINS: Readonly<Record<string, Readonly<Record<string, CommandOrigin>>>> = {
  sessions: {
    openSession: client, // hello, lease.grant
    attachSession: client, // a hello resuming the session on another member
    closeSession: {
      from: 'client', // bye, lease.revoke
      leaderForm: (c) => (c.reason === 'expired' ? "an expiry is proposed only by the leader's session-expiry duty, after its leadership check" : null),
    },
  },
  lists: { push: client, delete: client },
  watches: { watch: client, unwatch: client },
  lag: { ack: leader('the ack-flush duty writes the acknowledgements the leader gathered; members send theirs in liveness batches') },
  cluster: { setCommandVersion: leader('the command-version duty raises it once every member advertised the version, which only the leader judges') },
  journal: {
    create: client,
    configure: client,
    drop: client, // journal.drop (the journal-drops duty goes on with one begun)
    add: client, // journal.add; assign's events and purge clean-ups
    claim: client,
    extend: client,
    done: client,
    doneMany: client,
    release: client,
    remove: client,
    pause: client,
    drain: client,
    progress: client,
    schedule: client,
    unschedule: client,
    requeue: client,
    forget: client,
    limits: client,
    expireResults: leader('the journal-result-expiry duty deletes results whose time is up, by the leader’s clock'),
    tick: leader('the journal-schedules duty makes the jobs of schedules that came due, by the leader’s clock'),
    timeout: leader('the journal-timeouts duty returns claims past their timeout, by the leader’s clock'),
    expire: leader('the journal-expiry duty deletes expired items, by the leader’s clock'),
  },
  assign: {
    service: client,
    addNode: client,
    updateNode: client,
    removeNode: client,
    login: client,
    retire: client,
    decommission: client,
    event: client,
    importUsers: client,
    place: client,
    purgeStart: client,
    purge: client,
    purgeStop: {
      from: 'client', // assign.purgeStop
      leaderForm: (c) => (c.error !== undefined ? "a purge job stopped by a failed step is stopped only by the leader's assign-purge duty" : null),
    },
    purgeStep: leader("the assign-purge duty steps a running purge job, one step in flight on the leader"),
  },
  hibernate: {
    // hibernate.freeze and hibernate.thaw, and the path guards' thaw before a use (the idle duty proposes these too).
    freezeUnits: client,
    commitFreeze: client,
    dropHot: client,
    thaw: client,
    thawBegin: client,
    thawStep: client,
    freeze: leader('nothing proposes it any more: it is kept so that entries already in logs apply'),
  },
  auth: {
    addUser: client,
    setPassword: client,
    removeUser: client,
    grantRole: client,
    revokeRole: client,
    addRole: client,
    removeRole: client,
    grantPermission: client,
    revokePermission: client,
    enable: client,
    disable: client,
    revokeToken: client,
    setQuota: client,
  },
  // Facts are observations of the member that saw them (its own guard, its own clock in `at`); the chain is
  // built at apply, so any member may propose them: from step 8 every member's audit-flush drains its own guard.
  audit: { append: client },
  kv: { txn: client },
  counter: { add: client, remove: client },
};

/**
 * Why a member may not forward `command` of `family` to the leader, or null when it may.
 * An unknown command is refused too: only a command this table classifies is forwardable.
 */
export function forwardRefusal(family: string, command: Readonly<Record<string, unknown>> & { readonly op: string }): string | null {
  const origin = Object.hasOwn(COMMAND_ORIGINS, family) && Object.hasOwn(COMMAND_ORIGINS[family]!, command.op) ? COMMAND_ORIGINS[family]![command.op]! : undefined;
  if (origin === undefined) return `${family}.${command.op} is not a command a member may forward (docs/scale-out.md "Relayed ops")`;
  const why = origin.from === 'leader' ? origin.why : (origin.leaderForm?.(command) ?? null);
  return why === null ? null : `${family}.${command.op} is the leader's own to propose, not a member's to forward: ${why}`;
}
