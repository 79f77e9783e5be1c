// Loopback helpers: free ports, bounded polling, and a TCP proxy whose cut
// stands in for a client whose machine vanished (used by S4).
import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';

export const LOOPBACK = '127.0.0.1';

/**
 * Ports for servers are taken below Linux's ephemeral range (32768-60999 by
 * default): a port from that range, once its server is killed, can be taken
 * by any outgoing connection on the machine, and the restarted server could
 * not bind it again.
 */
const SERVER_PORT_MIN = 20_000;
const SERVER_PORT_MAX = 32_000;

/** `count` distinct ports that were free a moment ago (servers need them before they start). */
export async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let attempts = 0; ports.length < count; attempts++) {
    if (attempts > count * 50) throw new Error(`could not find ${count} free ports in ${SERVER_PORT_MIN}-${SERVER_PORT_MAX}`);
    const port = SERVER_PORT_MIN + Math.floor(Math.random() * (SERVER_PORT_MAX - SERVER_PORT_MIN));
    if (ports.includes(port)) continue;
    if (await canListen(port)) ports.push(port);
  }
  return ports;
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server: Server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, LOOPBACK, () => server.close(() => resolve(true)));
  });
}

/** Thrown by a poll check to stop polling at once (the thing waited for can no longer happen). */
export class StopPolling extends Error {
  override readonly name = 'StopPolling';
}

/** Polls `check` every `intervalMs` until it returns a value other than undefined; throws `what` after timeoutMs. */
export async function pollUntil<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>, intervalMs = 50): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown = null;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      if (error instanceof StopPolling) throw error;
      lastError = error;
    }
    if (performance.now() >= deadline) {
      const why = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await delay(intervalMs);
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** GET/POST a JSON endpoint with a time limit. */
export async function fetchJson(url: string, options: { method?: string; body?: unknown; timeoutMs?: number } = {}): Promise<unknown> {
  const response = await fetch(url, {
    method: options.method ?? 'GET',
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body), headers: { 'content-type': 'application/json' } }),
    signal: AbortSignal.timeout(options.timeoutMs ?? 2_000),
  });
  if (!response.ok) throw new Error(`${url} answered HTTP ${response.status}`);
  return response.json();
}

/** Sends a ZooKeeper-style four-letter command and returns the whole answer. */
export function tcpCommand(port: number, command: string, timeoutMs = 2_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host: LOOPBACK, port });
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer to '${command}' on port ${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('connect', () => socket.write(command));
    socket.on('data', (chunk) => (text += chunk.toString('utf8')));
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(text);
    });
  });
}

/**
 * Forwards a loopback port to a server. cut() drops every connection at once
 * and refuses new ones, like a client host that died without a goodbye; it
 * records when the client last sent bytes, which is the last moment the
 * server can know the client's session was alive.
 */
export class CuttableProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private lastClientBytesAtValue = Number.NaN;
  private portValue = 0;

  constructor(private readonly targetPort: number) {}

  get port(): number {
    return this.portValue;
  }

  /** performance.now() of the last bytes forwarded from a client to the server. */
  get lastClientBytesAt(): number {
    return this.lastClientBytesAtValue;
  }

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = tcpConnect({ host: LOOPBACK, port: this.targetPort });
      this.sockets.add(client);
      this.sockets.add(upstream);
      client.setNoDelay(true);
      upstream.setNoDelay(true);
      client.on('data', (chunk) => {
        this.lastClientBytesAtValue = performance.now();
        upstream.write(chunk);
      });
      upstream.on('data', (chunk) => client.write(chunk));
      const drop = (): void => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('close', drop);
      upstream.on('close', drop);
      client.on('error', drop);
      upstream.on('error', drop);
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, LOOPBACK, () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('the proxy reported no port');
    this.portValue = address.port;
  }

  /** Drops every connection and refuses new ones. Returns performance.now() of the cut. */
  cut(): number {
    const at = performance.now();
    this.server?.close();
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    return at;
  }
}
