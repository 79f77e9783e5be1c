// Linearizable reads on a member that is not the leader (RaftDriver.readIndex):
// at most one ReadIndex request is in flight; reads that arrive meanwhile wait
// for the next request, sent when the first is answered (joining the one in
// flight could answer them with a commit index from before they began). A
// request that goes unanswered is sent again, with every read then waiting,
// after an election timeout or when another leader becomes known.

import { afterEach, describe, expect, it } from 'vitest';
import type { Cancel, DriverClock } from '../../src/raft/clock.js';
import { RaftNode } from '../../src/raft/core.js';
import { RaftDriver, RaftError } from '../../src/raft/driver.js';
import { MemoryLogStorage } from '../../src/raft/memory-storage.js';
import type { Entry, Message, NodeId } from '../../src/raft/types.js';

const TICK_MS = 100;
const ELECTION_TICKS = 10;
/** When an unanswered request is sent again. */
const RETRY_MS = ELECTION_TICKS * TICK_MS;

/** A clock whose time and timers the test moves; the driver's Ready loop runs on real setImmediate. */
class HandClock implements DriverClock {
  private now = 1_000;
  private timers: Array<{ at: number; fn: () => void }> = [];
  monotonic = (): number => this.now;
  wall = (): number => this.now;
  defer = (fn: () => void): void => void setImmediate(fn);
  after = (ms: number, fn: () => void): Cancel => {
    const timer = { at: this.now + ms, fn };
    this.timers.push(timer);
    return () => (this.timers = this.timers.filter((t) => t !== timer));
  };
  every = (): Cancel => () => undefined; // no ticks: the test plays the leader
  advance(ms: number): void {
    this.now += ms;
    const due = this.timers.filter((t) => t.at <= this.now);
    this.timers = this.timers.filter((t) => t.at > this.now);
    for (const t of due) t.fn();
  }
}

type ReadIndexMessage = Extract<Message, { type: 'readIndex' }>;

const drivers: Array<RaftDriver<number>> = [];
afterEach(async () => {
  for (const d of drivers.splice(0)) await d.stop();
});

/** Lets the driver's Ready loop run. */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** Follower n2 of n1..n3, which heard leader n1 in term 1 unless told not to (the test plays n1). */
async function follower({ heardLeader = true } = {}) {
  const storage = new MemoryLogStorage({ initialConfig: { voters: ['n1', 'n2', 'n3'], learners: [] } });
  const loaded = await storage.load();
  const node = new RaftNode(
    { id: 'n2', electionTicks: ELECTION_TICKS, heartbeatTicks: 1, random: { int: () => 0 }, maxInflightMessages: 8, maxInflightBytes: 1 << 20, maxMessageBytes: 1 << 20 },
    { hardState: loaded.hardState, snapshot: loaded.snapshot, entries: loaded.entries, applied: 0 },
  );
  const clock = new HandClock();
  const sent: Message[] = [];
  const driver = new RaftDriver<number>(
    {
      node,
      storage,
      transport: { send: (m) => void sent.push(m) },
      apply: async (entries, applied) => {
        for (const entry of entries) applied(entry, entry.index);
      },
      tickMs: TICK_MS,
      clock,
      onFatal: (err) => {
        throw err;
      },
    },
    0,
  );
  drivers.push(driver);
  driver.start();
  if (heardLeader) driver.step({ type: 'heartbeat', from: 'n1', to: 'n2', term: 1, commit: 0, context: '1' });
  await settle();
  const requests = (): ReadIndexMessage[] => sent.filter((m): m is ReadIndexMessage => m.type === 'readIndex');
  /** The leader's answer to request `m` at `index`. */
  const answer = (m: ReadIndexMessage, index: number, from: NodeId = m.to): void =>
    driver.step({ type: 'readIndexResp', from, to: 'n2', term: m.term, context: m.context, index });
  /** Entries 1..n committed by the leader (term 1). */
  const commit = (n: number): void => {
    const entries: Entry[] = Array.from({ length: n }, (_, i) => ({ index: i + 1, term: 1, kind: 'command', data: new Uint8Array([i]) }));
    driver.step({ type: 'app', from: 'n1', to: 'n2', term: 1, prevIndex: 0, prevTerm: 0, entries, commit: n });
  };
  return { driver, clock, sent, requests, answer, commit };
}

/** A read's outcome so far: its index, its error code, or 'pending'. */
function track(read: Promise<number>): { readonly state: number | string } {
  const t = { state: 'pending' as number | string };
  read.then(
    (index) => (t.state = index),
    (err: RaftError) => (t.state = err.code),
  );
  return t;
}

describe('linearizable reads on a member share ReadIndex requests', () => {
  it('concurrent reads share one request, answered once the index is applied here', async () => {
    const f = await follower();
    const reads = [1, 2, 3].map(() => track(f.driver.readIndex(60_000)));
    await settle();
    expect(f.requests()).toHaveLength(1);
    expect(f.requests()[0]).toMatchObject({ from: 'n2', to: 'n1', term: 1 });
    f.answer(f.requests()[0]!, 2);
    await settle();
    expect(reads.map((r) => r.state)).toEqual(['pending', 'pending', 'pending']); // index 2 not applied yet
    f.commit(2);
    await settle();
    expect(reads.map((r) => r.state)).toEqual([2, 2, 2]);
    expect(f.driver.linearizableReads).toEqual({ lease: 0, round: 3 });
  });

  it('reads that arrive while a request is in flight wait for the next one, which leaves when the first is answered', async () => {
    const f = await follower();
    f.commit(3);
    await settle();
    const early = track(f.driver.readIndex(60_000));
    await settle();
    const late = [track(f.driver.readIndex(60_000)), track(f.driver.readIndex(60_000))];
    await settle();
    expect(f.requests()).toHaveLength(1); // the late reads are not sent yet, nor joined to the first request
    const [first] = f.requests();
    f.answer(first!, 1);
    await settle();
    expect(early.state).toBe(1);
    expect(late.map((r) => r.state)).toEqual(['pending', 'pending']); // index 1 may predate them
    expect(f.requests()).toHaveLength(2);
    const second = f.requests()[1]!;
    expect(second.context).not.toBe(first!.context);
    f.answer(first!, 1); // a duplicate of the first answer does not answer the late reads
    await settle();
    expect(late.map((r) => r.state)).toEqual(['pending', 'pending']);
    f.answer(second, 3);
    await settle();
    expect(late.map((r) => r.state)).toEqual([3, 3]);
    expect(f.requests()).toHaveLength(2); // nothing waiting: no third request
  });

  it('a request unanswered for an election timeout is sent again with every read waiting', async () => {
    const f = await follower();
    f.commit(1);
    const first = track(f.driver.readIndex(60_000));
    await settle();
    const second = track(f.driver.readIndex(60_000));
    await settle();
    f.clock.advance(RETRY_MS - 1);
    await settle();
    expect(f.requests()).toHaveLength(1);
    f.clock.advance(1);
    await settle();
    expect(f.requests()).toHaveLength(2);
    const [lost, again] = f.requests();
    f.answer(lost!, 1); // a late answer to the request given up is ignored
    await settle();
    expect([first.state, second.state]).toEqual(['pending', 'pending']);
    f.answer(again!, 1);
    await settle();
    expect([first.state, second.state]).toEqual([1, 1]);
  });

  it('a request in flight is sent again to a new leader as soon as it is known', async () => {
    const f = await follower();
    f.commit(1);
    const read = track(f.driver.readIndex(60_000));
    await settle();
    expect(f.requests()).toHaveLength(1);
    f.driver.step({ type: 'heartbeat', from: 'n3', to: 'n2', term: 2, commit: 1, context: '1' });
    await settle();
    expect(f.requests()).toHaveLength(2);
    const resent = f.requests()[1]!;
    expect(resent).toMatchObject({ to: 'n3', term: 2 });
    f.answer(resent, 1);
    await settle();
    expect(read.state).toBe(1);
  });

  it("a read that times out leaves its request; the others keep waiting for the answer", async () => {
    const f = await follower();
    f.commit(1);
    const short = track(f.driver.readIndex(50));
    const long = track(f.driver.readIndex(60_000));
    await settle();
    f.clock.advance(50);
    await settle();
    expect([short.state, long.state]).toEqual(['TIMEOUT', 'pending']);
    f.answer(f.requests()[0]!, 1);
    await settle();
    expect([short.state, long.state]).toEqual(['TIMEOUT', 1]);
  });

  it('a read with no leader known and no request in flight is refused at once', async () => {
    const f = await follower({ heardLeader: false });
    await expect(f.driver.readIndex(60_000)).rejects.toMatchObject({ code: 'NO_LEADER' });
    expect(f.requests()).toEqual([]);
  });

  it('reads waiting while no leader is known are sent once one is', async () => {
    const f = await follower();
    f.commit(1);
    const first = track(f.driver.readIndex(60_000));
    await settle();
    f.driver.leaderUnreachable('n1'); // n2 forgets its leader; the request in flight may still be answered
    await settle();
    const second = track(f.driver.readIndex(60_000));
    f.clock.advance(RETRY_MS); // no answer, and nobody to ask again
    await settle();
    expect(f.requests()).toHaveLength(1);
    expect([first.state, second.state]).toEqual(['pending', 'pending']);
    f.driver.step({ type: 'heartbeat', from: 'n3', to: 'n2', term: 2, commit: 1, context: '1' });
    await settle();
    expect(f.requests()).toHaveLength(2);
    f.answer(f.requests()[1]!, 1);
    await settle();
    expect([first.state, second.state]).toEqual([1, 1]);
  });

  it('stopping the driver fails the reads in flight and those waiting for the next request', async () => {
    const f = await follower();
    const inFlight = track(f.driver.readIndex(60_000));
    await settle();
    const next = track(f.driver.readIndex(60_000));
    await f.driver.stop();
    await settle();
    expect([inFlight.state, next.state]).toEqual(['UNAVAILABLE', 'UNAVAILABLE']);
  });
});
