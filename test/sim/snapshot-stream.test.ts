// The simulator's snapshot sender against the real receiver-side assembler:
// chunks reassemble into the captured bytes, a lost chunk makes the transfer
// fail rather than install something partial, and the simulated state survives
// the round trip.

import { describe, expect, it } from 'vitest';
import { SnapshotAssembler } from '../../src/raft/state-transfer.js';
import type { SnapshotRequest } from '../../src/raft/types.js';
import { SnapshotStream } from './snapshot-stream.js';
import { decodeState, encodeState, SnapshotFormatError, type SimState } from './state-machine.js';

const state: SimState = { applied: 42, digest: 0xdeadbeef, commandsApplied: 17, config: { voters: ['n1', 'n2', 'n3'], learners: ['n4'] } };
const meta = { index: 42, term: 3, config: state.config };

function stream(chunkBytes: number, separateDone: boolean, data = encodeState(state, 100)): SnapshotStream {
  return new SnapshotStream({ from: 'n1', to: 'n2', term: 5, meta, data, chunkBytes, separateDone });
}

function drain(s: SnapshotStream): SnapshotRequest[][] {
  const rounds: SnapshotRequest[][] = [];
  while (!s.finished) rounds.push(s.nextMessages());
  return rounds;
}

function assemble(messages: readonly SnapshotRequest[]): Buffer | null {
  const assembler = new SnapshotAssembler();
  let out: Buffer | null = null;
  for (const m of messages) out = assembler.accept(`${m.from}/${m.term}/${m.meta.index}`, m.offset, m.chunk, m.done, m.checksum) ?? out;
  return out;
}

describe('SnapshotStream', () => {
  for (const separateDone of [false, true]) {
    it(`cuts the state into chunks that the real assembler puts back together (checksum ${separateDone ? 'in its own message' : 'on the last chunk'})`, () => {
      const data = encodeState(state, 100);
      const rounds = drain(stream(24, separateDone));
      expect(rounds).toHaveLength(Math.ceil(data.length / 24));
      expect(rounds.at(-1)).toHaveLength(separateDone ? 2 : 1);
      const messages = rounds.flat();
      expect(messages.filter((m) => m.done)).toHaveLength(1);
      expect(messages.every((m) => m.term === 5 && m.meta === meta && m.to === 'n2')).toBe(true);
      const assembled = assemble(messages);
      expect(assembled).not.toBeNull();
      expect(Buffer.compare(assembled!, Buffer.from(data))).toBe(0);
      expect(decodeState(assembled!)).toEqual(state);
    });
  }

  it('sends a small state as one message', () => {
    const rounds = drain(stream(1 << 20, false));
    expect(rounds).toEqual([[expect.objectContaining({ offset: 0, done: true })]]);
  });

  it('a lost middle chunk makes the transfer fail instead of installing a partial state', () => {
    const messages = drain(stream(16, true)).flat();
    expect(messages.length).toBeGreaterThan(3);
    expect(assemble(messages.filter((_, i) => i !== 1))).toBeNull();
  });

  it('refuses a chunk size below one byte, and a call after the end', () => {
    expect(() => stream(0, false)).toThrow(RangeError);
    const s = stream(1 << 20, false);
    s.nextMessages();
    expect(() => s.nextMessages()).toThrow(/already finished/);
  });
});

describe('simulated state encoding', () => {
  it('rejects a stream without a valid header', () => {
    expect(() => decodeState(new Uint8Array([1, 2, 3]))).toThrow(SnapshotFormatError);
    expect(() => decodeState(new TextEncoder().encode('{"applied":1}\n'))).toThrow(SnapshotFormatError);
    expect(() => decodeState(new TextEncoder().encode('not json\n'))).toThrow(SnapshotFormatError);
  });
});
