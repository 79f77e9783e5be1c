// What the import tests (CSV and SQL) share: a leader started on demand with a client
// whose assignment ops are accepted, `vera assign import` run against it, and a scratch
// directory for the dumps; all of it gone after each test.
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

export interface ImportMember {
  /** Starts the leader and resolves once it accepts assignment ops. */
  start(): Promise<AssignClient>;
  /** `vera assign import ARGV... --server URL`, with what it printed. */
  run(...argv: string[]): Promise<{ code: number; out: string; err: string }>;
  /** This test's scratch directory, made on first use. */
  dir(): string;
}

/** Call at the top of a test file: registers the clean-up after each test. */
export function importMember(prefix: string): ImportMember {
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
    async run(...argv) {
      const io = captureIO();
      const code = await main(['assign', 'import', ...argv, '--server', vp!.url], io);
      return { code, out: io.out(), err: io.err() };
    },
    dir: () => (dir ??= mkdtempSync(join(tmpdir(), prefix))),
  };
}
