// Long-lived copies of bytes, kept side by side in buffers nothing else uses. The shared
// packer (codec.ts) returns views of one large buffer that every value it encodes
// shares, so a view kept for minutes pins the whole buffer: the Raft log's entries
// (at 10,000 entries a leader held about 20 MiB for 2.5 MiB of them, a heap snapshot
// at S7) and the watch history's events (server/node/event-log.ts). Their owners drop
// copies in the order they made them, so whole slabs go.

/** Bytes of one slab; a copy larger than a quarter of it gets a buffer of its own. */
const SLAB_BYTES = 64 * 1024;

export class ByteSlabs {
  private slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
  private used = 0;

  /** A copy of `bytes` that shares its memory only with other copies this instance made. */
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
