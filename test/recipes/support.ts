// Shared set-up for the recipe tests: one real single-node `vera` process with
// short session bounds, clients that are closed after each test, a TCP link that
// can be cut to make a client vanish without `bye` (to the server, a crash), and
// instruments that count what each client hears and sends.
// Every wait here is for an actual event, and bounded.

import { createServer, Socket, type Server } from 'node:net';
import { expect } from 'vitest';
import { connect, type ConnectOptions, type VeraClient } from '../../src/client/index.js';
import type { ChangeEvent } from '../../src/client/index.js';
import { VeraProcess } from '../support/vera-process.js';

/** The server grants sessions as short as this, so expiry tests take well under a second. */
export const SESSION_TIMEOUT_MIN_MS = 100;

/** Starts a single-member server with short session bounds and waits until it leads. */
export async function startServer(): Promise<VeraProcess> {
  const vp = await VeraProcess.start({ args: ['--session-timeout-min', String(SESSION_TIMEOUT_MIN_MS)] });
  await vp.waitForLog((l) => l.event === 'role-changed' && l.role === 'leader');
  return vp;
}

/**
 * A TCP relay in front of the server. cut() drops every connection through it
 * and refuses new ones, as a crashed or partitioned client host would look to
 * the server: no bye, no more heartbeats. heal() lets connections through again.
 */
export class CuttableLink {
  private readonly sockets = new Set<Socket>();
  private isCut = false;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async open(targetPort: number): Promise<CuttableLink> {
    let link: CuttableLink | null = null;
    const server = createServer((downstream) => link?.relay(downstream, targetPort));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (typeof address !== 'object' || address === null) throw new Error('link did not bind a port');
    link = new CuttableLink(server, address.port);
    return link;
  }

  get url(): string {
    return `ws://127.0.0.1:${this.port}`;
  }

  cut(): void {
    this.isCut = true;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  heal(): void {
    this.isCut = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private relay(downstream: Socket, targetPort: number): void {
    if (this.isCut) {
      downstream.destroy();
      return;
    }
    const upstream = new Socket();
    for (const socket of [downstream, upstream]) {
      this.sockets.add(socket);
      socket.on('error', () => undefined); // the other side's close tells the story
      socket.on('close', () => {
        this.sockets.delete(socket);
        downstream.destroy();
        upstream.destroy();
      });
    }
    upstream.connect(targetPort, '127.0.0.1');
    downstream.pipe(upstream);
    upstream.pipe(downstream);
  }
}

/** Opens clients against one server and closes every one of them (and their links) at cleanup. */
export class Clients {
  private readonly cleanups: Array<() => Promise<void>> = [];

  constructor(private readonly serverPort: number) {}

  get url(): string {
    return `ws://127.0.0.1:${this.serverPort}`;
  }

  async open(options: ConnectOptions = {}): Promise<VeraClient> {
    const client = await connect(this.url, options);
    this.cleanups.push(() => client.close());
    return client;
  }

  /** A client whose connection can be cut (see CuttableLink): it reaches the server only through the link, never by the address hello names. */
  async openCuttable(options: ConnectOptions = {}): Promise<{ client: VeraClient; link: CuttableLink }> {
    const link = await CuttableLink.open(this.serverPort);
    this.cleanups.push(() => link.close());
    const client = await connect(link.url, { learnMembers: false, ...options });
    this.cleanups.push(() => client.close());
    return { client, link };
  }

  async closeAll(): Promise<void> {
    for (const cleanup of this.cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  }
}

/** A value that changes over time, and waits for a condition on it. */
export class Watched<T> {
  private waiters: Array<{ test: (value: T) => boolean; resolve: (value: T) => void }> = [];

  constructor(private current: T) {}

  get value(): T {
    return this.current;
  }

  set(value: T): void {
    this.current = value;
    this.waiters = this.waiters.filter((w) => (w.test(value) ? (w.resolve(value), false) : true));
  }

  /** Resolves with the first value (current or later) that passes `test`; rejects after `timeoutMs`. */
  until(test: (value: T) => boolean, what: string, timeoutMs = 10_000): Promise<T> {
    if (test(this.current)) return Promise.resolve(this.current);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last value: ${JSON.stringify(this.current)}`));
      }, timeoutMs);
      const done = (value: T): void => {
        clearTimeout(timer);
        resolve(value);
      };
      this.waiters.push({ test, resolve: done });
    });
  }
}

const OPS = ['push', 'get', 'ls', 'delete', 'watch', 'unwatch'] as const;

/**
 * What one client hears (notification events) and sends (data operations), so a
 * test can tell which clients reacted to a change. Heartbeats are not counted.
 */
export class Instrument {
  /** Every change event delivered to the client, in order. */
  readonly events: ChangeEvent[] = [];
  /** Every data operation the client (or a recipe on it) started, in order, e.g. "watch /x". */
  readonly calls: string[] = [];
  /** Number of data operations that have finished (either way). */
  readonly settled = new Watched(0);
  private readonly eventCount = new Watched(0);

  constructor(readonly client: VeraClient) {
    client.on('event', (event) => {
      this.events.push(event);
      this.eventCount.set(this.events.length);
    });
    const target = client as unknown as Record<(typeof OPS)[number], (...args: unknown[]) => Promise<unknown>>;
    for (const op of OPS) {
      const original = target[op].bind(client);
      target[op] = (...args: unknown[]) => {
        this.calls.push(`${op} ${String(args[0])}`);
        return original(...args).finally(() => this.settled.set(this.settled.value + 1));
      };
    }
  }

  /** Resolves with the first event (already heard or later) that matches. */
  async nextEvent(match: (event: ChangeEvent) => boolean, what: string, timeoutMs = 10_000): Promise<ChangeEvent> {
    await this.eventCount.until(() => this.events.some(match), what, timeoutMs);
    return this.events.find(match)!;
  }

  /** Resolves once no data operation is in flight and at least `calls` have been started. */
  async quiet(calls: number, what: string): Promise<void> {
    await this.settled.until((n) => this.calls.length >= calls && n === this.calls.length, what);
  }

  /** A mark to compare against later: how much had been heard and sent so far. */
  mark(): { readonly events: number; readonly calls: number } {
    return { events: this.events.length, calls: this.calls.length };
  }

  eventsSince(mark: { readonly events: number }): ChangeEvent[] {
    return this.events.slice(mark.events);
  }

  callsSince(mark: { readonly calls: number }): string[] {
    return this.calls.slice(mark.calls);
  }
}

export type Mark = ReturnType<Instrument['mark']>;

/**
 * Resolves once a contender is parked in a queue: it has started a watch since
 * `mark` and every request it started has been answered, so it is waiting for an event.
 */
export async function parked(instrument: Instrument, mark: Mark, what: string): Promise<void> {
  await instrument.settled.until(
    (settled) => instrument.callsSince(mark).some((call) => call.startsWith('watch ')) && settled === instrument.calls.length,
    what,
  );
}

/**
 * After a queue's head left: the successor heard of it (only deletes of the
 * departed session's items), and every other waiter heard nothing and sent
 * nothing, i.e. no herd. Call after a fence(), so late notifications would show.
 */
export function expectOnlySuccessorWoke(
  successor: Instrument,
  others: readonly Instrument[],
  marks: ReadonlyMap<Instrument, Mark>,
  fencePath: string,
  departedSession: string,
): void {
  const heard = (i: Instrument) => i.eventsSince(marks.get(i)!).filter((e) => e.path !== fencePath);
  const successorHeard = heard(successor);
  expect(successorHeard.length).toBeGreaterThan(0);
  for (const event of successorHeard) expect(event).toMatchObject({ type: 'delete', item: { owner: departedSession } });
  for (const other of others) {
    expect(heard(other)).toStrictEqual([]);
    expect(other.callsSince(marks.get(other)!)).toStrictEqual([]);
  }
}

/**
 * Proves that by now every listed client has heard everything committed before
 * this call: a push onto `fencePath` (which each of them watches) is delivered to
 * a session only after every earlier event for it, since a session's events
 * arrive in index order (PROTOCOL.md "Notifications"). Returns the fence's index.
 */
export async function fence(writer: VeraClient, fencePath: string, listeners: readonly Instrument[]): Promise<number> {
  const item = await writer.push(fencePath, 'fence', { watch: false, persistent: true });
  await Promise.all(
    listeners.map((l) => l.nextEvent((e) => e.path === fencePath && e.index === item.index, `fence ${item.index} at a listener`)),
  );
  return item.index;
}

/** Resolves with how a promise settled, without throwing. */
export function outcome<T>(promise: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}
