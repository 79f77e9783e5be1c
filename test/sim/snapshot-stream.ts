// The sending side of one InstallSnapshot transfer in the simulator: a captured
// state cut into chunks, one chunk per call, in the wire format of the real
// driver (offset = bytes before the chunk, sha256 of all bytes on the last
// message), so the receiver can use the real SnapshotAssembler.

import { createHash, type Hash } from 'node:crypto';
import type { NodeId, SnapshotMeta, SnapshotRequest } from '../../src/raft/types.js';

export interface SnapshotStreamOptions {
  readonly from: NodeId;
  readonly to: NodeId;
  /** The leader's term when it captured the state. */
  readonly term: number;
  readonly meta: SnapshotMeta;
  readonly data: Uint8Array;
  readonly chunkBytes: number;
  /**
   * true: the checksum travels in a separate empty last message, as the real driver
   * sends it; false: it rides on the last chunk.
   */
  readonly separateDone: boolean;
}

export class SnapshotStream {
  private offset = 0;
  private done = false;
  private readonly hash: Hash = createHash('sha256');

  constructor(readonly options: SnapshotStreamOptions) {
    if (!Number.isSafeInteger(options.chunkBytes) || options.chunkBytes < 1) {
      throw new RangeError(`chunkBytes must be a positive integer, got ${String(options.chunkBytes)}`);
    }
  }

  get to(): NodeId {
    return this.options.to;
  }

  get term(): number {
    return this.options.term;
  }

  get finished(): boolean {
    return this.done;
  }

  /** The messages carrying the next chunk: one, or two for the last chunk when the checksum travels separately. */
  nextMessages(): SnapshotRequest[] {
    const { from, to, term, meta, data, chunkBytes, separateDone } = this.options;
    if (this.finished) throw new Error(`snapshot stream ${from}->${to} already finished`);
    const base = { type: 'snapshot' as const, from, to, term, meta };
    const start = this.offset;
    const end = Math.min(start + chunkBytes, data.length);
    const chunk = data.subarray(start, end);
    this.hash.update(chunk);
    this.offset = end;
    if (end < data.length) return [{ ...base, offset: start, chunk, done: false, checksum: '' }];
    this.done = true;
    const checksum = this.hash.digest('hex');
    if (!separateDone) return [{ ...base, offset: start, chunk, done: true, checksum }];
    return [
      { ...base, offset: start, chunk, done: false, checksum: '' },
      { ...base, offset: end, chunk: new Uint8Array(0), done: true, checksum },
    ];
  }
}
