// Why a client connection's socket is not being read. Several things may hold it
// (its unsent output, its own requests in flight, the leader's queue of writes
// waiting to commit); the socket is read again only once none does. While it is
// not read, TCP's window fills and the client's writes wait in its own socket:
// overload slows senders instead of failing their requests.

export type PauseReason = 'output' | 'inflight' | 'writes';

export class ReadPauses {
  private readonly held = new Set<PauseReason>();

  constructor(
    private readonly pause: () => void,
    private readonly resume: () => void,
  ) {}

  hold(reason: PauseReason): void {
    if (this.held.has(reason)) return;
    this.held.add(reason);
    if (this.held.size === 1) this.pause();
  }

  release(reason: PauseReason): void {
    if (!this.held.delete(reason)) return;
    if (this.held.size === 0) this.resume();
  }

  holds(reason: PauseReason): boolean {
    return this.held.has(reason);
  }
}
