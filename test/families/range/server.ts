// One in-process member on loopback for the range and history tests, with a
// client connected to it; stopServer() (after each test) removes everything.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { connect, type VeraClient } from '../../../src/client/client.js';
import { RangeClient } from '../../../src/families/range/client.js';
import type { ServerConfig } from '../../../src/server/config.js';
import { startServer as startMember, type RunningServer } from '../../../src/server/index.js';

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

/** Starts a member (on `dataDir` to restart one, else a fresh directory) and connects a client. */
export async function startServer(dataDir?: string): Promise<{ url: string; client: VeraClient; range: RangeClient; dataDir: string }> {
  dir = dataDir ?? mkdtempSync(join(tmpdir(), 'vera-range-'));
  const config: ServerConfig = {
    id: 'n1',
    dataDir: dir,
    client: { host: '127.0.0.1', port: 0 },
    peer: { host: '127.0.0.1', port: 0 },
    peers: [{ id: 'n1', host: '127.0.0.1', peerPort: 0, clientPort: 0 }],
    join: false,
    secret: null,
    logLevel: 'silent',
    sessionTimeout: { min: 1000, max: 60_000, default: 10_000 },
    limits: {
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
    },
    compaction: { everyEntries: 10_000, keepEntries: 1000 },
  };
  server = await startMember(config, { logger: pino({ level: 'silent' }) });
  const url = `ws://127.0.0.1:${server.clientPort}`;
  client = await connect(url, { timeoutMs: 10_000 });
  return { url, client, range: new RangeClient(client), dataDir: dir };
}

/** Closes the member and its client but keeps its data directory, for a restart. */
export async function closeKeepingData(): Promise<void> {
  await client?.close();
  client = null;
  await server?.close();
  server = null;
}
