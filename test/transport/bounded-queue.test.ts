import { describe, expect, it } from 'vitest';
import { BoundedQueue } from '../../src/raft/transport/bounded-queue.js';

describe('BoundedQueue', () => {
  it('is FIFO', () => {
    const q = new BoundedQueue<number>({ maxItems: 10, maxBytes: 100 });
    for (const n of [1, 2, 3]) q.push(n, 1);
    expect([q.shift(), q.shift(), q.shift(), q.shift()]).toEqual([1, 2, 3, undefined]);
  });

  it('drops the oldest items past the count bound', () => {
    const q = new BoundedQueue<number>({ maxItems: 3, maxBytes: 1000 });
    const dropped: number[] = [];
    for (let n = 1; n <= 7; n++) dropped.push(...q.push(n, 1));
    expect(dropped).toEqual([1, 2, 3, 4]);
    expect(q.length).toBe(3);
    expect([q.shift(), q.shift(), q.shift()]).toEqual([5, 6, 7]);
  });

  it('drops the oldest items past the byte bound and keeps the byte count exact', () => {
    const q = new BoundedQueue<string>({ maxItems: 100, maxBytes: 10 });
    q.push('a', 4);
    q.push('b', 4);
    expect(q.push('c', 4)).toEqual(['a']);
    expect(q.bytes).toBe(8);
    expect(q.peek()).toEqual({ item: 'b', bytes: 4 });
    q.shift();
    expect(q.bytes).toBe(4);
  });

  it('keeps the newest item even when it alone is over the byte bound', () => {
    const q = new BoundedQueue<string>({ maxItems: 5, maxBytes: 10 });
    q.push('small', 2);
    expect(q.push('huge', 50)).toEqual(['small']);
    expect(q.length).toBe(1);
    expect(q.shift()).toBe('huge');
  });

  it('stays correct across many pushes and shifts (compaction)', () => {
    const q = new BoundedQueue<number>({ maxItems: 50, maxBytes: 1_000_000 });
    let next = 0;
    let expected = 0;
    for (let round = 0; round < 200; round++) {
      for (let i = 0; i < 30; i++) for (const d of q.push(next++, 1)) expect(d).toBe(expected++);
      for (let i = 0; i < 20; i++) expect(q.shift()).toBe(expected++);
    }
    expect(q.length).toBe(next - expected);
    expect(q.bytes).toBe(q.length);
  });

  it('refuses nonsensical bounds', () => {
    expect(() => new BoundedQueue({ maxItems: 0, maxBytes: 1 })).toThrow(RangeError);
    expect(() => new BoundedQueue({ maxItems: 1, maxBytes: 1.5 })).toThrow(RangeError);
  });
});
