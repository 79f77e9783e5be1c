// The driver's ordering promise, case by case (the simulator runs the same driver
// over many seeded fault schedules, and the scenario tests over scripted ones;
// these name each rule): nothing that promises durable state leaves the node, and
// no proposal is answered, before the Ready's write has finished. Storage here is
// gated by hand, so the test decides when a write completes. Also the lease's
// clocks and the uniqueness of read contexts.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { RaftNode } from '../../src/raft/core.js';
import type { DriverClock } from '../../src/raft/clock.js';
import { coveredBySnapshot, RaftDriver, type DriverOptions, type Stall } from '../../src/raft/driver.js';
import { MemoryLogStorage } from '../../src/raft/memory-storage.js';
import type { Entry, HardState, Message, NodeId, SnapshotMeta } from '../../src/raft/types.js';

/** MemoryLogStorage whose persist() completes only when the test releases it. */
class GatedStorage extends MemoryLogStorage {
  private readonly gates: Array<() => void> = [];
  private readonly waiting: Array<() => void> = [];
  private open = false;

  /** What reached this storage and the transport, in order ('persist', 'send <type>'). */
  readonly events: string[] = [];

  override async persist(hardState: HardState | null, entries: readonly Entry[]): Promise<void> {
    this.events.push('persist');
    if (!this.open) {
      await new Promise<void>((release) => {
        this.gates.push(release);
        for (const w of this.waiting.splice(0)) w();
      });
    }
    return super.persist(hardState, entries);
  }

  /** Lets every write through from now on (so a driver can stop after a failed test). */
  openGates(): void {
    this.open = true;
    this.compactionHold?.release();
    this.compactionHold = null;
    for (const release of this.gates.splice(0)) release();
  }

  /** Holds every write from now on until released (after openGates). */
  closeGates(): void {
    this.open = false;
  }

  /** Resolves once a persist() call is waiting for its release. */
  async writeStarted(): Promise<void> {
    if (this.gates.length > 0) return;
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private compactionHold: { started: () => void; release: () => void; released: Promise<void> } | null = null;

  override async compact(meta: SnapshotMeta): Promise<void> {
    const hold = this.compactionHold;
    if (hold !== null) {
      hold.started();
      await hold.released;
    }
    return super.compact(meta);
  }

  /** Holds the next compactions until openGates(); resolves once one is waiting. */
  holdCompactions(): Promise<void> {
    return new Promise<void>((started) => {
      let release = (): void => undefined;
      const released = new Promise<void>((resolve) => (release = resolve));
      this.compactionHold = { started, release, released };
    });
  }

  releaseOne(): void {
    const release = this.gates.shift();
    if (release === undefined) throw new Error('no write is waiting');
    release();
  }
}

const started: Array<{ driver: RaftDriver<number>; storage: GatedStorage }> = [];
afterEach(async () => {
  for (const { driver, storage } of started.splice(0)) {
    storage.openGates();
    await driver.stop();
  }
});

async function makeDriver(
  id: NodeId,
  voters: NodeId[],
  timing = { electionTicks: 1000, tickMs: 60_000 },
  extra: Partial<Pick<DriverOptions<number>, 'clock' | 'onStall' | 'stallWarnMs' | 'snapshots' | 'compaction'>> = {},
): Promise<{ driver: RaftDriver<number>; storage: GatedStorage; node: RaftNode; sent: Message[]; delivered: Promise<Message>; appliedIndexes: number[]; flushedAt: number[] }> {
  const storage = new GatedStorage({ initialConfig: { voters, learners: [] } });
  const loaded = await storage.load();
  const node = new RaftNode(
    { id, electionTicks: timing.electionTicks, heartbeatTicks: 1, random: { int: () => 0 }, maxInflightMessages: 8, maxInflightBytes: 1 << 20, maxMessageBytes: 1 << 20 },
    { hardState: loaded.hardState, snapshot: loaded.snapshot, entries: loaded.entries, applied: 0 },
  );
  const sent: Message[] = [];
  const appliedIndexes: number[] = [];
  const flushedAt: number[] = []; // how many messages had been sent at each flush()
  let onSend: (m: Message) => void = () => undefined;
  const delivered = new Promise<Message>((resolve) => (onSend = resolve));
  const driver = new RaftDriver<number>(
    {
      node,
      storage,
      transport: {
        send: (m) => {
          sent.push(m);
          storage.events.push(`send ${m.type}`);
          onSend(m);
        },
        flush: () => flushedAt.push(sent.length),
      },
      apply: async (entries, applied) => {
        for (const entry of entries) {
          appliedIndexes.push(entry.index);
          applied(entry, entry.index);
        }
      },
      tickMs: timing.tickMs, // by default no ticks: the test drives everything
      onFatal: (err) => {
        throw err;
      },
      ...extra,
    },
    0,
  );
  started.push({ driver, storage });
  return { driver, storage, node, sent, delivered, appliedIndexes, flushedAt };
}

/** Makes n1 (of n1, n2, n3) the leader in term 1 with n2's votes, its writes let through; resolves once its first Ready is handled. */
async function electN1({ driver, storage, node, sent }: { driver: RaftDriver<number>; storage: GatedStorage; node: RaftNode; sent: Message[] }): Promise<void> {
  storage.openGates();
  for (let i = 0; i < node.leaseTicks; i++) node.tick();
  driver.start();
  node.campaign();
  driver.step({ type: 'preVoteResp', from: 'n2', to: 'n1', term: 1, reject: false });
  await turnsUntil(() => sent.some((m) => m.type === 'vote'));
  driver.step({ type: 'voteResp', from: 'n2', to: 'n1', term: 1, reject: false });
  await turnsUntil(() => node.status().role === 'leader' && !driver['running']);
}

/** Resolves once `done()` holds, checking once per event-loop turn. */
function turnsUntil(done: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => (done() ? resolve() : void setImmediate(check));
    check();
  });
}

describe('RaftDriver ordering', () => {
  it('a follower acknowledges appended entries only after they are written', async () => {
    const { driver, storage, sent, delivered } = await makeDriver('n2', ['n1', 'n2', 'n3']);
    driver.start();
    const entry: Entry = { index: 1, term: 1, kind: 'command', data: new Uint8Array([1]) };
    driver.step({ type: 'app', from: 'n1', to: 'n2', term: 1, prevIndex: 0, prevTerm: 0, entries: [entry], commit: 0 });
    await storage.writeStarted();
    expect(sent).toEqual([]);
    storage.releaseOne();
    const reply = await delivered;
    expect(reply).toMatchObject({ type: 'appResp', to: 'n1', index: 1, reject: false });
  });

  it('a vote is sent only after the vote is written', async () => {
    const { driver, storage, sent, delivered, node } = await makeDriver('n2', ['n1', 'n2', 'n3']);
    for (let i = 0; i < node.leaseTicks; i++) node.tick(); // a fresh node votes only once the lease window has passed
    driver.start();
    driver.step({ type: 'vote', from: 'n1', to: 'n2', term: 1, lastLogIndex: 0, lastLogTerm: 0, transfer: false });
    await storage.writeStarted();
    expect(sent).toEqual([]);
    storage.releaseOne();
    expect(await delivered).toMatchObject({ type: 'voteResp', to: 'n1', reject: false });
  });

  it('a vote granted in a term already written (the term unchanged, only the vote new) is written before it is sent', async () => {
    const { driver, storage, sent, node } = await makeDriver('n2', ['n1', 'n2', 'n3'], { electionTicks: 10, tickMs: 60_000 });
    driver.start();
    /** Resolves when a message matching `match` has been sent (polling the send log once per event-loop turn). */
    const sentMatching = (match: (m: Message) => boolean): Promise<'sent'> =>
      new Promise((resolve) => {
        const check = (): void => (sent.some(match) ? resolve('sent') : void setImmediate(check));
        check();
      });
    const voteRespTo = (to: NodeId) => (m: Message) => m.type === 'voteResp' && m.to === to;
    // n2 holds entry 1 of term 1, so a candidate with an empty log is refused.
    const entry: Entry = { index: 1, term: 1, kind: 'command', data: new Uint8Array([1]) };
    driver.step({ type: 'app', from: 'n1', to: 'n2', term: 1, prevIndex: 0, prevTerm: 0, entries: [entry], commit: 0 });
    await storage.writeStarted();
    storage.releaseOne();
    await sentMatching((m) => m.type === 'appResp');
    // Past the leader lease (and the election timeout), so vote requests are considered.
    for (let i = 0; i < Math.max(node.leaseTicks, 10); i++) node.tick();
    // n3 asks in term 2 with a shorter log: n2 moves to term 2 (written) but votes for nobody.
    driver.step({ type: 'vote', from: 'n3', to: 'n2', term: 2, lastLogIndex: 0, lastLogTerm: 0, transfer: false });
    await storage.writeStarted();
    storage.releaseOne();
    await sentMatching(voteRespTo('n3'));
    expect(sent.find(voteRespTo('n3'))).toMatchObject({ term: 2, reject: true });
    expect((await storage.load()).hardState).toMatchObject({ term: 2, vote: null });
    // n1 asks in the same term with a log as long as n2's: the grant changes only the vote, and must be written first.
    driver.step({ type: 'vote', from: 'n1', to: 'n2', term: 2, lastLogIndex: 1, lastLogTerm: 1, transfer: false });
    const first = await Promise.race([storage.writeStarted().then(() => 'write' as const), sentMatching(voteRespTo('n1'))]);
    expect(first).toBe('write');
    storage.releaseOne();
    await sentMatching(voteRespTo('n1'));
    expect(sent.find(voteRespTo('n1'))).toMatchObject({ term: 2, reject: false });
    expect((await storage.load()).hardState).toMatchObject({ term: 2, vote: 'n1' });
  });

  it('entries an earlier Ready wrote are applied while the next Ready is still being written', async () => {
    const { driver, storage, sent, appliedIndexes } = await makeDriver('n2', ['n1', 'n2', 'n3']);
    driver.start();
    const entry = (index: number): Entry => ({ index, term: 1, kind: 'command', data: new Uint8Array([index]) });
    driver.step({ type: 'app', from: 'n1', to: 'n2', term: 1, prevIndex: 0, prevTerm: 0, entries: [entry(1)], commit: 0 });
    await storage.writeStarted();
    storage.releaseOne();
    await turnsUntil(() => sent.some((m) => m.type === 'appResp'));
    // Entry 1 is durable here; entry 2 arrives with the news that 1 committed.
    driver.step({ type: 'app', from: 'n1', to: 'n2', term: 1, prevIndex: 1, prevTerm: 1, entries: [entry(2)], commit: 1 });
    await storage.writeStarted();
    await turnsUntil(() => appliedIndexes.length > 0); // hangs (the test times out) if apply waited for the write
    expect(appliedIndexes).toEqual([1]);
    expect(sent.filter((m) => m.type === 'appResp')).toHaveLength(1); // the acknowledgement of 2 still waits for its write
    storage.releaseOne();
    await turnsUntil(() => sent.filter((m) => m.type === 'appResp').length === 2);
    expect(sent.at(-1)).toMatchObject({ type: 'appResp', index: 2, reject: false });
  });

  it('an entry committed in the Ready that writes it is applied only once that write is done', async () => {
    const { driver, storage, appliedIndexes } = await makeDriver('n2', ['n1', 'n2', 'n3']);
    driver.start();
    const entry: Entry = { index: 1, term: 1, kind: 'command', data: new Uint8Array([1]) };
    // The leader already counts a majority for entry 1: it arrives committed.
    driver.step({ type: 'app', from: 'n1', to: 'n2', term: 1, prevIndex: 0, prevTerm: 0, entries: [entry], commit: 1 });
    await storage.writeStarted();
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(appliedIndexes).toEqual([]);
    storage.releaseOne();
    await turnsUntil(() => appliedIndexes.length > 0);
    expect(appliedIndexes).toEqual([1]);
  });

  it('a step is handled before the event loop turns: the Ready is taken and its write started in the same turn', async () => {
    const { driver, storage } = await makeDriver('n2', ['n1', 'n2', 'n3']);
    driver.start();
    await new Promise((resolve) => setImmediate(resolve)); // start()'s own Ready is done
    const entry: Entry = { index: 1, term: 1, kind: 'command', data: new Uint8Array([1]) };
    const turnEnded = new Promise<'turn'>((resolve) => setImmediate(() => resolve('turn'))); // queued before the step
    driver.step({ type: 'app', from: 'n1', to: 'n2', term: 1, prevIndex: 0, prevTerm: 0, entries: [entry], commit: 0 });
    const first = await Promise.race([storage.writeStarted().then(() => 'write' as const), turnEnded]);
    expect(first).toBe('write');
  });

  it("a follower's acknowledgement is flushed to the transport as soon as its write is done", async () => {
    const { driver, storage, sent, delivered, flushedAt } = await makeDriver('n2', ['n1', 'n2', 'n3']);
    driver.start();
    const entry: Entry = { index: 1, term: 1, kind: 'command', data: new Uint8Array([1]) };
    driver.step({ type: 'app', from: 'n1', to: 'n2', term: 1, prevIndex: 0, prevTerm: 0, entries: [entry], commit: 0 });
    await storage.writeStarted();
    expect(flushedAt).toEqual([]);
    storage.releaseOne();
    await delivered;
    expect(flushedAt).toEqual([sent.length]); // one flush, right after the acknowledgement was sent
  });

  it("a leader's appends are flushed to the transport before its own write of them is done", async () => {
    const { driver, storage, sent, flushedAt, node } = await makeDriver('n1', ['n1', 'n2', 'n3']);
    storage.openGates(); // the election's writes go through; the new leader's first entry waits
    for (let i = 0; i < node.leaseTicks; i++) node.tick();
    driver.start();
    driver.campaign();
    await turnsUntil(() => sent.some((m) => m.type === 'preVote' || m.type === 'vote'));
    const ask = sent.find((m) => m.type === 'preVote' || m.type === 'vote')!;
    if (ask.type === 'preVote') {
      for (const from of ['n2', 'n3']) driver.step({ type: 'preVoteResp', from, to: 'n1', term: ask.term, reject: false });
      await turnsUntil(() => sent.some((m) => m.type === 'vote'));
    }
    storage.closeGates();
    const term = node.status().term;
    for (const from of ['n2', 'n3']) driver.step({ type: 'voteResp', from, to: 'n1', term, reject: false });
    await storage.writeStarted(); // the new leader's no-op entry
    expect(node.status().role).toBe('leader');
    const appends = sent.filter((m) => m.type === 'app');
    expect(appends.map((m) => m.to).sort()).toEqual(['n2', 'n3']);
    expect(flushedAt.at(-1)).toBe(sent.length); // flushed while the write is still waiting
  });

  it("a leader hands its write to storage before its appends leave (they may wake a follower that takes the core)", async () => {
    const { driver, storage, sent, node } = await makeDriver('n1', ['n1', 'n2', 'n3']);
    await electN1({ driver, storage, node, sent });
    // Both followers take the leader's first entry: their progress replicates, no longer probes.
    for (const from of ['n2', 'n3']) driver.step({ type: 'appResp', from, to: 'n1', term: 1, index: node.status().lastIndex, reject: false, hintIndex: 0, hintTerm: 0 });
    await turnsUntil(() => !driver['running']);
    storage.closeGates();
    storage.events.length = 0;
    void driver.propose(new Uint8Array([7])).catch(() => undefined);
    await storage.writeStarted();
    expect(storage.events).toEqual(['persist', 'send app', 'send app']);
  });

  it('a proposal is answered only after its entry is written', async () => {
    const { driver, storage, node } = await makeDriver('n1', ['n1']);
    for (let i = 0; i < node.leaseTicks; i++) node.tick(); // a lone voter campaigns once the lease window has passed
    driver.start();
    // Its election and no-op go through storage like everything else.
    while (node.status().role !== 'leader' || node.status().commit < 1) {
      await storage.writeStarted();
      storage.releaseOne();
      await new Promise((resolve) => setImmediate(resolve));
    }
    let answered = false;
    const proposal = driver.propose(new Uint8Array([7])).then((index) => {
      answered = true;
      return index;
    });
    await storage.writeStarted();
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(false);
    storage.releaseOne();
    expect(await proposal).toBe(2);
  });
});

describe('RaftDriver leader lease', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const tickMs = 100;

  /** Lets the driver's Ready loop run (setImmediate is not faked). */
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  };

  /**
   * n1 leads n1..n3 (the test plays n2; n3 is silent), has committed, and n2 acknowledged
   * one heartbeat round, `ackAfterMs` after it went out. The ticker and performance.now()
   * are faked, and Date too unless `fakeWall` is false; the Ready loop's setImmediate is real.
   */
  async function leaderWithLease({ ackAfterMs = 0, fakeWall = true } = {}) {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance', ...(fakeWall ? (['Date'] as const) : [])] });
    const made = await makeDriver('n1', ['n1', 'n2', 'n3'], { electionTicks: 20, tickMs });
    const { driver, storage, node, sent } = made;
    storage.openGates();
    for (let i = 0; i < node.leaseTicks; i++) node.tick();
    driver.start();
    node.campaign();
    driver.step({ type: 'preVoteResp', from: 'n2', to: 'n1', term: 1, reject: false });
    await settle();
    driver.step({ type: 'voteResp', from: 'n2', to: 'n1', term: 1, reject: false });
    await settle();
    expect(node.status().role).toBe('leader');
    driver.step({ type: 'appResp', from: 'n2', to: 'n1', term: 1, index: 1, reject: false, hintIndex: 0, hintTerm: 0 });
    await settle();
    expect(node.committedIndex).toBe(1);
    // One tick: a heartbeat round goes out; n2's acknowledgement makes a quorum with n1.
    vi.advanceTimersByTime(tickMs);
    await settle();
    const context = lastHeartbeat(sent).context;
    vi.advanceTimersByTime(ackAfterMs);
    driver.step({ type: 'heartbeatResp', from: 'n2', to: 'n1', term: 1, context });
    await settle();
    expect(node.leaseRound()).toBe(Number(context));
    return { ...made, round: Number(context) };
  }

  const lastHeartbeat = (sent: readonly Message[]) => [...sent].reverse().find((m) => m.type === 'heartbeat' && m.to === 'n2') as Extract<Message, { type: 'heartbeat' }>;

  /** A read that must take a heartbeat round: it resolves only once n2 acknowledges a new round. */
  async function expectRoundRead(made: Awaited<ReturnType<typeof leaderWithLease>>): Promise<void> {
    const { driver, sent, round } = made;
    const before = driver.linearizableReads;
    const read = driver.readIndex(1000);
    await settle();
    expect(driver.linearizableReads).toEqual({ lease: before.lease, round: before.round + 1 });
    const next = lastHeartbeat(sent);
    expect(Number(next.context)).toBeGreaterThan(round);
    driver.step({ type: 'heartbeatResp', from: 'n2', to: 'n1', term: 1, context: next.context });
    expect(await read).toBe(1);
  }

  it('serves a read without a round while a round a quorum acknowledged is younger than the lease', async () => {
    const made = await leaderWithLease();
    const { driver, node, sent, round } = made;
    const before = sent.length;
    expect(await driver.readIndex(1000)).toBe(1);
    expect(driver.linearizableReads).toEqual({ lease: 1, round: 0 });
    expect(sent.length).toBe(before); // no round for it

    // Past the lease ((leaseTicks - 2) ticks, less the clock allowance) with no newer acknowledged round: a round again.
    vi.advanceTimersByTime((node.leaseTicks - 2) * tickMs);
    await settle();
    expect(node.leaseRound()).toBe(round); // the core still has it; only the clock says it is too old
    await expectRoundRead(made);
  });

  it('readIndexNow: the commit index at once under the lease (counted only when asked), null past it', async () => {
    const made = await leaderWithLease();
    const { driver, node, sent } = made;
    const before = sent.length;
    expect(driver.readIndexNow(false)).toBe(1);
    expect(driver.linearizableReads).toEqual({ lease: 0, round: 0 });
    driver.countLeaseRead();
    expect(driver.readIndexNow()).toBe(1);
    expect(driver.linearizableReads).toEqual({ lease: 2, round: 0 });
    expect(sent.length).toBe(before); // no round for either
    vi.advanceTimersByTime((node.leaseTicks - 2) * tickMs);
    expect(driver.readIndexNow()).toBeNull(); // the caller takes a round (readIndex) instead
    expect(driver.linearizableReads).toEqual({ lease: 2, round: 0 });
  });

  it('times the lease from when the round went out, not from when it was acknowledged, on the monotonic clock alone', async () => {
    const made = await leaderWithLease({ ackAfterMs: 150, fakeWall: false });
    const { driver, node } = made;
    const leaseMs = (node.leaseTicks - 2) * tickMs * 0.9; // 180 ms here
    vi.advanceTimersByTime(leaseMs - 150 - 1);
    expect(await driver.readIndex(1000)).toBe(1);
    expect(driver.linearizableReads).toEqual({ lease: 1, round: 0 });
    vi.advanceTimersByTime(1);
    await expectRoundRead(made);
  });

  it("answers a member's ReadIndex request at once under the lease, and after a heartbeat round past it", async () => {
    const made = await leaderWithLease();
    const { driver, node, sent, round } = made;
    const before = sent.length;
    driver.step({ type: 'readIndex', from: 'n2', to: 'n1', term: 1, context: 'm1' });
    await settle();
    expect(sent.slice(before)).toEqual([{ type: 'readIndexResp', from: 'n1', to: 'n2', term: 1, context: 'm1', index: 1 }]); // no round
    expect(driver.memberReadsAnsweredUnderLease).toBe(1);

    // A request from another term is not answered under the lease (the core's term rules apply).
    driver.step({ type: 'readIndex', from: 'n3', to: 'n1', term: 0, context: 'old' });
    await settle();
    expect(sent.slice(before + 1).filter((m) => m.type === 'readIndexResp')).toEqual([]);

    vi.advanceTimersByTime((node.leaseTicks - 2) * tickMs);
    const past = sent.length;
    driver.step({ type: 'readIndex', from: 'n2', to: 'n1', term: 1, context: 'm2' });
    await settle();
    expect(sent.slice(past).filter((m) => m.type === 'readIndexResp')).toEqual([]); // not before a quorum confirms
    const next = lastHeartbeat(sent);
    expect(Number(next.context)).toBeGreaterThan(round);
    driver.step({ type: 'heartbeatResp', from: 'n2', to: 'n1', term: 1, context: next.context });
    await settle();
    expect(sent.slice(past).filter((m) => m.type === 'readIndexResp')).toEqual([{ type: 'readIndexResp', from: 'n1', to: 'n2', term: 1, context: 'm2', index: 1 }]);
    expect(driver.memberReadsAnsweredUnderLease).toBe(1);
  });

  it('ends the lease when the wall clock jumps ahead (the machine slept, the monotonic clock did not run)', async () => {
    const made = await leaderWithLease();
    vi.setSystemTime(Date.now() + 60_000);
    await expectRoundRead(made);
  });

  it('ends the lease when the wall clock is stepped back', async () => {
    const made = await leaderWithLease();
    vi.setSystemTime(Date.now() - 1);
    await expectRoundRead(made);
  });
});

describe('RaftDriver read contexts', () => {
  /** Resolves once `sent` holds a message matching `match` (checked once per event-loop turn). */
  const sentMatching = (sent: readonly Message[], match: (m: Message) => boolean): Promise<Message> =>
    new Promise((resolve) => {
      const check = (): void => {
        const found = sent.find(match);
        if (found === undefined) setImmediate(check);
        else resolve(found);
      };
      check();
    });

  /** A process of follower n2 that knows its leader n1 and asked for a read. */
  async function followerAsking() {
    const made = await makeDriver('n2', ['n1', 'n2', 'n3']);
    made.storage.openGates();
    made.driver.start();
    made.driver.step({ type: 'heartbeat', from: 'n1', to: 'n2', term: 1, commit: 0, context: '1' });
    const read = made.driver.readIndex(60_000);
    const asked = await sentMatching(made.sent, (m) => m.type === 'readIndex');
    return { ...made, read, context: (asked as Extract<Message, { type: 'readIndex' }>).context };
  }

  it('an answer the leader gives an earlier process of this node is not taken for a read of this one', async () => {
    const earlier = await followerAsking();
    const later = await followerAsking();
    expect(later.context).not.toBe(earlier.context);
    // The leader's answer to the earlier process (queued for n2 while it restarted) arrives first: index 0, stale.
    later.driver.step({ type: 'readIndexResp', from: 'n1', to: 'n2', term: 1, context: earlier.context, index: 0 });
    // Entry 1 commits, and the answer to this process's own read says 1.
    const entry: Entry = { index: 1, term: 1, kind: 'command', data: new Uint8Array([1]) };
    later.driver.step({ type: 'app', from: 'n1', to: 'n2', term: 1, prevIndex: 0, prevTerm: 0, entries: [entry], commit: 1 });
    later.driver.step({ type: 'readIndexResp', from: 'n1', to: 'n2', term: 1, context: later.context, index: 1 });
    expect(await later.read).toBe(1);
    // The earlier process never got its answer; stopping it fails its read rather than leaving it pending.
    const earlierOutcome = earlier.read.then(
      () => 'answered',
      (err: { code?: string }) => err.code,
    );
    await earlier.driver.stop();
    expect(await earlierOutcome).toBe('UNAVAILABLE');
  });
});

/** A monotonic clock the test moves by hand, with a ticker it fires by hand; defer and after are real. */
function handClock(): { clock: DriverClock; advance(ms: number): void; tick(): void } {
  let now = 1_000;
  let ticker: (() => void) | null = null;
  const clock: DriverClock = {
    monotonic: () => now,
    wall: () => now,
    defer: (fn) => void setImmediate(fn),
    after: (ms, fn) => {
      const t = setTimeout(fn, ms);
      return () => clearTimeout(t);
    },
    every: (_ms, fn) => {
      ticker = fn;
      return () => (ticker = null);
    },
  };
  return { clock, advance: (ms) => (now += ms), tick: () => ticker?.() };
}

describe('RaftDriver stall reports', () => {
  it('reports a Ready whose write held the core still past stallWarnMs, with how long the write took', async () => {
    const hand = handClock();
    const stalls: Stall[] = [];
    const { driver, storage, delivered } = await makeDriver('n2', ['n1', 'n2', 'n3'], { electionTicks: 20, tickMs: 50 }, { clock: hand.clock, stallWarnMs: 500, onStall: (s) => stalls.push(s) });
    driver.start();
    const entry: Entry = { index: 1, term: 1, kind: 'command', data: new Uint8Array([1]) };
    driver.step({ type: 'app', from: 'n1', to: 'n2', term: 1, prevIndex: 0, prevTerm: 0, entries: [entry], commit: 0 });
    await storage.writeStarted();
    hand.advance(499);
    storage.releaseOne();
    await delivered;
    await turnsUntil(() => !driver['running']);
    expect(stalls).toEqual([]); // under the threshold: nothing said

    driver.step({ type: 'app', from: 'n1', to: 'n2', term: 1, prevIndex: 1, prevTerm: 1, entries: [{ ...entry, index: 2 }], commit: 1 });
    await storage.writeStarted();
    hand.advance(700);
    storage.releaseOne();
    await turnsUntil(() => stalls.length > 0);
    expect(stalls).toEqual([{ kind: 'ready', ms: 700, persistMs: 700, applyMs: expect.any(Number), entries: 1, committed: 1 }]);
  });

  it('reports ticks that came late (the thread was busy), not ticks on time', async () => {
    const hand = handClock();
    const stalls: Stall[] = [];
    const { driver } = await makeDriver('n2', ['n1', 'n2', 'n3'], { electionTicks: 20, tickMs: 50 }, { clock: hand.clock, stallWarnMs: 500, onStall: (s) => stalls.push(s) });
    driver.start();
    for (let i = 0; i < 5; i++) {
      hand.advance(50);
      hand.tick();
    }
    hand.advance(549); // 499 ms late
    hand.tick();
    expect(stalls).toEqual([]);
    hand.advance(650); // 600 ms late
    hand.tick();
    expect(stalls).toEqual([{ kind: 'tick', ms: 600 }]);
  });
});

describe('RaftDriver heartbeats while a Ready is held', () => {
  const entry = (index: number, term = 1): Entry => ({ index, term, kind: 'command', data: new Uint8Array([index]) });

  it('a leader whose log write is slow still sends its heartbeats on time, until the write looks hung', async () => {
    const hand = handClock();
    const { driver, storage, node, sent } = await makeDriver('n1', ['n1', 'n2', 'n3'], { electionTicks: 20, tickMs: 50 }, { clock: hand.clock });
    await electN1({ driver, storage, node, sent });

    storage.closeGates();
    const proposed = driver.propose(new Uint8Array([7])).catch((err: unknown) => err); // never commits: no follower answers
    await storage.writeStarted(); // the Ready with the new entry is held in its write
    const before = sent.length;
    hand.tick();
    const beats = sent.slice(before).filter((m) => m.type === 'heartbeat');
    expect(beats.map((m) => m.to).sort()).toEqual(['n2', 'n3']);
    expect(beats.every((m) => m.term === 1)).toBe(true);

    // Held past twice the longest election timeout (2 x 40 ticks of 50 ms): a disk that hangs, not a
    // slow batch. The beats wait now, so that the followers elect a leader that can still commit.
    hand.advance(4_001);
    const later = sent.length;
    hand.tick();
    expect(sent.slice(later).filter((m) => m.type === 'heartbeat')).toEqual([]);
    storage.openGates();
    await driver.stop();
    expect(await proposed).toMatchObject({ code: 'UNAVAILABLE' });
  });

  it('a leader compacting its log still sends its heartbeats on time, until the compaction looks hung', async () => {
    const hand = handClock();
    const unused = (): never => {
      throw new Error('this test moves no snapshot');
    };
    const { driver, storage, node, sent } = await makeDriver('n1', ['n1', 'n2', 'n3'], { electionTicks: 20, tickMs: 50 }, {
      clock: hand.clock,
      snapshots: { capture: unused, staging: unused, install: unused, discard: unused },
      compaction: { everyEntries: 1, keepEntries: 0 },
    });
    await electN1({ driver, storage, node, sent });

    // The next entry to commit makes the log long enough to compact; its compaction is held.
    const compacting = storage.holdCompactions();
    const proposed = driver.propose(new Uint8Array([7]));
    await turnsUntil(() => sent.some((m) => m.type === 'app' && m.entries.length > 0 && m.to === 'n2'));
    driver.step({ type: 'appResp', from: 'n2', to: 'n1', term: 1, index: node.status().lastIndex, reject: false, hintIndex: 0, hintTerm: 0 });
    await compacting;
    await proposed;

    const before = sent.length;
    hand.tick();
    const beats = sent.slice(before).filter((m) => m.type === 'heartbeat');
    expect(beats.map((m) => m.to).sort()).toEqual(['n2', 'n3']);

    // Held past twice the longest election timeout: the beats wait, as for a hung write.
    hand.advance(4_001);
    const later = sent.length;
    hand.tick();
    expect(sent.slice(later).filter((m) => m.type === 'heartbeat')).toEqual([]);
    storage.openGates();
    await turnsUntil(() => !driver['running']);
    expect(node.logStart()).toBeGreaterThan(0);
  });

  it('a follower whose Ready is held answers heartbeats at once, but only in a term already on disk', async () => {
    const { driver, storage, sent, delivered } = await makeDriver('n2', ['n1', 'n2', 'n3']);
    driver.start();
    // Term 1 arrives with this append: until its write is done, nothing at term 1 may leave.
    driver.step({ type: 'app', from: 'n1', to: 'n2', term: 1, prevIndex: 0, prevTerm: 0, entries: [entry(1)], commit: 0 });
    await storage.writeStarted();
    driver.step({ type: 'heartbeat', from: 'n1', to: 'n2', term: 1, commit: 0, context: '1' });
    expect(sent).toEqual([]);
    storage.releaseOne();
    await delivered;
    await turnsUntil(() => sent.some((m) => m.type === 'heartbeatResp'));

    // Term 1 on disk: while the next append's write is held, a heartbeat is answered at once.
    driver.step({ type: 'app', from: 'n1', to: 'n2', term: 1, prevIndex: 1, prevTerm: 1, entries: [entry(2)], commit: 1 });
    await storage.writeStarted();
    const before = sent.length;
    driver.step({ type: 'heartbeat', from: 'n1', to: 'n2', term: 1, commit: 1, context: '2' });
    expect(sent.slice(before)).toMatchObject([{ type: 'heartbeatResp', to: 'n1', term: 1, context: '2' }]);
    expect(sent.slice(before).some((m) => m.type === 'appResp')).toBe(false); // the acknowledgement still waits for the write
    storage.releaseOne();
  });
});

describe('RaftDriver awaitEntry (an entry another member proposed)', () => {
  it('an awaited entry a snapshot covered is "not proposed" only when its term is above the snapshot\'s', () => {
    const meta: SnapshotMeta = { index: 10, term: 3, config: { voters: ['n1', 'n2', 'n3'], learners: [] } };
    // Above the snapshot's term: cannot be in it, never applies: safe to send again.
    expect(coveredBySnapshot(7, 4, meta)).toMatchObject({ code: 'UNAVAILABLE', notProposed: true });
    // The snapshot's term or below: it may be in the snapshot; saying "not proposed" would let a resend apply it twice.
    expect(coveredBySnapshot(7, 3, meta)).toMatchObject({ code: 'UNAVAILABLE', notProposed: false });
    expect(coveredBySnapshot(7, 2, meta)).toMatchObject({ code: 'UNAVAILABLE', notProposed: false });
  });

  const cmd = (index: number, term: number): Entry => ({ index, term, kind: 'command', data: new Uint8Array([index]) });
  /** An append from `leader` in `term` carrying `entries` after (prevIndex, prevTerm), committing `commit`. */
  const append = (term: number, prevIndex: number, prevTerm: number, entries: Entry[], commit: number, leader = 'n1'): Message => ({
    type: 'app',
    from: leader,
    to: 'n2',
    term,
    prevIndex,
    prevTerm,
    entries,
    commit,
  });

  async function follower() {
    const made = await makeDriver('n2', ['n1', 'n2', 'n3']);
    made.storage.openGates();
    made.driver.start();
    return made;
  }

  it("settles with this member's apply result once the entry at (index, term) applies", async () => {
    const { driver, appliedIndexes } = await follower();
    const awaited = driver.awaitEntry(2, 1);
    driver.step(append(1, 0, 0, [cmd(1, 1), cmd(2, 1)], 1));
    await turnsUntil(() => appliedIndexes.length === 1);
    driver.step(append(1, 2, 1, [], 2));
    expect(await awaited).toBe(2);
  });

  it('rejects as not proposed when the entry applied at the index has another term', async () => {
    const { driver, appliedIndexes } = await follower();
    driver.step(append(1, 0, 0, [cmd(1, 1), cmd(2, 1)], 1));
    await turnsUntil(() => appliedIndexes.length === 1);
    const awaited = driver.awaitEntry(2, 1);
    // A new leader of term 2 overwrites index 2 and commits it.
    driver.step(append(2, 1, 1, [cmd(2, 2)], 2, 'n3'));
    const err = await awaited.catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'RaftError', code: 'UNAVAILABLE', notProposed: true });
    expect(appliedIndexes).toEqual([1, 2]);
  });

  it('is not rejected when this member changes role (it never led the entry)', async () => {
    const { driver, node, appliedIndexes } = await follower();
    driver.step(append(1, 0, 0, [cmd(1, 1), cmd(2, 1)], 1));
    await turnsUntil(() => appliedIndexes.length === 1);
    const awaited = driver.awaitEntry(2, 1);
    let settled = false;
    void awaited.then(
      () => (settled = true),
      () => (settled = true),
    );
    // n2 stops following (past the leader's lease it pre-campaigns), then hears the leader again.
    for (let i = 0; i < node.leaseTicks; i++) node.tick();
    driver.campaign();
    await turnsUntil(() => node.status().role !== 'follower' && !driver['running']);
    driver.step(append(1, 2, 1, [], 1));
    await turnsUntil(() => node.status().role === 'follower' && !driver['running']);
    expect(settled).toBe(false);
    driver.step(append(1, 2, 1, [], 2));
    expect(await awaited).toBe(2);
  });

  it('answers an index applied already: not proposed under another term, else outcome unknown', async () => {
    const { driver, appliedIndexes } = await follower();
    driver.step(append(1, 0, 0, [cmd(1, 1), cmd(2, 1)], 2));
    await turnsUntil(() => appliedIndexes.length === 2);
    await expect(driver.awaitEntry(2, 3)).rejects.toMatchObject({ code: 'UNAVAILABLE', notProposed: true });
    await expect(driver.awaitEntry(2, 1)).rejects.toMatchObject({ code: 'UNAVAILABLE', notProposed: false });
  });

  it('a wait given up (a forward past its deadline) is forgotten at once; another wait for the same entry is not', async () => {
    const { driver, appliedIndexes } = await follower();
    const giveUp = new AbortController();
    const abandoned = driver.awaitEntry(2, 1, giveUp.signal);
    const kept = driver.awaitEntry(2, 1);
    expect(driver.awaitedEntries).toBe(2);
    giveUp.abort();
    await expect(abandoned).rejects.toMatchObject({ code: 'UNAVAILABLE', notProposed: false, message: expect.stringMatching(/given up/) });
    expect(driver.awaitedEntries).toBe(1);
    driver.step(append(1, 0, 0, [cmd(1, 1), cmd(2, 1)], 2));
    await turnsUntil(() => appliedIndexes.length === 2);
    expect(await kept).toBe(2);
    expect(driver.awaitedEntries).toBe(0);
    // Given up before asking: nothing is kept either.
    await expect(driver.awaitEntry(9, 1, giveUp.signal)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(driver.awaitedEntries).toBe(0);
  });

  it('a wait for an applied index that is given up (a relayed answer at its deadline) is forgotten at once', async () => {
    const { driver, appliedIndexes } = await follower();
    const giveUp = new AbortController();
    const abandoned = driver.waitApplied(2, giveUp.signal);
    const kept = driver.waitApplied(2);
    expect(driver.appliedWaits).toBe(2);
    giveUp.abort();
    await expect(abandoned).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(driver.appliedWaits).toBe(1);
    await expect(driver.waitApplied(9, giveUp.signal)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(driver.appliedWaits).toBe(1);
    driver.step(append(1, 0, 0, [cmd(1, 1), cmd(2, 1)], 2));
    await turnsUntil(() => appliedIndexes.length === 2);
    await kept;
    expect(driver.appliedWaits).toBe(0);
  });

  it('rejects every waiting entry when the driver stops', async () => {
    const { driver } = await follower();
    const awaited = driver.awaitEntry(5, 1);
    await driver.stop();
    await expect(awaited).rejects.toMatchObject({ code: 'UNAVAILABLE', message: 'server is shutting down' });
  });
});
