// Session liveness with fake clocks (docs/scale-out.md "Session liveness"): the
// member side (MemberLiveness: batches, confirmations, the 4009 rule) and the
// leader side (SessionClocks: holders, the acknowledgement after a leadership
// check, a new leader's full timeouts), each rule of the design by name.
import { describe, expect, it } from 'vitest';
import { MAX_SESSIONS_PER_BATCH, MAX_UNACKNOWLEDGED_BATCHES, MemberLiveness, type LiveAck, type LiveBatch } from '../../src/server/peer-service/liveness.js';
import { LEADERSHIP_CHECK_TIMEOUT_MS, MAX_WAITING_BATCHES, SessionClocks } from '../../src/server/peer-service/session-clocks.js';

const INTERVAL_MS = 100;
const T = 10_000;

class FakeClock {
  t = 1_000;
  private timers: Array<{ every: number; next: number; fn: () => void }> = [];
  now = (): number => this.t;
  every = (ms: number, fn: () => void): (() => void) => {
    const timer = { every: ms, next: this.t + ms, fn };
    this.timers.push(timer);
    return () => (this.timers = this.timers.filter((x) => x !== timer));
  };
  /** Moves time on by `ms`, firing each interval timer as it comes due. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.next <= end).sort((a, b) => a.next - b.next)[0];
      if (due === undefined) break;
      this.t = due.next;
      due.next += due.every;
      due.fn();
    }
    this.t = end;
  }
}

const EPOCH = 77;

function member(clock = new FakeClock(), term = 3, epoch = EPOCH) {
  const sent: LiveBatch[] = [];
  const liveness = new MemberLiveness({ clock, intervalMs: INTERVAL_MS, term: () => term, send: (b) => void sent.push(b), epoch });
  liveness.start();
  return { clock, liveness, sent };
}

const ackOf = (batch: LiveBatch, ignored: string[] = []): LiveAck => ({ epoch: batch.epoch, seq: batch.seq, term: 3, ignored, busy: false });

/** A leadership check the test settles by hand. */
class Checks {
  pending: Array<{ resolve: () => void; reject: (err: Error) => void }> = [];
  term: number | null = 5;
  readonly leadership = {
    leadingTerm: () => this.term,
    confirm: () => new Promise<unknown>((resolve, reject) => this.pending.push({ resolve: () => resolve(undefined), reject })),
  };
  async pass(): Promise<void> {
    this.pending.shift()!.resolve();
    await new Promise((r) => setImmediate(r));
  }
  async fail(): Promise<void> {
    this.pending.shift()!.reject(new Error('no quorum'));
    await new Promise((r) => setImmediate(r));
  }
}

function leader(holders: Record<string, string | null>, clock = new FakeClock()) {
  const checks = new Checks();
  const acks: Array<{ to: string; ack: LiveAck }> = [];
  const acknowledged: Array<[string, number]> = [];
  const clocks = new SessionClocks({
    now: clock.now,
    checkEveryMs: 25,
    holderOf: (s) => (Object.hasOwn(holders, s) ? holders[s] : undefined),
    leadership: checks.leadership,
    acknowledge: (s, i) => void acknowledged.push([s, i]),
    sendAck: (to, ack) => void acks.push({ to, ack }),
  });
  return { clock, checks, clocks, acks, acknowledged };
}

const batch = (seq: number, touched: string[], acks: Array<[string, number]> = []): LiveBatch => ({ epoch: EPOCH, seq, term: 5, full: false, touched, acks, held: touched.length });

describe('member side: batches', () => {
  it('one batch per interval names the sessions heard from since the last, with their highest acknowledged index', () => {
    const { clock, liveness, sent } = member();
    liveness.hold('a', T, clock.t);
    liveness.hold('b', T, clock.t);
    liveness.touch('a');
    liveness.touch('a');
    liveness.ack('a', 7);
    liveness.ack('a', 5);
    liveness.touch('b');
    liveness.touch('stranger'); // not held here: nothing to say for it
    clock.advance(INTERVAL_MS - 1);
    expect(sent).toEqual([]);
    clock.advance(1);
    expect(sent).toEqual([{ epoch: EPOCH, seq: 1, term: 3, full: false, touched: ['a', 'b'], acks: [['a', 7]], held: 2 }]);
    clock.advance(5 * INTERVAL_MS); // nothing heard since: nothing sent
    expect(sent).toHaveLength(1);
    liveness.touch('b');
    clock.advance(INTERVAL_MS);
    expect(sent[1]).toMatchObject({ seq: 2, touched: ['b'], acks: [] });
  });

  it('a new leader hears of every session held here at once, in a full batch', () => {
    const { clock, liveness, sent } = member();
    for (const s of ['a', 'b', 'c']) liveness.hold(s, T, clock.t);
    liveness.touch('b');
    liveness.leaderChanged();
    expect(sent).toEqual([{ epoch: EPOCH, seq: 1, term: 3, full: true, touched: ['a', 'b', 'c'], acks: [], held: 3 }]);
    clock.advance(INTERVAL_MS);
    expect(sent).toHaveLength(1); // 'b' went in the full batch
  });

  it(`a batch names at most ${MAX_SESSIONS_PER_BATCH} sessions and acknowledgements: a bigger one goes in parts, each confirmed by its own answer`, () => {
    const { clock, liveness, sent } = member();
    const ids = Array.from({ length: 2 * MAX_SESSIONS_PER_BATCH + 500 }, (_, i) => `s${i}`);
    for (const [i, s] of ids.entries()) {
      liveness.hold(s, T, clock.t);
      liveness.ack(s, i + 1);
    }
    clock.advance(50);
    liveness.leaderChanged(); // a full batch of every session held here
    expect(sent.map((b) => [b.touched.length, b.acks.length])).toEqual([
      [MAX_SESSIONS_PER_BATCH, MAX_SESSIONS_PER_BATCH],
      [MAX_SESSIONS_PER_BATCH, MAX_SESSIONS_PER_BATCH],
      [500, 500],
    ]);
    expect(sent.every((b) => b.full && b.held === ids.length)).toBe(true);
    expect(sent.map((b) => b.seq)).toEqual([1, 2, 3]);
    expect(sent.flatMap((b) => b.touched)).toEqual(ids);
    liveness.onLiveAck(ackOf(sent[1]!));
    expect(liveness.confirmedAt(ids[0]!)).toBe(1_000); // its part is still unanswered
    expect(liveness.confirmedAt(ids[MAX_SESSIONS_PER_BATCH]!)).toBe(1_050);
  });

  it('a released session is named no more', () => {
    const { clock, liveness, sent } = member();
    liveness.hold('a', T, clock.t);
    liveness.touch('a');
    liveness.release('a');
    clock.advance(INTERVAL_MS);
    expect(sent).toEqual([]);
    expect(liveness.size).toBe(0);
  });
});

describe('member side: confirmations', () => {
  it("a session's first confirmation is when its member forwarded its openSession or attachSession", () => {
    const { liveness } = member();
    liveness.hold('a', T, 400);
    expect(liveness.confirmedAt('a')).toBe(400);
  });

  it("an acknowledged batch confirms its sessions as of the batch's sending, not the answer's arrival, except those ignored", () => {
    const { clock, liveness, sent } = member();
    liveness.hold('a', T, clock.t);
    liveness.hold('b', T, clock.t);
    clock.advance(50);
    liveness.touch('a');
    liveness.touch('b');
    clock.advance(50); // sent at 1100
    const first = sent[0]!;
    clock.advance(30); // the answer takes a while
    liveness.onLiveAck(ackOf(first, ['b']));
    expect(liveness.confirmedAt('a')).toBe(1_100);
    expect(liveness.confirmedAt('b')).toBe(1_000); // the leader did not take it
    liveness.onLiveAck(ackOf(first)); // a duplicate answer moves nothing
    liveness.onLiveAck({ epoch: EPOCH, seq: 99, term: 3, ignored: [], busy: false }); // nor one to a batch never sent
    expect(liveness.confirmedAt('b')).toBe(1_000);
  });

  it('answers in any order never move a confirmation back', () => {
    const { clock, liveness, sent } = member();
    liveness.hold('a', T, clock.t);
    liveness.touch('a');
    clock.advance(INTERVAL_MS);
    liveness.touch('a');
    clock.advance(INTERVAL_MS);
    const [older, newer] = sent;
    liveness.onLiveAck(ackOf(newer!));
    liveness.onLiveAck(ackOf(older!));
    expect(liveness.confirmedAt('a')).toBe(1_200);
  });

  it(`remembers at most ${MAX_UNACKNOWLEDGED_BATCHES} unanswered batches`, () => {
    const { clock, liveness, sent } = member();
    liveness.hold('a', T, clock.t);
    for (let i = 0; i <= MAX_UNACKNOWLEDGED_BATCHES; i++) {
      liveness.touch('a');
      clock.advance(INTERVAL_MS);
    }
    liveness.onLiveAck(ackOf(sent[0]!)); // forgotten
    expect(liveness.confirmedAt('a')).toBe(1_000);
    liveness.onLiveAck(ackOf(sent[1]!));
    expect(liveness.confirmedAt('a')).toBe(1_200); // the second batch, sent two intervals in
  });
});

describe('member side: epochs', () => {
  it('each process draws its own epoch; its batches carry it', () => {
    const clock = new FakeClock();
    const one = new MemberLiveness({ clock, intervalMs: INTERVAL_MS, term: () => 3, send: () => undefined });
    const two = new MemberLiveness({ clock, intervalMs: INTERVAL_MS, term: () => 3, send: () => undefined });
    expect(Number.isSafeInteger(one.epoch) && one.epoch >= 0 && one.epoch < 2 ** 48).toBe(true);
    expect(one.epoch).not.toBe(two.epoch); // 2^-48 apart
    const { liveness, sent } = member();
    liveness.hold('a', T, 0);
    liveness.leaderChanged();
    expect(sent[0]!.epoch).toBe(liveness.epoch);
  });

  it("a stale answer to an earlier process's batch of the same number confirms nothing after a restart", () => {
    const clock = new FakeClock();
    const before = member(clock, 3, 1);
    before.liveness.hold('a', T, clock.t);
    before.liveness.touch('a');
    clock.advance(INTERVAL_MS);
    const stale = ackOf(before.sent[0]!); // still on its way when the process restarts
    const after = member(clock, 3, 2);
    clock.advance(2 * T);
    after.liveness.hold('a', T, clock.t); // resumed here after the restart
    after.liveness.touch('a');
    clock.advance(INTERVAL_MS);
    expect(after.sent[0]!.seq).toBe(stale.seq); // numbered from 1 again
    after.liveness.onLiveAck(stale);
    expect(after.liveness.confirmedAt('a')).toBe(clock.t - INTERVAL_MS); // its hold, not the stale batch's sending
    after.liveness.onLiveAck(ackOf(after.sent[0]!));
    expect(after.liveness.confirmedAt('a')).toBe(clock.t);
  });
});

describe('member side: the 4009 rule', () => {
  it('moves a talking session once its confirmation is more than half its timeout old', () => {
    const { clock, liveness } = member();
    liveness.hold('talking', T, clock.t);
    liveness.hold('silent', T, clock.t);
    for (let ms = 0; ms < T / 2; ms += T / 4) {
      clock.advance(T / 4);
      liveness.touch('talking'); // no answer ever comes: the leader is out of reach
    }
    expect(liveness.sessionsToMove()).toEqual([]); // exactly T/2: not yet
    clock.advance(1);
    expect(liveness.sessionsToMove()).toEqual(['talking']); // at least T/2 of its session is left
  });

  it('a healthy member never gets there: a client pinging every T/3 is confirmed each interval', () => {
    const { clock, liveness, sent } = member();
    liveness.hold('a', T, clock.t);
    for (let ms = 0; ms < 10 * T; ms += INTERVAL_MS) {
      if (ms % (T / 3) < INTERVAL_MS) liveness.touch('a');
      const before = sent.length;
      clock.advance(INTERVAL_MS);
      for (const b of sent.slice(before)) liveness.onLiveAck(ackOf(b)); // answered within the interval
      expect(liveness.sessionsToMove()).toEqual([]);
    }
  });

  it('a member that loses the leader expires nothing: only talking clients are sent elsewhere, and its clocks report nothing due', () => {
    const { clock, liveness } = member();
    liveness.hold('talking', T, clock.t);
    liveness.hold('silent', T, clock.t);
    clock.advance(3 * T);
    liveness.touch('talking');
    expect(liveness.sessionsToMove()).toEqual(['talking']); // moved, not ended: the session stays live
    expect(liveness.size).toBe(2);
    // The same member's leader-side clocks, as a member that does not lead: nothing is ever due.
    const { clocks, checks } = leader({ silent: 'n2' }, clock);
    checks.term = null;
    clocks.start([['silent', T]]);
    clock.advance(3 * T);
    expect(clocks.takeDue()).toEqual([]);
  });
});

describe('leader side: clocks', () => {
  it('a new leader starts every clock at the full timeout', () => {
    const { clock, clocks } = leader({ a: 'n2', b: null });
    clocks.start([['a', T], ['b', 2 * T]]);
    clock.advance(T - 1);
    clocks.start([['a', T], ['b', 2 * T]]); // led before; leads again (a new term): the clocks start afresh
    expect(clocks.remainingMs('a')).toBe(T);
    expect(clocks.remainingMs('b')).toBe(2 * T);
    clock.advance(T);
    expect(clocks.takeDue()).toEqual(['a']);
    expect(clocks.takeDue()).toEqual([]); // reported once
  });

  it('reports nothing due once this member no longer leads in the term its clocks started in, even before stop()', () => {
    const { clock, clocks, checks } = leader({ a: 'n2' });
    clocks.start([['a', T]]);
    clock.advance(T);
    checks.term = null; // deposed; stop() not called yet
    expect(clocks.takeDue()).toEqual([]);
    checks.term = 6; // leads again, in a later term: its clocks must start afresh first
    expect(clocks.takeDue()).toEqual([]);
    checks.term = 5;
    expect(clocks.takeDue()).toEqual(['a']);
  });

  it("a batch moves the clocks of the sessions its sender holds; touches from a non-holder are ignored", async () => {
    const { clock, clocks, checks, acks } = leader({ mine: 'n2', theirs: 'n3', old: null }); // 'gone' is not live
    clocks.start([['mine', T], ['theirs', T], ['old', T]]);
    clock.advance(T / 2);
    clocks.onBatch('n2', batch(1, ['mine', 'theirs', 'old', 'gone']));
    expect(clocks.remainingMs('mine')).toBe(T);
    expect(clocks.remainingMs('theirs')).toBe(T / 2); // held by n3: n2's word does not keep it alive
    expect(clocks.remainingMs('old')).toBe(T); // opened before holders were recorded: any member may speak for it
    await checks.pass();
    expect(acks).toEqual([{ to: 'n2', ack: { epoch: EPOCH, seq: 1, term: 5, ignored: ['theirs', 'gone'], busy: false } }]);
  });

  it('a session already reported due is not confirmed to its member', async () => {
    const { clock, clocks, checks, acks } = leader({ a: 'n2' });
    clocks.start([['a', T]]);
    clock.advance(T);
    expect(clocks.takeDue()).toEqual(['a']); // its expiry is being proposed
    clocks.onBatch('n2', batch(1, ['a']));
    await checks.pass();
    expect(acks[0]!.ack.ignored).toEqual(['a']);
  });

  it("acknowledged notification indexes go to the notifier for the sessions the sender holds", () => {
    const { clocks, acknowledged } = leader({ a: 'n2', b: 'n3' });
    clocks.start([['a', T], ['b', T]]);
    clocks.onBatch('n2', batch(1, [], [['a', 9], ['b', 4]]));
    expect(acknowledged).toEqual([['a', 9]]);
  });
});

describe('leader side: acknowledgements after a leadership check', () => {
  it('a batch is answered only once a leadership check started after it was applied succeeds', async () => {
    const { clocks, checks, acks } = leader({ a: 'n2' });
    clocks.start([['a', T]]);
    clocks.onBatch('n2', batch(1, ['a']));
    expect(checks.pending).toHaveLength(1);
    expect(acks).toEqual([]);
    await checks.pass();
    expect(acks.map((x) => x.ack.seq)).toEqual([1]);
  });

  it('batches arriving together share one check; those arriving during a check wait for the next', async () => {
    const { clocks, checks, acks } = leader({ a: 'n2', b: 'n3' });
    clocks.start([['a', T], ['b', T]]);
    clocks.onBatch('n2', batch(1, ['a']));
    clocks.onBatch('n3', batch(1, ['b'])); // before the check that started with the first
    clocks.onBatch('n2', batch(2, ['a']));
    expect(checks.pending).toHaveLength(1);
    await checks.pass();
    expect(acks).toEqual([{ to: 'n2', ack: expect.objectContaining({ seq: 1 }) }]); // only the batch applied before the check started
    expect(checks.pending).toHaveLength(1); // the next check, for the two that came during it
    await checks.pass();
    expect(acks.slice(1)).toEqual([
      { to: 'n3', ack: expect.objectContaining({ seq: 1 }) },
      { to: 'n2', ack: expect.objectContaining({ seq: 2 }) },
    ]);
    expect(checks.pending).toHaveLength(0);
  });

  it('a leader that cannot prove it leads never answers', async () => {
    const { clocks, checks, acks } = leader({ a: 'n2' });
    clocks.start([['a', T]]);
    clocks.onBatch('n2', batch(1, ['a']));
    await checks.fail();
    expect(acks).toEqual([]);
    // A check that succeeds only after this member stopped leading (or leads in another term) answers nothing either.
    clocks.onBatch('n2', batch(2, ['a']));
    checks.term = 6;
    await checks.pass();
    expect(acks).toEqual([]);
  });

  it('a check that never settles is abandoned after its timeout: its batches go unanswered, later ones get a check of their own', async () => {
    const { clock, clocks, checks, acks } = leader({ a: 'n2' });
    clocks.start([['a', T]]);
    clocks.onBatch('n2', batch(1, ['a']));
    clocks.onBatch('n2', batch(2, ['a'])); // waits for the next check
    clock.advance(LEADERSHIP_CHECK_TIMEOUT_MS);
    expect(clocks.takeDue()).toEqual([]); // the periodic call: exactly the timeout, not yet
    expect(checks.pending).toHaveLength(1);
    clock.advance(1);
    clocks.takeDue();
    expect(checks.pending).toHaveLength(2); // the next check, for batch 2
    const stuck = checks.pending.shift()!;
    await checks.pass();
    expect(acks.map((x) => x.ack.seq)).toEqual([2]);
    stuck.resolve(); // settles at last: it answers nothing, and disturbs no later check
    await new Promise((r) => setImmediate(r));
    clocks.onBatch('n2', batch(3, ['a']));
    expect(checks.pending).toHaveLength(1);
    await checks.pass();
    expect(acks.map((x) => x.ack.seq)).toEqual([2, 3]);
  });

  it('a new leadership does not wait for a check of the last one, whose late success answers nothing', async () => {
    const { clocks, checks, acks } = leader({ a: 'n2' });
    clocks.start([['a', T]]);
    clocks.onBatch('n2', batch(1, ['a']));
    clocks.stop();
    checks.term = 7;
    clocks.start([['a', T]]);
    clocks.onBatch('n2', batch(2, ['a']));
    expect(checks.pending).toHaveLength(2);
    const old = checks.pending.shift()!;
    await checks.pass();
    expect(acks.map((x) => x.ack)).toEqual([expect.objectContaining({ seq: 2, term: 7 })]);
    old.resolve();
    await new Promise((r) => setImmediate(r));
    expect(acks).toHaveLength(1);
  });

  it(`at most ${MAX_WAITING_BATCHES} batches wait for a check; the oldest go unanswered`, async () => {
    const { clocks, checks, acks } = leader({ a: 'n2' });
    clocks.start([['a', T]]);
    clocks.onBatch('n2', batch(0, ['a'])); // its check is in flight while the rest arrive
    for (let seq = 1; seq <= MAX_WAITING_BATCHES + 5; seq++) clocks.onBatch('n2', batch(seq, ['a']));
    await checks.pass();
    await checks.pass();
    expect(acks).toHaveLength(1 + MAX_WAITING_BATCHES);
    expect(acks.slice(0, 2).map((x) => x.ack.seq)).toEqual([0, 6]);
  });

  it('a member that does not lead takes no batch and answers none', async () => {
    const { clocks, checks, acks } = leader({ a: 'n2' });
    clocks.start([['a', T]]);
    clocks.stop();
    clocks.onBatch('n2', batch(1, ['a']));
    expect(checks.pending).toEqual([]);
    expect(acks).toEqual([]);
    expect(clocks.has('a')).toBe(false);
  });
});

describe('both sides: the invariant', () => {
  it("a member's confirmed touch plus the timeout is never after the leader's deadline", async () => {
    const clock = new FakeClock();
    const m = member(clock);
    const l = leader({ a: 'n2' }, clock);
    l.clocks.start([['a', T]]);
    m.liveness.hold('a', T, clock.t);
    for (let round = 0; round < 50; round++) {
      m.liveness.touch('a');
      const before = m.sent.length;
      clock.advance(INTERVAL_MS);
      for (const b of m.sent.slice(before)) {
        clock.advance(7); // on its way to the leader
        l.clocks.onBatch('n2', b);
        clock.advance(3); // the leadership check takes a heartbeat round
        await l.checks.pass();
        clock.advance(7); // the answer on its way back
        for (const { ack } of l.acks.splice(0)) m.liveness.onLiveAck(ack);
        const deadline = clock.t + l.clocks.remainingMs('a')!;
        expect(m.liveness.confirmedAt('a')! + T).toBeLessThanOrEqual(deadline);
      }
    }
    expect(m.liveness.confirmedAt('a')).toBeGreaterThan(1_000);
  });
});
