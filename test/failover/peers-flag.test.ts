// A member restarted with a --peers list that disagrees with the replicated
// address book uses the book, and says so loudly at start instead of sitting
// quietly as a pre-candidate while the operator trusts the flags.

import { afterEach, describe, expect, it } from 'vitest';
import { killAll, VeraProcess } from '../support/vera-process.js';
import { Cluster } from './cluster.js';

afterEach(killAll);

describe('--peers against the address book at start', () => {
  it('warns naming each difference when they disagree, and says nothing when they agree', async () => {
    const cluster = await Cluster.start(3);
    await cluster.leader();
    const [n1, n2] = cluster.members;
    const secret = n1!.process.proc.spawnargs[n1!.process.proc.spawnargs.indexOf('--secret') + 1]!;
    const entry = (m: typeof n1, clientPort = m!.clientPort): string => `${m!.id}=127.0.0.1:${m!.peerPort}/${clientPort}`;
    const matching = cluster.members.map((m) => entry(m)).join(',');
    expect(n1!.process.logs.some((l) => l.event === 'peers-flag-disagrees')).toBe(false);

    await n1!.process.stop();
    const stale = [entry(n1), entry(n2, n2!.clientPort + 1)].join(',');
    const restarted = await VeraProcess.start({ id: 'n1', dataDir: n1!.process.dataDir, clientPort: n1!.clientPort, peerPort: n1!.peerPort, peers: stale, secret });
    const warning = await restarted.waitForLog((l) => l.event === 'peers-flag-disagrees', 5000);
    expect(warning.level).toBe(40);
    expect(warning.differences).toEqual([
      `--peers gives n2 as 127.0.0.1:${n2!.peerPort}/${n2!.clientPort + 1}, the address book as 127.0.0.1:${n2!.peerPort}/${n2!.clientPort}`,
      'member n3 is missing from --peers',
    ]);
    expect(String(warning.msg)).toContain('vera member list');

    await restarted.stop();
    const again = await VeraProcess.start({ id: 'n1', dataDir: n1!.process.dataDir, clientPort: n1!.clientPort, peerPort: n1!.peerPort, peers: matching, secret });
    // The 'started' line comes after the check, so its absence by then is final.
    expect(again.logs.some((l) => l.event === 'peers-flag-disagrees')).toBe(false);
  }, 60_000);
});
