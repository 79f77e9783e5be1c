// Every byte a client connection is sent counts against its output budget. Past
// the pause mark the connection's requests are no longer read (TCP pushes back on
// the client) and large reads wait for room; past the close mark the socket is
// dropped. A client that never reads its socket thus holds at most the close mark
// of this server's memory, however many requests it pipelines.

/** The socket side the budget needs (a ws WebSocket fits, through its net.Socket). */
export interface OutputSocket {
  /** Bytes queued and not yet written to the network. */
  bufferedBytes(): number;
  pauseReading(): void;
  resumeReading(): void;
  /** Calls `listener` once the socket's write buffer has emptied, or once it closed. */
  onceDrainedOrClosed(listener: () => void): void;
  isOpen(): boolean;
}

export interface OutputLimits {
  /** Past this many unsent bytes, stop reading requests and hold back large reads. */
  readonly pauseBytes: number;
  /** Past this many, drop the connection. */
  readonly closeBytes: number;
}

export class OutputBudget {
  private paused = false;
  /** Large reads run one at a time per connection, each only once there is room for it. */
  private readChain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly socket: OutputSocket,
    private readonly limits: OutputLimits,
    /** Called once the close mark is passed; must drop the socket. */
    private readonly overflow: (buffered: number) => void,
    /** Called when the output drained while requests were paused: the client reads, so it is alive. */
    private readonly progress: () => void,
  ) {}

  /** Call after queueing a frame. */
  afterSend(): void {
    const buffered = this.socket.bufferedBytes();
    if (buffered > this.limits.closeBytes) {
      this.overflow(buffered);
      return;
    }
    if (buffered > this.limits.pauseBytes && !this.paused) {
      this.paused = true;
      this.socket.pauseReading();
      this.whenDrained(() => {
        this.paused = false;
        if (this.socket.isOpen()) {
          this.progress();
          this.socket.resumeReading();
        }
      });
    }
  }

  /** Resolves once the unsent output is at or below the pause mark (or the socket closed). */
  room(): Promise<void> {
    if (this.socket.bufferedBytes() <= this.limits.pauseBytes || !this.socket.isOpen()) return Promise.resolve();
    return new Promise((resolve) => this.whenDrained(resolve));
  }

  /** Runs `read` after the large reads before it on this connection, once there is room. */
  exclusive<T>(read: () => Promise<T>): Promise<T> {
    const run = this.readChain.then(() => this.room()).then(read);
    this.readChain = run.catch(() => undefined);
    return run;
  }

  private whenDrained(done: () => void): void {
    const check = (): void => {
      if (!this.socket.isOpen() || this.socket.bufferedBytes() <= this.limits.pauseBytes) done();
      else this.socket.onceDrainedOrClosed(check);
    };
    this.socket.onceDrainedOrClosed(check);
  }
}
