// The client tests' fake servers and clients, each stopped after its test (register
// `afterEach(stopAll)` in the file), even when the test fails.
import { connect, type VeraClient } from '../../src/client/index.js';
import { FakeServer } from './fake-server.js';

const cleanups: Array<() => Promise<void>> = [];

/** Stops everything started since the last call, newest first. */
export async function stopAll(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

export async function server(options: Parameters<typeof FakeServer.start>[0] = {}): Promise<FakeServer> {
  const s = await FakeServer.start(options);
  cleanups.push(() => s.stop());
  return s;
}

/** A client with a short backoff that tries the URLs in the order given (not a random one), as these tests expect. */
export async function client(urls: string | string[], options: Parameters<typeof connect>[1] = {}): Promise<VeraClient> {
  const c = await connect(urls, { backoff: { initialMs: 5, maxMs: 20 }, random: () => 0, ...options });
  cleanups.push(() => c.close());
  return c;
}
