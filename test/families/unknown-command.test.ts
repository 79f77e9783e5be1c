// A member that meets a command it cannot apply (a newer family, op or version)
// stops, on a real process: before, such an entry applied as a BAD_REQUEST no-op
// here while newer members applied it, and the replicas silently differed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pack } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { openDataDir } from '../../src/raft/datadir.js';
import { COMMAND_VERSION } from '../../src/families/registry.js';
import { readApplied } from '../../src/statemachine/applied.js';
import { withTimeout } from '../support/poll.js';
import { killAll, VeraProcess } from '../support/vera-process.js';
import { openSession, startLeader } from '../server/fixture.js';

const dirs: string[] = [];
afterEach(async () => {
  await killAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const config = { voters: ['n1'], learners: [] };

describe('an entry this member cannot apply', () => {
  it('stops the member (exit 70) naming the version it needs, with nothing of that entry written', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vera-unknown-cmd-'));
    dirs.push(dataDir);
    const first = await startLeader({ dataDir });
    const { client } = await openSession(first, 'msgpack');
    await client.call('push', { path: '/kept', data: 'before', persistent: true });
    client.terminate();
    expect(await first.stop()).toBe(0);

    // What a newer leader would have replicated: an entry of a family this build lacks.
    const opened = await openDataDir(dataDir, { initialConfig: config, nodeId: 'n1' });
    const { hardState, lastIndex } = await opened.storage.durableState();
    const needs = COMMAND_VERSION + 1;
    await opened.storage.persist(hardState, [{ index: lastIndex + 1, term: hardState.term, kind: 'command', data: pack({ v: needs, family: 'journal', op: 'add', t: 1, key: 'k' }) }]);
    await opened.close();

    let exitCode: number | null;
    let logs: string;
    try {
      const again = await VeraProcess.start({ dataDir, args: ['--log-level', 'info'] });
      exitCode = (await withTimeout(again.exited, 15_000, 'the member to stop on the unknown entry')).code;
      logs = again.logs.map((l) => JSON.stringify(l)).join('\n');
    } catch (err) {
      // It may stop before it says it started.
      const message = (err as Error).message;
      exitCode = Number(/code (\d+)/.exec(message)?.[1]);
      logs = message;
    }
    expect(exitCode).toBe(70);
    expect(logs).toContain('command-unknown');
    expect(logs).toContain(`needs command version ${needs}`);

    const after = await openDataDir(dataDir, { initialConfig: config, nodeId: 'n1' });
    try {
      expect(await readApplied(after.db)).toBe(lastIndex);
    } finally {
      await after.close();
    }
  }, 60_000);
});
