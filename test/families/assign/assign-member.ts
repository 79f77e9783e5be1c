// What the assignment tests on one real leader share: the leader started on demand with
// a client whose assignment ops are accepted, `vera assign ...` run against it, and a
// scratch directory; all of it gone after each test.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { connect, type VeraClient } from '../../../src/client/client.js';
import { AssignClient } from '../../../src/families/assign/client.js';
import { main } from '../../../src/cli/main.js';
import { captureIO } from '../../client/cli-io.js';
import { startLeader, untilCommandVersion } from '../../server/fixture.js';
import type { VeraProcess } from '../../support/vera-process.js';

export interface AssignMember {
  /** Starts the leader and resolves once it accepts assignment ops. */
  start(): Promise<AssignClient>;
  /** `vera assign ARGV... --server URL`, with what it printed. */
  cli(...argv: string[]): Promise<{ code: number; out: string; err: string }>;
  /** The started leader's client and HTTP address. */
  client(): VeraClient;
  httpUrl(): string;
  /** This test's scratch directory, made on first use. */
  dir(): string;
}

/** Call at the top of a test file: registers the clean-up after each test. */
export function assignMember(prefix = 'vera-assign-'): AssignMember {
  let vp: VeraProcess | null = null;
  let client: VeraClient | null = null;
  let dir: string | null = null;
  afterEach(async () => {
    await client?.close();
    client = null;
    await vp?.stop();
    vp = null;
    if (dir !== null) rmSync(dir, { recursive: true, force: true });
    dir = null;
  });
  return {
    async start() {
      vp = await startLeader();
      client = await connect(vp.url, { timeoutMs: 10_000 });
      const assign = new AssignClient(client);
      await untilCommandVersion(() => assign.services());
      return assign;
    },
    async cli(...argv) {
      const io = captureIO();
      const code = await main(['assign', ...argv, '--server', vp!.url], io);
      return { code, out: io.out(), err: io.err() };
    },
    client: () => client!,
    httpUrl: () => vp!.httpUrl,
    dir: () => (dir ??= mkdtempSync(join(tmpdir(), prefix))),
  };
}
