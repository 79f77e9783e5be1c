// The CLI against real servers where a fake one cannot show the fault: a stale
// read from a member with no quorum, `vera push --hold` keeping its session from
// a thief and losing it for good,
// `vera watch` saying it reconnects while its server is down, and `vera get`
// piped into a reader that stops early.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connect } from '../../src/client/index.js';
import { main } from '../../src/cli/main.js';
import { startLeader, untilCommandVersion } from '../server/fixture.js';
import { WireClient } from '../server/wire-client.js';
import { pollUntil } from '../support/poll.js';
import { freePort, killAll, VeraProcess } from '../support/vera-process.js';
import { captureIO } from './cli-io.js';

const ROOT = join(import.meta.dirname, '../..');
const processes: VeraProcess[] = [];
afterEach(async () => {
  await killAll();
  for (const p of processes.splice(0)) p.removeData();
});

describe('vera against real servers', () => {
  it('get --stale answers from a member that has no quorum, over HTTP', async () => {
    // One member of three, the other two never started: no leader, ever.
    const [peer, client, p2, c2, p3, c3] = await Promise.all(Array.from({ length: 6 }, () => freePort()));
    const lonely = await VeraProcess.start({ id: 'n1', clientPort: client, peerPort: peer, peers: `n1=127.0.0.1:${peer}/${client},n2=127.0.0.1:${p2}/${c2},n3=127.0.0.1:${p3}/${c3}`, secret: 'not-a-real-secret-1234' });
    processes.push(lonely);
    const io = captureIO();
    expect(await main(['get', '/anything', '--stale', '--server', lonely.url], io)).toBe(0);
    expect(io.out()).toMatch(/^\/anything at index \d+ \(stale: as the member that answered has it\): 0 item\(s\)\n$/);
    const strict = captureIO();
    expect(await main(['get', '/anything', '--server', lonely.url, '--timeout', '1500'], strict)).not.toBe(0);
  });

  it('push --hold: its session cannot be taken by its id alone, and it exits non-zero once the session is lost for good', async () => {
    const vp = await startLeader();
    processes.push(vp);
    const io = captureIO();
    const held = main(['push', '/held', '1', '--hold', '--server', vp.url], io);
    const session = await pollUntil('the held session', async () => /holding session (\S+)/.exec(io.err())?.[1]);
    // The id is public (it is the item's owner); without the resume token the CLI keeps to itself, it takes nothing.
    const thief = await WireClient.connect(vp.url, 'json');
    expect((await thief.request('hello', { session })).error).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringMatching(/resume token/) });
    thief.terminate();
    const watcher = await connect(vp.url);
    expect((await watcher.get('/held')).items.map((i) => i.owner)).toEqual([session]);
    await watcher.close();
    // Authentication turned on closes the held connection (made without credentials), and its resume is refused.
    const admin = await WireClient.connect(vp.url, 'json');
    await admin.hello({ timeoutMs: 30_000 });
    await untilCommandVersion(() => admin.call('auth.userAdd', { name: 'root', password: 'root-pw' }));
    await admin.call('auth.userGrant', { name: 'root', role: 'root' });
    await admin.call('auth.enable');
    expect(await held).toBe(1);
    expect(io.err()).toMatch(/authentication is on/);
    admin.terminate();
  });

  it('watch says it is reconnecting while its server is down, and when it is back', async () => {
    const port = await freePort();
    let vp = await VeraProcess.start({ clientPort: port });
    processes.push(vp);
    const writer = await connect(vp.url);
    await writer.push('/w', 'before', { persistent: true });
    await writer.close();
    const io = captureIO();
    const watching = main(['watch', '/w', '--server', vp.url], io);
    await io.waitForOut(/watching \/w/);
    await vp.kill9();
    await pollUntil('the reconnecting notice', async () => (/connection lost .*reconnecting/.test(io.err()) ? true : undefined));
    vp = await VeraProcess.start({ clientPort: port, dataDir: vp.dataDir });
    processes.push(vp);
    await pollUntil('the reconnected notice', async () => (/reconnected to/.test(io.err()) ? true : undefined), 30_000);
    io.stopNow();
    expect(await watching).toBe(0);
  });

  it('get piped into a reader that stops early exits quietly', async () => {
    const vp = await startLeader();
    processes.push(vp);
    const c = await connect(vp.url);
    const pushes: Array<Promise<unknown>> = [];
    for (let i = 0; i < 2000; i++) pushes.push(c.push('/big', { i, pad: 'x'.repeat(200) }, { persistent: true, watch: false }));
    await Promise.all(pushes);
    await c.push('/big', 'last', { persistent: true, watch: false });
    await c.close();
    const r = spawnSync('bash', ['-o', 'pipefail', '-c', `node ${join(ROOT, 'bin/vera.js')} get /big --server ${vp.url} | head -n 1`], { encoding: 'utf8', timeout: 30_000 });
    expect(r.stderr).not.toMatch(/EPIPE|Error/);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^\/big at index \d+: 2001 item\(s\)\n$/);
  });
});
