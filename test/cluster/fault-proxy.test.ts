import { once } from 'node:events';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { FaultProxy, FaultProxyError } from './fault-proxy.js';
import { freePort } from '../support/vera-process.js';

// ---------------------------------------------------------------------------- helpers

/** A TCP echo server that counts what reaches it and ends its side when the client does. */
class EchoServer {
  received = 0;
  readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(): Promise<EchoServer> {
    const server = createServer({ allowHalfOpen: true });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const echo = new EchoServer(server, (server.address() as AddressInfo).port);
    server.on('connection', (socket) => {
      echo.sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => echo.sockets.delete(socket));
      socket.on('data', (chunk: Buffer) => {
        echo.received += chunk.length;
        socket.write(chunk);
      });
      socket.on('end', () => socket.end());
    });
    return echo;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Resolves with the next connection the server accepts. */
  nextConnection(): Promise<Socket> {
    return once(this.server, 'connection').then(([socket]) => socket as Socket);
  }

  /** Resolves with the next chunk any connection receives. */
  nextData(): Promise<Buffer> {
    return new Promise((resolve) => {
      const onConnectionData = (chunk: Buffer): void => {
        for (const s of this.sockets) s.off('data', onConnectionData);
        resolve(chunk);
      };
      for (const s of this.sockets) s.on('data', onConnectionData);
    });
  }
}

/** A client connection through the proxy that collects everything it receives. */
class Client {
  data = Buffer.alloc(0);
  readonly closed: Promise<void>;
  private readonly socket: Socket;

  constructor(port: number) {
    this.socket = createConnection({ host: '127.0.0.1', port, allowHalfOpen: true });
    this.socket.on('error', () => {});
    this.socket.on('data', (chunk: Buffer) => {
      this.data = Buffer.concat([this.data, chunk]);
    });
    this.closed = new Promise((resolve) => this.socket.once('close', () => resolve()));
  }

  async connected(): Promise<this> {
    if (this.socket.connecting) await once(this.socket, 'connect');
    return this;
  }

  write(text: string | Buffer): void {
    this.socket.write(text);
  }

  end(): void {
    this.socket.end();
  }

  /** Resolves with everything received once at least `n` bytes have arrived; rejects if the connection closes first. */
  async bytes(n: number): Promise<string> {
    while (this.data.length < n) {
      if (this.socket.destroyed) throw new Error(`connection closed after ${this.data.length} of ${n} bytes`);
      await Promise.race([once(this.socket, 'data'), this.closed]);
    }
    return this.data.toString('utf8');
  }

  destroy(): void {
    this.socket.destroy();
  }
}

const cleanup: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function setUp(): Promise<{ echo: EchoServer; proxy: FaultProxy; connect: () => Promise<Client> }> {
  const echo = await EchoServer.start();
  cleanup.push(() => echo.close());
  const proxy = await FaultProxy.start({ listenPort: 0, target: { host: '127.0.0.1', port: echo.port } });
  cleanup.push(() => proxy.close());
  const connect = async (): Promise<Client> => {
    const client = new Client(proxy.port);
    cleanup.push(() => client.destroy());
    return client.connected();
  };
  return { echo, proxy, connect };
}

// ---------------------------------------------------------------------------- tests

describe('FaultProxy', () => {
  it('passes bytes both ways and half-closes cleanly', async () => {
    const { proxy, connect } = await setUp();
    const client = await connect();
    client.write('hello');
    expect(await client.bytes(5)).toBe('hello');
    client.end();
    await client.closed; // the echo server ended its side in reply, through the proxy
    const stats = await proxy.waitFor((s) => s.connections.active === 0);
    expect(stats.forward).toEqual({ forwardedBytes: 5, droppedBytes: 0, queuedBytes: 0 });
    expect(stats.backward).toEqual({ forwardedBytes: 5, droppedBytes: 0, queuedBytes: 0 });
    expect(stats.connections).toMatchObject({ accepted: 1, refused: 0, destroyed: 0 });
  });

  it("block('both') destroys current connections and resets new ones until heal()", async () => {
    const { proxy, connect } = await setUp();
    const before = await connect();
    before.write('a');
    await before.bytes(1);
    proxy.block('both');
    await before.closed;
    expect(proxy.blockedDirections).toEqual({ forward: true, backward: true });

    const refused = new Client(proxy.port);
    cleanup.push(() => refused.destroy());
    refused.write('lost');
    await refused.closed;
    expect(refused.data.length).toBe(0);
    expect(proxy.stats().connections).toMatchObject({ refused: 1, destroyed: 1 });

    proxy.heal();
    const after = await connect();
    after.write('back');
    expect(await after.bytes(4)).toBe('back');
  });

  it("block('forward') holds new connections open but drops the dialer's bytes; heal() destroys them", async () => {
    const { echo, proxy, connect } = await setUp();
    const before = await connect();
    proxy.block('forward');
    await before.closed; // it was forwarding in the direction now blocked

    const arrived = echo.nextConnection();
    const held = await connect();
    await arrived; // the proxy still reaches the target
    held.write('ping');
    await proxy.waitFor((s) => s.forward.droppedBytes >= 4);
    expect(echo.received).toBe(0);
    expect(held.data.length).toBe(0);

    proxy.heal();
    await held.closed; // it lost bytes, so it can never be made whole
    const after = await connect();
    after.write('pong');
    expect(await after.bytes(4)).toBe('pong');
  });

  it("block('backward') lets the dialer's bytes through and drops the replies", async () => {
    const { echo, proxy, connect } = await setUp();
    proxy.block('backward');
    const arrived = echo.nextConnection();
    const held = await connect();
    await arrived;
    const reached = echo.nextData();
    held.write('ping');
    expect((await reached).toString()).toBe('ping');
    await proxy.waitFor((s) => s.backward.droppedBytes >= 4);
    expect(held.data.length).toBe(0);
    expect(proxy.stats().forward.forwardedBytes).toBe(4);

    // Blocking the other direction too: the held connection was forwarding that way, so it goes.
    proxy.block('forward');
    await held.closed;
    expect(proxy.blockedDirections).toEqual({ forward: true, backward: true });
  });

  it('heal() keeps a one-way-blocked connection that lost nothing', async () => {
    const { echo, proxy, connect } = await setUp();
    proxy.block('forward');
    const arrived = echo.nextConnection();
    const quiet = await connect();
    await arrived;
    proxy.heal();
    quiet.write('still here');
    expect(await quiet.bytes(10)).toBe('still here');
    expect(proxy.stats().connections.destroyed).toBe(0);
  });

  it('delay() holds every chunk back, in order, even when the delay changes mid-stream', async () => {
    const { proxy, connect } = await setUp();
    const client = await connect();
    proxy.delay(40);
    const first = Array.from({ length: 20 }, (_, i) => `a${i};`).join('');
    const startedAt = performance.now();
    for (let i = 0; i < 20; i++) client.write(`a${i};`);
    // Everything the client wrote is held at the proxy before the delay drops to zero.
    await proxy.waitFor((s) => s.forward.queuedBytes === first.length);
    proxy.delay(0);
    const second = Array.from({ length: 20 }, (_, i) => `b${i};`).join('');
    for (let i = 0; i < 20; i++) client.write(`b${i};`);
    const echoed = await client.bytes(first.length + second.length);
    expect(echoed).toBe(first + second); // the undelayed chunks did not overtake the delayed ones
    // Timers may fire up to a millisecond early against performance.now().
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(39);
    expect(proxy.stats().forward).toMatchObject({ forwardedBytes: first.length + second.length, queuedBytes: 0 });
  });

  it('cut() destroys every current connection and still accepts new ones', async () => {
    const { proxy, connect } = await setUp();
    const one = await connect();
    const two = await connect();
    await proxy.waitFor((s) => s.connections.active === 2);
    proxy.cut();
    await Promise.all([one.closed, two.closed]);
    expect(proxy.stats().connections.destroyed).toBe(2);
    await proxy.waitFor((s) => s.connections.active === 0);
    const three = await connect();
    three.write('ok');
    expect(await three.bytes(2)).toBe('ok');
  });

  it('close() drops queued chunks, closes every socket, stops listening and leaves no timer behind', async () => {
    const { proxy, connect } = await setUp();
    const client = await connect();
    proxy.delay(60_000);
    client.write('never');
    await proxy.waitFor((s) => s.forward.queuedBytes === 5);
    expect(proxy.pendingTimers).toBe(1);

    await proxy.close();
    await client.closed;
    expect(proxy.pendingTimers).toBe(0);
    expect(proxy.stats().forward).toMatchObject({ forwardedBytes: 0, droppedBytes: 5, queuedBytes: 0 });
    expect(proxy.stats().connections.active).toBe(0);

    const late = createConnection({ host: '127.0.0.1', port: proxy.port });
    const [error] = (await once(late, 'error')) as [NodeJS.ErrnoException];
    expect(error.code).toBe('ECONNREFUSED');
    await proxy.close(); // idempotent
    expect(() => proxy.block('both')).toThrow(FaultProxyError);
    await expect(proxy.waitFor(() => true)).rejects.toThrow(FaultProxyError);
  });

  it('closes the dialer when the target cannot be reached', async () => {
    const proxy = await FaultProxy.start({ listenPort: 0, target: { host: '127.0.0.1', port: await freePort() } });
    cleanup.push(() => proxy.close());
    const client = new Client(proxy.port);
    cleanup.push(() => client.destroy());
    await client.closed;
    const stats = await proxy.waitFor((s) => s.connections.active === 0);
    expect(stats.connections).toMatchObject({ accepted: 1, targetUnreachable: 1 });
  });

  it('refuses bad options and a port in use with a FaultProxyError', async () => {
    const target = { host: '127.0.0.1', port: 1 };
    await expect(FaultProxy.start({ listenPort: -1, target })).rejects.toThrow(FaultProxyError);
    await expect(FaultProxy.start({ listenPort: 0, target: { host: '127.0.0.1', port: 0 } })).rejects.toThrow(/target.port/);
    await expect(FaultProxy.start({ listenPort: 0, target: { host: '', port: 80 } })).rejects.toThrow(/target.host/);
    const first = await FaultProxy.start({ listenPort: 0, target });
    cleanup.push(() => first.close());
    await expect(FaultProxy.start({ listenPort: first.port, target })).rejects.toThrow(/cannot listen/);
    expect(() => first.delay(-5)).toThrow(FaultProxyError);
    expect(() => first.block('sideways' as 'both')).toThrow(FaultProxyError);
  });
});
