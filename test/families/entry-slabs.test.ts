// A proposed entry's bytes stay in the Raft log until compaction; they must not be views
// of the shared packer's buffer, which every value encoded since also fills: a log of
// 10,000 such views held about 20 MiB at S7 (issue 32, memory). src/statemachine/byte-slabs.ts.
import { describe, expect, it } from 'vitest';
import { decodeEntryCommand, encodeCommand } from '../../src/families/commands.js';
import { ByteSlabs } from '../../src/statemachine/byte-slabs.js';
import { pack } from '../../src/statemachine/codec.js';

const push = (n: number) => ({ op: 'push', session: 's1', path: `/bench/l${n}`, data: 'x'.repeat(128), persistent: true, watch: false });

describe('entry bytes', () => {
  it('share memory with other entries only, never with what the packer encodes next', () => {
    const first = encodeCommand(push(1), 1_764_000_000_000);
    const other = pack({ some: 'record the state machine writes' });
    expect(first.buffer).not.toBe(other.buffer);
    const second = encodeCommand(push(2), 1_764_000_000_001);
    expect(second.buffer).toBe(first.buffer); // consecutive entries share a slab
    expect(first.buffer.byteLength).toBeLessThanOrEqual(64 * 1024);
    // The leader's own decode cache still answers for its copy.
    expect(decodeEntryCommand(first).command).toMatchObject({ path: '/bench/l1' });
  });

  it('a slab holds copies back to back; a large entry gets a buffer of its own', () => {
    const slabs = new ByteSlabs();
    const a = slabs.copy(Buffer.from([1, 2, 3]));
    const b = slabs.copy(Buffer.from([4, 5]));
    expect([...a, ...b]).toEqual([1, 2, 3, 4, 5]);
    expect(b.byteOffset).toBe(a.byteOffset + 3);
    const big = slabs.copy(Buffer.alloc(20 * 1024, 7));
    expect(big.buffer.byteLength).toBe(20 * 1024);
    // A slab that cannot take the next copy is left to the entries it holds.
    const fill = Array.from({ length: 5 }, () => slabs.copy(Buffer.alloc(15 * 1024, 1)));
    expect(fill[4]!.buffer).not.toBe(a.buffer);
    expect(fill.every((f) => f.every((x) => x === 1))).toBe(true);
    expect([...a, ...b]).toEqual([1, 2, 3, 4, 5]);
  });
});
