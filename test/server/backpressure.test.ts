// Overload slows senders instead of failing them (issue 32): a connection past its
// requests in flight, or a member whose writes waiting to commit are past their
// bound, stops reading that socket, so TCP makes the client wait; no request is refused.
import { afterEach, describe, expect, it } from 'vitest';
import { NOT_PROPOSED } from '../../src/protocol/index.js';
import { RaftError } from '../../src/raft/driver.js';
import { toVeraError, type FrontEnd } from '../../src/server/front/context.js';
import { ReadPauses } from '../../src/server/front/read-pauses.js';
import { WritePressure } from '../../src/server/node/write-pressure.js';
import { startServer, stopServer } from '../support/member.js';
import { WireClient, type Reply } from './wire-client.js';

afterEach(async () => {
  await stopServer();
});

describe('backpressure on the client port', () => {
  it('1,024 writes pipelined on one connection (16x its in-flight limit) are all applied, none refused', async () => {
    const { url } = await startServer({ limits: { inflightPerConnection: 64, itemsPerList: 100_000 } });
    const wire = await WireClient.connect(url, 'msgpack');
    try {
      await wire.hello();
      const ids: number[] = [];
      for (let i = 0; i < 1024; i++) {
        const id = wire.newId();
        ids.push(id);
        wire.send({ id, op: 'push', path: `/bp/k${i % 32}`, data: i, persistent: true, watch: false });
      }
      const replies: Reply[] = [];
      for (const id of ids) replies.push((await wire.waitReply(id, 30_000)).value as unknown as Reply);
      const refused = replies.filter((r) => !r.ok).map((r) => r.error?.code);
      expect(refused).toEqual([]);
      expect(replies).toHaveLength(1024);
    } finally {
      await wire.close();
    }
  });
});

describe('read pauses and write pressure', () => {
  it('the socket is read again only once every reason to pause is gone', () => {
    const calls: string[] = [];
    const pauses = new ReadPauses(
      () => calls.push('pause'),
      () => calls.push('resume'),
    );
    pauses.hold('output');
    pauses.hold('inflight');
    pauses.hold('inflight');
    pauses.release('output');
    expect(calls).toEqual(['pause']);
    pauses.release('writes'); // not held: changes nothing
    pauses.release('inflight');
    expect(calls).toEqual(['pause', 'resume']);
    expect(pauses.holds('inflight')).toBe(false);
  });

  it('is over its bound of writes or bytes while they wait, and wakes its waiters once below', async () => {
    const pressure = new WritePressure({ writes: 2, bytes: 100 });
    const settle: Array<() => void> = [];
    const proposal = (): Promise<void> => new Promise<void>((resolve) => settle.push(resolve));
    const a = pressure.track(proposal(), 10);
    expect(pressure.over).toBe(false);
    const b = pressure.track(proposal(), 10);
    expect(pressure.over).toBe(true);
    let woken = 0;
    pressure.whenBelow(() => woken++);
    expect(woken).toBe(0);
    settle[0]!();
    await a;
    await Promise.resolve();
    expect(pressure.over).toBe(false);
    expect(woken).toBe(1);
    const big = pressure.track(Promise.reject(new Error('refused')), 100);
    expect(pressure.over).toBe(true);
    await expect(big).rejects.toThrow('refused');
    await Promise.resolve();
    expect(pressure.over).toBe(false);
    settle[1]!();
    await b;
  });
});

describe('a write refused before it was proposed', () => {
  it('answers UNAVAILABLE with reason not-proposed, which the client library sends again; one lost while pending has no such reason', () => {
    const fe = {} as FrontEnd;
    const refused = toVeraError(new RaftError('UNAVAILABLE', 'too many writes are waiting to commit; retry shortly', 'n1', true), fe);
    expect(refused).toMatchObject({ code: 'UNAVAILABLE', hints: { retryAfterMs: 200, reason: NOT_PROPOSED } });
    const lost = toVeraError(new RaftError('UNAVAILABLE', 'proposal at index 7 was superseded'), fe);
    expect(lost.code).toBe('UNAVAILABLE');
    expect(lost.hints.reason).toBeUndefined();
  });
});
