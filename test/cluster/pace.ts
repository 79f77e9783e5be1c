// What a workload loop does after a request fails: give the event loop a turn
// (pacing, not synchronisation). A client whose calls all reject at once (closed,
// its session expired) would otherwise spin the loop in microtasks forever:
// nothing else would run, not even the code that stops the loop. A client that is
// finished for good is replaced, as a real worker would reconnect.
import { connect, type ConnectOptions, type VeraClient } from '../../src/client/index.js';

const PAUSE_MS = 20;

export function finished(client: VeraClient): boolean {
  return client.state === 'closed' || client.state === 'expired' || client.state === 'closing';
}

/** Waits a moment; then `client`, or a new one when it is finished and `reopen` may make one. */
export async function afterFailure(client: VeraClient, reopen: (() => Promise<VeraClient>) | null): Promise<VeraClient> {
  await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
  return reopen !== null && finished(client) ? reopen() : client;
}

export async function openClient(urls: readonly string[], options: ConnectOptions, into: VeraClient[]): Promise<VeraClient> {
  const c = await connect([...urls], options);
  into.push(c);
  return c;
}
