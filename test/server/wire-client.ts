// A deliberately raw WebSocket client for conformance tests: it speaks the wire
// format of ../shared/PROTOCOL.md with its own encoder/decoder (not the project's
// protocol module, so a codec bug cannot hide itself), records every frame the
// server sends, and can send anything at all, including bytes that are not a frame.
// Every wait is bounded and names what it was waiting for when it gives up.

import { Packr, Unpackr } from 'msgpackr';
import WebSocket from 'ws';

export type WireEncoding = 'json' | 'msgpack';

// Plain MessagePack maps (no msgpackr records), as any client in any language would send.
const packr = new Packr({ useRecords: false, encodeUndefinedAsNil: false });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'auto' as 'bigint' });

export function packMsgpack(value: unknown): Buffer {
  return packr.pack(value);
}

/** One frame as received, in arrival order. */
export interface ReceivedFrame {
  /** Position in arrival order (0-based). */
  readonly seq: number;
  /** Binary frames are MessagePack, text frames JSON. */
  readonly encoding: WireEncoding;
  /** The decoded value, or undefined when it did not decode (see `decodeError`). */
  readonly value: Record<string, unknown> | undefined;
  readonly decodeError?: string;
  /** performance.now() when it arrived. */
  readonly at: number;
  /** Size of the frame's payload. */
  readonly bytes: number;
}

export interface WireError {
  readonly code: string;
  readonly message: string;
  readonly [hint: string]: unknown;
}

/** A reply frame: `{id, ok: true, ...result}` or `{id?, ok: false, error}`. */
export interface Reply {
  readonly id?: number;
  readonly ok: boolean;
  readonly error?: WireError;
  readonly [field: string]: unknown;
}

export interface Item {
  readonly index: number;
  readonly owner: string | null;
  readonly data: unknown;
}

export interface ChangeEvent {
  readonly index: number;
  readonly type: 'push' | 'delete';
  readonly path: string;
  readonly item: Item;
}

export interface NotifyFrame {
  readonly op: 'notify';
  readonly events?: ChangeEvent[];
  readonly resync?: Array<{ path: string; index: number; items: Item[] }>;
}

export interface CloseInfo {
  readonly code: number;
  readonly reason: string;
}

interface Waiter {
  readonly ready: () => boolean;
  readonly wake: () => void;
  /** The connection closed before the waiter was satisfied: nothing more can arrive. */
  readonly abandon: () => void;
}

export const DEFAULT_WAIT_MS = 5000;

export class WireClient {
  readonly frames: ReceivedFrame[] = [];
  private nextId = 1;
  private waiters = new Set<Waiter>();
  private closeInfo: CloseInfo | null = null;

  private constructor(
    private readonly ws: WebSocket,
    /** Encoding of `request`/`call` unless one is given. */
    readonly encoding: WireEncoding,
  ) {
    ws.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => this.record(toBuffer(data), isBinary));
    ws.on('close', (code: number, reason: Buffer) => {
      this.closeInfo = { code, reason: reason.toString('utf8') };
      this.wakeAll();
    });
    // An abrupt server-side close surfaces as an error before 'close'; 'close' is what tests look at.
    ws.on('error', () => undefined);
  }

  /** Opens a WebSocket to `<baseUrl>/v1/connect` (baseUrl like ws://127.0.0.1:PORT). */
  static connect(baseUrl: string, encoding: WireEncoding, options: { timeoutMs?: number; localAddress?: string } = {}): Promise<WireClient> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_MS;
    const ws = new WebSocket(`${baseUrl}/v1/connect`, {
      perMessageDeflate: false,
      maxPayload: 256 * 1024 * 1024,
      ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
    });
    const client = new WireClient(ws, encoding);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        ws.terminate();
        reject(new Error(`could not connect to ${baseUrl}/v1/connect within ${timeoutMs} ms`));
      }, timeoutMs);
      ws.once('open', () => {
        clearTimeout(timer);
        resolve(client);
      });
      ws.once('error', (err) => {
        clearTimeout(timer);
        reject(new Error(`could not connect to ${baseUrl}/v1/connect: ${err.message}`));
      });
    });
  }

  // ---------------------------------------------------------------- sending

  /** A fresh request id, unique on this connection. */
  newId(): number {
    return this.nextId++;
  }

  /** Sends one frame object in the given encoding (binary MessagePack or text JSON). */
  send(frame: Readonly<Record<string, unknown>>, encoding: WireEncoding = this.encoding): void {
    this.sendRaw(encoding === 'msgpack' ? packMsgpack(frame) : JSON.stringify(frame));
  }

  /** Sends anything: a Buffer goes out as a binary frame, a string as a text frame. */
  sendRaw(data: Buffer | string): void {
    this.ws.send(data, { binary: typeof data !== 'string' });
  }

  /** Sends bytes as a TEXT frame without checking them (e.g. invalid UTF-8, which RFC 6455 forbids in text frames). */
  sendTextBytes(bytes: Buffer): void {
    this.ws.send(bytes, { binary: false });
  }

  /** Sends `{id, op, ...args}` with a fresh id and resolves with the reply frame (ok or not). */
  async request(op: string, args: Readonly<Record<string, unknown>> = {}, encoding: WireEncoding = this.encoding, timeoutMs = DEFAULT_WAIT_MS): Promise<Reply> {
    const id = this.newId();
    this.send({ id, op, ...args }, encoding);
    return (await this.waitReply(id, timeoutMs)).value as Reply;
  }

  /** Like request, but the reply must be ok; returns the result fields (without id and ok). */
  async call(op: string, args: Readonly<Record<string, unknown>> = {}, encoding: WireEncoding = this.encoding, timeoutMs = DEFAULT_WAIT_MS): Promise<Record<string, unknown>> {
    const reply = await this.request(op, args, encoding, timeoutMs);
    if (reply.ok !== true) throw new Error(`${op} ${JSON.stringify(args).slice(0, 200)} failed: ${JSON.stringify(reply.error)}`);
    const { id: _id, ok: _ok, ...result } = reply;
    return result;
  }

  /** hello and return its result; the session's notifications use `encoding`. */
  async hello(args: Readonly<Record<string, unknown>> = {}, encoding: WireEncoding = this.encoding): Promise<HelloResult> {
    return (await this.call('hello', args, encoding)) as unknown as HelloResult;
  }

  // ---------------------------------------------------------------- waiting

  /** The reply frame carrying `id`. */
  waitReply(id: number, timeoutMs = DEFAULT_WAIT_MS): Promise<ReceivedFrame> {
    return this.waitFrame((f) => isReply(f) && f.value?.id === id, `the reply to request ${id}`, 0, timeoutMs);
  }

  /** The first frame at position >= `fromSeq` that matches. */
  waitFrame(match: (f: ReceivedFrame) => boolean, what: string, fromSeq = 0, timeoutMs = DEFAULT_WAIT_MS): Promise<ReceivedFrame> {
    return this.waitUntil(() => this.frames.slice(fromSeq).find(match), what, timeoutMs);
  }

  /** The n-th notify frame (1-based) this connection received. */
  waitNotify(n: number, timeoutMs = DEFAULT_WAIT_MS): Promise<NotifyFrame> {
    return this.waitUntil(() => this.notifies()[n - 1], `notify frame #${n} (have ${this.notifies().length})`, timeoutMs);
  }

  /** Resolves once at least `count` change events arrived (over any number of notify frames); returns all of them. */
  waitEvents(count: number, timeoutMs = DEFAULT_WAIT_MS): Promise<ChangeEvent[]> {
    return this.waitUntil(
      () => (this.events().length >= count ? this.events() : undefined),
      `${count} change events (have ${JSON.stringify(this.events())})`,
      timeoutMs,
    );
  }

  /** Resolves with the first change event matching `match`. */
  waitEvent(match: (e: ChangeEvent) => boolean, what: string, timeoutMs = DEFAULT_WAIT_MS): Promise<ChangeEvent> {
    return this.waitUntil(() => this.events().find(match), `${what} (have ${JSON.stringify(this.events())})`, timeoutMs);
  }

  /** Resolves with the close code and reason once the connection is closed. */
  waitClose(timeoutMs = DEFAULT_WAIT_MS): Promise<CloseInfo> {
    return this.waitUntil(() => this.closeInfo ?? undefined, 'the connection to close', timeoutMs);
  }

  private waitUntil<T>(probe: () => T | undefined, what: string, timeoutMs: number): Promise<T> {
    const now = probe();
    if (now !== undefined) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        ready: () => probe() !== undefined,
        wake: () => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve(probe()!);
        },
        abandon: () => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          reject(new Error(`connection closed (${this.closeInfo?.code} ${this.closeInfo?.reason}) while waiting for ${what}`));
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      this.waiters.add(waiter);
      if (this.closeInfo !== null) waiter.abandon();
    });
  }

  // ---------------------------------------------------------------- what arrived

  /** Every notify frame, in arrival order. */
  notifies(): NotifyFrame[] {
    return this.frames.filter((f) => f.value?.op === 'notify').map((f) => f.value as unknown as NotifyFrame);
  }

  /** Every change event of every notify frame, in arrival order. */
  events(): ChangeEvent[] {
    return this.notifies().flatMap((n) => n.events ?? []);
  }

  /** Arrival time (performance.now()) of the notify frame that carried the first event matching `match`. */
  eventArrival(match: (e: ChangeEvent) => boolean): number | undefined {
    return this.frames.find((f) => f.value?.op === 'notify' && ((f.value.events as ChangeEvent[] | undefined) ?? []).some(match))?.at;
  }

  get closed(): CloseInfo | null {
    return this.closeInfo;
  }

  /** False once either side started closing. */
  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  // ---------------------------------------------------------------- closing

  /** A clean close handshake. */
  async close(): Promise<CloseInfo> {
    if (this.closeInfo === null) this.ws.close(1000, 'test done');
    return this.waitClose();
  }

  /** Drops the TCP connection without a close frame (and without bye): an abrupt client death. */
  terminate(): void {
    this.ws.terminate();
  }

  // ---------------------------------------------------------------- internals

  private record(data: Buffer, isBinary: boolean): void {
    const encoding: WireEncoding = isBinary ? 'msgpack' : 'json';
    let value: Record<string, unknown> | undefined;
    let decodeError: string | undefined;
    try {
      const decoded: unknown = isBinary ? unpackr.unpack(data) : JSON.parse(data.toString('utf8'));
      if (typeof decoded === 'object' && decoded !== null && !Array.isArray(decoded)) value = decoded as Record<string, unknown>;
      else decodeError = `server frame is not a map: ${data.toString('hex').slice(0, 80)}`;
    } catch (err) {
      decodeError = `server frame does not decode: ${(err as Error).message}`;
    }
    const frame: ReceivedFrame = decodeError === undefined
      ? { seq: this.frames.length, encoding, value, at: performance.now(), bytes: data.length }
      : { seq: this.frames.length, encoding, value, decodeError, at: performance.now(), bytes: data.length };
    this.frames.push(frame);
    this.wakeAll();
  }

  private wakeAll(): void {
    for (const w of [...this.waiters]) {
      if (w.ready()) w.wake();
      else if (this.closeInfo !== null) w.abandon();
    }
  }
}

export interface HelloResult {
  readonly session: string;
  readonly timeoutMs: number;
  readonly node: string;
  readonly leader: string | null;
  readonly term: number;
  readonly index: number;
  /** Extension: the session's resume token. */
  readonly resume?: string;
}

/** A reply (as opposed to a notify): it has `ok`. */
export function isReply(frame: ReceivedFrame): boolean {
  return typeof frame.value?.ok === 'boolean';
}

function toBuffer(data: Buffer | ArrayBuffer | Buffer[]): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
