// One in-process member on loopback with a client connected to it, for tests of
// a family's ops; stopServer() (after each test) closes both and removes the
// data directory.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { connect, type VeraClient } from '../../src/client/client.js';
import type { ChangeEvent } from '../../src/protocol/index.js';
import type { AnyFamily } from '../../src/statemachine/family.js';
import type { ServerConfig } from '../../src/server/config.js';
import { startServer as startMember, type RunningServer } from '../../src/server/index.js';

let server: RunningServer | null = null;
let client: VeraClient | null = null;
let dir = '';

export async function stopServer(): Promise<void> {
  await client?.close();
  client = null;
  await server?.close();
  server = null;
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
  dir = '';
}

export interface MemberOptions {
  /** Restart the member on this directory (closeKeepingData) instead of a fresh one. */
  readonly dataDir?: string;
  readonly limits?: Partial<ServerConfig['limits']>;
  readonly sessionTimeoutMinMs?: number;
  /** The families it runs (default: the registry's). */
  readonly families?: readonly AnyFamily[];
}

/** The small limits test members run with. */
export const TEST_LIMITS: ServerConfig['limits'] = {
  dataBytes: 1024 * 1024,
  frameBytes: 16 * 1024 * 1024,
  pathBytes: 1024,
  sessionsMax: 100,
  sessionsPerAddress: 100,
  watchesPerSession: 100,
  itemsPerSession: 1000,
  bytesPerSession: 1024 * 1024,
  itemsPerList: 1000,
  diskReserveBytes: 1024 * 1024,
  inflightPerConnection: 64,
  connectionsMax: 100,
  connectionsPerAddress: 100,
  helloTimeoutMs: 10_000,
};

/** Starts a member and connects a client. */
export async function startServer(options: MemberOptions = {}): Promise<{ url: string; client: VeraClient; dataDir: string }> {
  dir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'vera-member-'));
  const config: ServerConfig = {
    id: 'n1',
    dataDir: dir,
    client: { host: '127.0.0.1', port: 0 },
    peer: { host: '127.0.0.1', port: 0 },
    peers: [{ id: 'n1', host: '127.0.0.1', peerPort: 0, clientPort: 0 }],
    join: false,
    secret: null,
    logLevel: 'silent',
    sessionTimeout: { min: options.sessionTimeoutMinMs ?? 1000, max: 60_000, default: 10_000 },
    limits: { ...TEST_LIMITS, ...options.limits },
    compaction: { everyEntries: 10_000, keepEntries: 1000 },
  };
  server = await startMember(config, { logger: pino({ level: 'silent' }), ...(options.families === undefined ? {} : { families: options.families }) });
  const url = `ws://127.0.0.1:${server.clientPort}`;
  client = await connect(url, { timeoutMs: 10_000 });
  return { url, client, dataDir: dir };
}

/** Closes the member and its client but keeps its data directory, for a restart. */
export async function closeKeepingData(): Promise<void> {
  await client?.close();
  client = null;
  await server?.close();
  server = null;
}

/** Every event `client` receives from now on, in order. */
export function collectEvents(client: VeraClient): ChangeEvent[] {
  const seen: ChangeEvent[] = [];
  client.on('event', (e) => seen.push(e));
  return seen;
}
