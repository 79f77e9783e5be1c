// Where a proposed entry's bytes live while the Raft log holds them. The shared
// packer (statemachine/codec.ts) returns views of one large buffer that every value
// it encodes shares, the state machine's transient records included, so a log entry
// kept as such a view kept the whole buffer alive: at 10,000 entries the leader
// held about 20 MiB of them for 2.5 MiB of entries (a heap snapshot at S7, issue 32,
// memory). Copied into slabs of their own, consecutive entries share a slab, and a
// slab goes once log compaction has dropped its entries (they leave in order).

/** Bytes of one slab; an entry larger than a quarter of it gets a buffer of its own. */
const SLAB_BYTES = 64 * 1024;

export class EntrySlabs {
  private slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
  private used = 0;

  /** A copy of `bytes` that shares its memory only with other entries' copies. */
  copy(bytes: Uint8Array): Buffer {
    if (bytes.byteLength > SLAB_BYTES / 4) {
      const own = Buffer.allocUnsafeSlow(bytes.byteLength);
      own.set(bytes);
      return own;
    }
    if (this.used + bytes.byteLength > SLAB_BYTES) {
      this.slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
      this.used = 0;
    }
    const out = this.slab.subarray(this.used, this.used + bytes.byteLength);
    out.set(bytes);
    this.used += bytes.byteLength;
    return out;
  }
}
