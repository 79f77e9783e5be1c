// A one-member server running command version 9 (the journal's retries, removal, inspection,
// pause, progress, results and rate limits), with the client library, the CLI and HTTP at hand.
import { JournalClient } from '../../../src/families/journal/client.js';
import { startServer } from '../../support/member.js';
import { untilCommandVersion } from '../../server/fixture.js';
import { main } from '../../../src/cli/main.js';
import { captureIO } from '../../client/cli-io.js';
import { VeraError } from '../../../src/protocol/index.js';

export interface V9Server {
  readonly url: string;
  readonly http: string;
  readonly journals: JournalClient;
  /** `vera journal ARGV... --server URL`: exit code, stdout, stderr. */
  cli(...argv: string[]): Promise<{ code: number; out: string; err: string }>;
}

export async function startV9(): Promise<V9Server> {
  const { url, client } = await startServer();
  const journals = new JournalClient(client);
  // remove needs version 9: refused as such until the cluster runs it, then NOT_FOUND for a journal that is not there.
  await untilCommandVersion(() => journals.remove('no-such-journal', 'k').catch((err: unknown) => {
    if (err instanceof VeraError && err.code === 'NOT_FOUND') return;
    throw err;
  }));
  return {
    url,
    http: url.replace('ws://', 'http://'),
    journals,
    cli: async (...argv) => {
      const io = captureIO();
      const code = await main(['journal', ...argv, '--server', url], io);
      return { code, out: io.out(), err: io.err() };
    },
  };
}

/** The error a promise rejects with (fails the test when it resolves). */
export async function refusal(p: Promise<unknown>): Promise<VeraError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof VeraError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}
