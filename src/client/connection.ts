// One WebSocket to one server: numbered requests matched to their replies (which
// may come out of order), notify frames handed to the owner, and every request
// still waiting rejected with ConnectionLost when the socket goes away.
// Sessions, retries and reconnection are the client's business, not this one's.
// The socket itself comes from ./transport.js: `ws` on Node, the browser's own
// WebSocket in the browser bundle (transport.browser.ts).
import { decodeServerFrame, encodeRequest, VeraError, type ChangeEvent, type Encoding, type RawFrame, type Request, type ResyncList } from '../protocol/index.js';
import type { Socket, SocketListener, TlsClientOptions } from './socket.js';
import { openSocket } from './transport.js';

export type { TlsClientOptions };

/** The socket closed before the reply came: the request may or may not have been executed. */
export class ConnectionLost extends VeraError {
  constructor(reason: string) {
    super('UNAVAILABLE', `connection lost: ${reason}`);
  }
}

export interface ConnectionHandlers {
  readonly onEvents: (events: readonly ChangeEvent[]) => void;
  /** `more`: the resync continues in the next frame; apply it once a frame without `more` arrives. */
  readonly onResync: (lists: readonly ResyncList[], more: boolean) => void;
  readonly onRevoked?: (watches: ReadonlyArray<{ readonly path: string; readonly prefix: boolean }>, reason: string) => void;
  /** `code` is the WebSocket close code, when the server sent one. */
  readonly onClose: (reason: string, code: number | null) => void;
}

interface Waiter {
  readonly resolve: (result: Readonly<Record<string, unknown>>) => void;
  readonly reject: (error: VeraError) => void;
  /** Items of the frames of a streamed reply received so far (every frame but the last says `more`). */
  items?: unknown[];
}

export class Connection implements SocketListener {
  /** Monotonic time (ms) of the last frame received: the client's liveness signal. */
  lastReceivedAt = performance.now();
  private readonly waiting = new Map<number, Waiter>();
  private closedReason: string | null = null;
  private lastError: string | null = null;

  private constructor(
    readonly url: string,
    private readonly ws: Socket,
    private readonly encoding: Encoding,
    private readonly handlers: ConnectionHandlers,
  ) {}

  /** Opens a socket to `url`; rejects with UNAVAILABLE when that fails within `timeoutMs`. */
  static open(url: string, encoding: Encoding, timeoutMs: number, handlers: ConnectionHandlers, tls: TlsClientOptions = {}): Promise<Connection> {
    return openSocket(url, timeoutMs, tls, (socket) => new Connection(url, socket, encoding, handlers)).catch((error: unknown) => {
      if (error instanceof VeraError) throw error;
      const cause = error instanceof Error ? error : new Error(String(error));
      throw new VeraError('UNAVAILABLE', `cannot connect to ${url}: ${cause.message}`, {}, { cause });
    });
  }

  /** The socket's: a frame arrived. */
  message(data: RawFrame | string, isBinary: boolean): void {
    this.receive(data, isBinary);
  }

  /** The socket's: an error (the close that follows reports it). */
  error(message: string): void {
    this.lastError = message;
  }

  /** The socket's: it closed. */
  closed(code: number, reason: string): void {
    this.shutDown(this.lastError ?? `closed by the server (code ${code}${reason ? `: ${reason}` : ''})`, code);
  }

  get isOpen(): boolean {
    return this.closedReason === null;
  }

  /** Sends a request and resolves with its result fields, or rejects with the server's VeraError or ConnectionLost. */
  request(request: Request): Promise<Readonly<Record<string, unknown>>> {
    if (this.closedReason !== null) return Promise.reject(new ConnectionLost(this.closedReason));
    if (this.waiting.has(request.id)) return Promise.reject(new VeraError('INTERNAL', `request id ${request.id} is already in flight`));
    return new Promise((resolve, reject) => {
      this.waiting.set(request.id, { resolve, reject });
      this.ws.send(encodeRequest(request, this.encoding), (error) => this.shutDown(`send failed: ${error.message}`));
    });
  }

  /** Forgets a request the client gave up on (its reply, if any, is ignored). */
  forget(id: number): void {
    this.waiting.delete(id);
  }

  /** Closes cleanly (close frame, code 1000). */
  close(): void {
    this.ws.close(1000, 'client closing');
    this.shutDown('closed by the client');
  }

  /** Drops the socket at once, without a close handshake: used when the server stopped answering. */
  terminate(reason: string): void {
    this.ws.terminate();
    this.shutDown(reason);
  }

  private receive(data: RawFrame | string, isBinary: boolean): void {
    this.lastReceivedAt = performance.now();
    const frame = decodeServerFrame(data, isBinary);
    switch (frame.kind) {
      case 'reply':
      case 'error': {
        if (frame.id === undefined) return; // the server could not read one of our ids; nothing to match
        const waiter = this.waiting.get(frame.id);
        if (waiter === undefined) return; // a reply to a request we gave up on
        if (frame.kind === 'reply' && frame.result.more === true) {
          collectItems(waiter, frame.result.items);
          return;
        }
        this.waiting.delete(frame.id);
        if (frame.kind === 'error') waiter.reject(frame.error);
        else if (waiter.items === undefined) waiter.resolve(frame.result);
        else {
          collectItems(waiter, frame.result.items);
          waiter.resolve({ ...frame.result, items: waiter.items });
        }
        return;
      }
      case 'notify':
        this.handlers.onEvents(frame.events);
        return;
      case 'resync':
        this.handlers.onResync(frame.lists, frame.more);
        return;
      case 'revoked':
        this.handlers.onRevoked?.(frame.watches, frame.reason);
        return;
      case 'invalid':
        // Ignored rather than fatal: a newer server may push frames this client
        // does not know. A malformed reply leaves its request to time out.
        return;
    }
  }

  private shutDown(reason: string, code: number | null = null): void {
    if (this.closedReason !== null) return;
    this.closedReason = reason;
    const waiters = [...this.waiting.values()];
    this.waiting.clear();
    this.handlers.onClose(reason, code);
    for (const waiter of waiters) waiter.reject(new ConnectionLost(reason));
  }
}

/** Appends one frame's items to a streamed reply (one by one: a frame may hold a great many). */
function collectItems(waiter: Waiter, items: unknown): void {
  waiter.items ??= [];
  if (!Array.isArray(items)) return; // the final check of the result reports it
  for (const item of items) waiter.items.push(item);
}
