// The sessions model (docs/scale-out.md "Session liveness"), run over the
// simulated cluster with the real MemberLiveness and SessionClocks: each
// session is held by one member, whose clients touch it now and then; members
// send their liveness batches to the leader they know, over a lossy network
// that respects the simulation's partitions; each leader acknowledges a batch
// only after its driver proves it still leads (RaftDriver.readIndex). The
// invariant, checked every step against the leader of the highest term elected
// so far (only it can still commit an expiry), and whenever such a leader's
// clock reports a session due: no member holding a session was promised more
// time (its confirmation plus the timeout) than that leader's deadline. Its
// liveness half: no session is sent away (4009) nor expired while its holder
// kept a clean link to that leader (uncut both ways, no liveness message lost,
// the holder knowing it as leader) and the leader proved it led (no failed or
// slow check), since the session came to its holder or for the last T; judged
// only where T leaves room for the design's timing (LIVENESS_NEEDS_T).
//
// Simplified on purpose: no log entries for sessions (a session "opens" on a
// member and in every leader's clocks at once, as a leader that applies its
// openSession starts the clock at the full timeout), and a client sent away
// (4009) or left by a crashed member does not resume elsewhere: its session
// runs out, and a new one opens on a random live member.

import type { NodeId } from '../../src/raft/types.js';
import { MemberLiveness, type LiveAck, type LiveBatch } from '../../src/server/peer-service/liveness.js';
import { SessionClocks } from '../../src/server/peer-service/session-clocks.js';
import type { SimRandom } from './random.js';

/** What the model needs of one simulated node, looked up each step. */
export interface SessionsNodeView {
  readonly id: NodeId;
  /** The current process incarnation (a new object after each restart), or null while it is down. */
  readonly incarnation: object | null;
  /** Its driver's monotonic clock (ms). */
  now(): number;
  /** Its term while it leads, null otherwise. */
  leadingTerm(): number | null;
  term(): number;
  /** The leader it knows, or null. */
  leader(): NodeId | null;
  /** Proves it led when called (its driver's readIndex on the leader); rejects otherwise. */
  confirm(): Promise<unknown>;
}

export interface SessionsHost {
  /** Virtual time (steps). */
  now(): number;
  readonly nodes: readonly SessionsNodeView[];
  isCut(from: NodeId, to: NodeId): boolean;
  /** The highest term in which a leader was elected so far. */
  highestLeaderTerm(): number;
  /** Fails the run (InvariantViolation 'sessionLiveness'). */
  fail(detail: string): never;
  say(line: string): void;
  /** The mutation ignoreLiveBatch: every leader takes no member's touch (as if none held its sessions). */
  readonly ignoreLiveBatch?: boolean;
}

export interface SessionsStats {
  opened: number;
  expired: number;
  moved: number;
  batches: number;
  acknowledged: number;
  /** Session-steps the liveness half judged kept alive (a 4009 or expiry then fails the run). */
  keptAlive: number;
}

type Payload = { readonly kind: 'live'; readonly batch: LiveBatch } | { readonly kind: 'liveAck'; readonly ack: LiveAck };

interface InFlight {
  readonly at: number;
  readonly from: NodeId;
  readonly to: NodeId;
  readonly payload: Payload;
}

interface NodeState {
  readonly incarnation: object;
  readonly liveness: MemberLiveness;
  readonly clocks: SessionClocks;
  /** The term its clocks started in, null while it does not lead. */
  clocksTerm: number | null;
  /** The leader it last knew: a new one gets a full batch at once. */
  knownLeader: NodeId | null;
}

const SESSIONS = 6;
const INTERVAL = 10;
const MAX_DELAY = 6;
const LOSS = 0.05;
/** A leadership check slower than this (steps) makes the liveness half leave the window unjudged. */
const CHECK_BOUND = 2 * (MAX_DELAY + 1);
/**
 * The liveness half holds only where the design's timing assumption does (a batch interval, a
 * round trip and a check well within T/6: 100 ms against 10 s in the real server); the
 * smallest simulated timeouts are too short for it, and are judged by the safety half alone.
 */
const LIVENESS_NEEDS_T = 6 * (INTERVAL + 2 * (MAX_DELAY + 1) + CHECK_BOUND);

export class SimSessions {
  readonly stats: SessionsStats = { opened: 0, expired: 0, moved: 0, batches: 0, acknowledged: 0, keptAlive: 0 };
  private readonly states = new Map<NodeId, NodeState>();
  /** Live sessions: their holder (null once it left: crashed, or sent its client away). */
  private readonly live = new Map<string, NodeId | null>();
  /** When each live session's client pings next. */
  private readonly nextPing = new Map<string, number>();
  private inFlight: InFlight[] = [];
  private nextSession = 0;
  /** When each session was last handed to its holder (opened there). */
  private readonly heldSince = new Map<string, number>();
  /** The top leader (node, term, incarnation) and since when it has been it. */
  private topLeader: { readonly id: NodeId; readonly term: number; readonly incarnation: object; readonly since: number } | null = null;
  /** The last step at which something hurt a link or a leader (a cut, a lost liveness message, a failed or slow check, a member not knowing the leader). */
  private readonly lastTrouble = new Map<string, number>();
  /** Leadership checks not settled yet: one out longer than CHECK_BOUND is trouble while it stays out. */
  private readonly checksOut = new Set<{ readonly id: NodeId; readonly started: number }>();
  private epochs = 0;

  constructor(
    private readonly host: SessionsHost,
    private readonly random: SimRandom,
    /** Every session's timeout (ms = steps). */
    private readonly timeoutMs: number,
  ) {}

  /** One simulation step: processes up or down, leadership, clients, batches, answers, expiries. */
  step(): void {
    for (const view of this.host.nodes) this.follow(view);
    this.noteTrouble();
    for (const [session, holder] of this.live) if (holder !== null && this.keptAlive(session, holder)) this.stats.keptAlive++;
    while (this.live.size < SESSIONS && this.openOne()) {}
    this.clientsTalk();
    this.deliver();
    this.checkPromises();
    const now = this.host.now();
    this.host.nodes.forEach((view, slot) => {
      const state = this.states.get(view.id);
      if (state === undefined) return;
      if ((now + slot) % INTERVAL === 0) state.liveness.flush();
      for (const session of state.liveness.sessionsToMove()) this.move(view.id, state, session);
      for (const session of state.clocks.takeDue()) this.expire(view, session);
    });
  }

  /** Every member's confirmation plus the timeout is at or before the deadline of the leader that can commit an expiry. */
  private checkPromises(): void {
    const top = this.host.highestLeaderTerm();
    const leader = this.host.nodes.find((v) => v.leadingTerm() === top && this.states.get(v.id)?.clocksTerm === top);
    if (leader === undefined) return;
    const clocks = this.states.get(leader.id)!.clocks;
    for (const [id, state] of this.states) {
      for (const session of this.live.keys()) {
        const confirmed = state.liveness.confirmedAt(session);
        const remaining = clocks.remainingMs(session);
        if (confirmed === undefined || remaining === undefined) continue;
        const deadline = leader.now() + remaining;
        if (deadline < confirmed + this.timeoutMs) {
          this.host.fail(`${id} was promised ${session} until ${confirmed + this.timeoutMs}, but ${leader.id} (leader of term ${top}) expires it at ${deadline}`);
        }
      }
    }
  }

  /** Keeps a node's model state in step with its process and its leadership. */
  private follow(view: SessionsNodeView): void {
    let state = this.states.get(view.id);
    if (view.incarnation === null) {
      if (state !== undefined) this.forget(view.id);
      return;
    }
    if (state === undefined || state.incarnation !== view.incarnation) {
      if (state !== undefined) this.forget(view.id);
      state = this.create(view);
      this.states.set(view.id, state);
    }
    const term = view.leadingTerm();
    if (term !== null && state.clocksTerm !== term) {
      state.clocks.start([...this.live.keys()].map((s) => [s, this.timeoutMs] as const));
      state.clocksTerm = term;
    } else if (term === null && state.clocksTerm !== null) {
      state.clocks.stop();
      state.clocksTerm = null;
    }
    const leader = view.leader();
    if (leader !== null && leader !== state.knownLeader) {
      state.knownLeader = leader;
      state.liveness.leaderChanged();
    }
  }

  private create(view: SessionsNodeView): NodeState {
    const id = view.id;
    const liveness = new MemberLiveness({
      clock: { now: () => view.now(), every: () => () => undefined }, // flushed by step()
      intervalMs: INTERVAL,
      term: () => view.term(),
      epoch: ++this.epochs, // each incarnation its own (a counter: the seed's random stream stays as it was)
      send: (batch) => {
        const to = view.leader();
        if (to === null) return;
        this.stats.batches++;
        this.send(id, to, { kind: 'live', batch });
      },
    });
    const clocks = new SessionClocks({
      now: () => view.now(),
      checkEveryMs: 1,
      holderOf: (session) => (this.live.has(session) ? (this.host.ignoreLiveBatch === true ? '-' : (this.live.get(session) ?? '-')) : undefined),
      leadership: { leadingTerm: () => view.leadingTerm(), confirm: () => this.timedCheck(view) },
      acknowledge: () => undefined,
      sendAck: (to, ack) => this.send(id, to, { kind: 'liveAck', ack }),
    });
    return { incarnation: view.incarnation!, liveness, clocks, clocksTerm: null, knownLeader: null };
  }

  /** A leader's check, noted as trouble when it fails or is slow (the liveness half then judges nothing across it). */
  private timedCheck(view: SessionsNodeView): Promise<unknown> {
    const check = { id: view.id, started: this.host.now() };
    this.checksOut.add(check);
    return view.confirm().then(
      (value) => {
        this.checksOut.delete(check);
        if (this.host.now() - check.started > CHECK_BOUND) this.lastTrouble.set(`check:${view.id}`, this.host.now());
        return value;
      },
      (err: unknown) => {
        this.checksOut.delete(check);
        this.lastTrouble.set(`check:${view.id}`, this.host.now());
        throw err;
      },
    );
  }

  /** Notes, each step, the top leader and what troubles each member's link to it. */
  private noteTrouble(): void {
    const now = this.host.now();
    const top = this.host.highestLeaderTerm();
    const leader = this.host.nodes.find((v) => v.leadingTerm() === top && this.states.get(v.id)?.clocksTerm === top);
    const incarnation = leader === undefined ? null : this.states.get(leader.id)!.incarnation;
    if (leader === undefined || incarnation === null) this.topLeader = null;
    else if (this.topLeader === null || this.topLeader.id !== leader.id || this.topLeader.term !== top || this.topLeader.incarnation !== incarnation) {
      this.topLeader = { id: leader.id, term: top, incarnation, since: now };
    }
    for (const check of this.checksOut) if (now - check.started > CHECK_BOUND) this.lastTrouble.set(`check:${check.id}`, now);
    if (this.topLeader === null) return;
    const l = this.topLeader.id;
    for (const view of this.host.nodes) {
      if (view.id === l) continue;
      if (this.host.isCut(view.id, l) || this.host.isCut(l, view.id) || view.leader() !== l) this.lastTrouble.set(`link:${view.id}`, now);
    }
  }

  /**
   * The liveness half: whether `session`'s holder kept a clean link to the top leader (no cut, no
   * liveness message lost either way, it knew that leader) and that leader proved it led (no
   * failed or slow check), since the session came to its holder or for the last T.
   */
  private keptAlive(session: string, holder: NodeId): boolean {
    const leader = this.topLeader;
    if (leader === null || this.timeoutMs < LIVENESS_NEEDS_T) return false;
    const now = this.host.now();
    const from = Math.max(this.heldSince.get(session) ?? now, now - this.timeoutMs);
    if (leader.since > from) return false;
    const troubles = [`check:${leader.id}`, `link:${holder}`, `lost:${holder}>${leader.id}`, `lost:${leader.id}>${holder}`];
    return troubles.every((key) => (this.lastTrouble.get(key) ?? Number.NEGATIVE_INFINITY) < from);
  }

  /** A process died: what it held in memory is gone; its sessions' clients have nobody to talk to. */
  private forget(id: NodeId): void {
    this.states.delete(id);
    for (const [session, holder] of this.live) if (holder === id) this.live.set(session, null);
  }

  /** A client opens a session on a random live member, once some member leads (its openSession must commit). */
  private openOne(): boolean {
    const up = this.host.nodes.filter((v) => this.states.has(v.id));
    if (up.length === 0 || !up.some((v) => v.leadingTerm() !== null)) return false;
    const holder = this.random.pick(up);
    const session = `s${++this.nextSession}`;
    this.live.set(session, holder.id);
    this.heldSince.set(session, this.host.now());
    this.stats.opened++;
    // Its member forwards the openSession now; the leader that applies it starts the clock at the full timeout.
    this.states.get(holder.id)!.liveness.hold(session, this.timeoutMs, holder.now());
    for (const state of this.states.values()) if (state.clocksTerm !== null) state.clocks.track(session, this.timeoutMs);
    this.host.say(`session ${session} opens on ${holder.id}`);
    return true;
  }

  /** Each client pings every third of its timeout, a little early at random (as the client library does). */
  private clientsTalk(): void {
    const now = this.host.now();
    for (const [session, holder] of this.live) {
      if (holder === null || now < (this.nextPing.get(session) ?? 0)) continue;
      this.states.get(holder)?.liveness.touch(session);
      const third = Math.floor(this.timeoutMs / 3);
      this.nextPing.set(session, now + third - this.random.int(Math.max(1, Math.floor(third / 4))));
    }
  }

  private send(from: NodeId, to: NodeId, payload: Payload): void {
    if (from === to) {
      this.receive(from, to, payload); // the leader's own sessions
      return;
    }
    if (this.random.chance(LOSS)) {
      this.lastTrouble.set(`lost:${from}>${to}`, this.host.now());
      return;
    }
    this.inFlight.push({ at: this.host.now() + 1 + this.random.int(MAX_DELAY), from, to, payload });
  }

  private deliver(): void {
    const now = this.host.now();
    const due = this.inFlight.filter((m) => m.at <= now);
    this.inFlight = this.inFlight.filter((m) => m.at > now);
    for (const m of due) if (!this.host.isCut(m.from, m.to)) this.receive(m.from, m.to, m.payload);
  }

  private receive(from: NodeId, to: NodeId, payload: Payload): void {
    const state = this.states.get(to);
    if (state === undefined) return;
    if (payload.kind === 'live') state.clocks.onBatch(from, payload.batch);
    else {
      this.stats.acknowledged++;
      state.liveness.onLiveAck(payload.ack);
    }
  }

  /** The 4009 rule sent a client away; in this model it does not come back. */
  private move(id: NodeId, state: NodeState, session: string): void {
    if (this.live.get(session) === id && this.keptAlive(session, id)) {
      this.host.fail(`${id} sent ${session}'s client away (4009), though it kept a clean link to ${this.topLeader!.id} (leader of term ${this.topLeader!.term}, proving it led) since ${Math.max(this.heldSince.get(session)!, this.host.now() - this.timeoutMs)}`);
    }
    state.liveness.release(session);
    if (this.live.get(session) === id) this.live.set(session, null);
    this.stats.moved++;
    this.host.say(`${id} closes ${session}'s connection (4009): its confirmation is more than half its timeout old`);
  }

  /** `view`'s clock ran out for `session`. Only a leader of the highest term elected so far could commit the expiry. */
  private expire(view: SessionsNodeView, session: string): void {
    const term = view.leadingTerm();
    if (term === null || term < this.host.highestLeaderTerm() || !this.live.has(session)) return;
    for (const [id, state] of this.states) {
      const confirmed = state.liveness.confirmedAt(session);
      if (confirmed === undefined) continue;
      const now = this.host.nodes.find((v) => v.id === id)!.now();
      if (now < confirmed + this.timeoutMs) {
        this.host.fail(
          `${view.id} (leader of term ${term}) found ${session} due, but its holder ${id} was promised it until ${confirmed + this.timeoutMs} (now ${now})`,
        );
      }
    }
    const holder = this.live.get(session);
    if (holder !== null && holder !== undefined && this.keptAlive(session, holder)) {
      this.host.fail(`${view.id} (leader of term ${term}) found ${session} due, though its holder ${holder} kept a clean link to it since ${Math.max(this.heldSince.get(session)!, this.host.now() - this.timeoutMs)}`);
    }
    this.stats.expired++;
    this.host.say(`${view.id} expires ${session}`);
    this.live.delete(session);
    this.heldSince.delete(session);
    this.nextPing.delete(session);
    for (const state of this.states.values()) {
      state.liveness.release(session);
      state.clocks.remove(session);
    }
  }
}
