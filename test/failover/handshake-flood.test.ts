// A stranger who cannot authenticate holds open every peer connection slot it
// can get, on every member, while two followers restart. The cluster must still
// elect a leader and take writes, and the members' logs must stay a few lines
// per interval rather than one line per refused socket.
//
// The stranger connects from 127.0.0.1, the members' own address, so no
// per-address rule can tell it apart: only short deadlines and evicting idle
// unauthenticated sockets in favour of new ones keep the members reachable.

import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { VeraClient } from '../../src/client/index.js';
import { killAll, VeraProcess } from '../support/vera-process.js';
import { Cluster, fetchStatus } from './cluster.js';
import { pollUntil } from '../support/poll.js';

const SOCKETS_PER_PORT = 48;
/** A stranger's pace after each drop: about 480 new sockets a second per port at most. */
const RECONNECT_DELAY_MS = 100;

/** Keeps SOCKETS_PER_PORT idle, never-authenticating WebSockets open to each port, reopening each as it closes. */
class Stranger {
  private stopped = false;
  private readonly sockets = new Set<WebSocket>();
  opened = 0;

  constructor(private readonly ports: readonly number[]) {
    for (const port of ports) for (let i = 0; i < SOCKETS_PER_PORT; i++) this.open(port);
  }

  private open(port: number): void {
    if (this.stopped) return;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/vera/peer`, { perMessageDeflate: false });
    this.sockets.add(ws);
    this.opened++;
    ws.on('error', () => {});
    ws.on('close', () => {
      this.sockets.delete(ws);
      setTimeout(() => this.open(port), RECONNECT_DELAY_MS);
    });
  }

  stop(): void {
    this.stopped = true;
    for (const ws of this.sockets) ws.terminate();
  }
}

afterEach(killAll);

describe('a stranger flooding the peer ports', () => {
  it('cannot keep a cluster leaderless while two followers restart, and its sockets cost a bounded number of log lines', async () => {
    const cluster = await Cluster.start(3);
    const leader = await cluster.leader();
    const followers = cluster.members.filter((m) => m.id !== leader.id);
    const stranger = new Stranger(cluster.members.map((m) => m.peerPort));
    const linesBefore = cluster.members.map((m) => m.process.logs.length);
    try {
      // Let the stranger settle into every slot before the followers go down.
      await pollUntil('the stranger to have opened its sockets', async () => (stranger.opened >= 3 * SOCKETS_PER_PORT ? true : undefined), 10_000);
      const restarted: VeraProcess[] = [];
      for (const f of followers) await f.process.stop();
      for (const f of followers) {
        restarted.push(
          await VeraProcess.start({ id: f.id, dataDir: f.process.dataDir, clientPort: f.clientPort, peerPort: f.peerPort, peers: peersOf(cluster), secret: secretOf(f.process) }),
        );
      }
      const live = [leader.clientPort, ...followers.map((f) => f.clientPort)];
      const agreed = await pollUntil(
        'a leader all three members agree on while the stranger holds the peer ports',
        async () => {
          const statuses = await Promise.all(live.map((port) => fetchStatus(port)));
          const id = statuses[0]!.leader;
          return id !== null && statuses.every((s) => s.leader === id) && statuses.some((s) => s.role === 'leader') ? id : undefined;
        },
        15_000,
      );
      expect(cluster.members.map((m) => m.id)).toContain(agreed);
      const client = new VeraClient(
        live.map((port) => `ws://127.0.0.1:${port}`),
        { connectTimeoutMs: 10_000 },
      );
      try {
        await client.start();
        const pushed = await client.push('/flood/ok', { survived: true });
        expect(pushed.index).toBeGreaterThan(0);
      } finally {
        await client.close();
      }
      // The stranger kept at it the whole time (hundreds of sockets per port),
      // yet no member wrote more than a few dozen warnings about it.
      expect(stranger.opened).toBeGreaterThan(3 * SOCKETS_PER_PORT * 2);
      const warnings = [leader.process, ...restarted].map((p, i) =>
        p.logs.slice(i === 0 ? linesBefore[cluster.members.indexOf(leader)] : 0).filter((l) => typeof l.level === 'number' && l.level >= 40),
      );
      for (const w of warnings) expect(w.length).toBeLessThan(60);
    } finally {
      stranger.stop();
    }
  }, 60_000);
});

function peersOf(cluster: Cluster): string {
  return cluster.members.map((m) => `${m.id}=127.0.0.1:${m.peerPort}/${m.clientPort}`).join(',');
}

function secretOf(p: VeraProcess): string {
  const args = p.proc.spawnargs;
  return args[args.indexOf('--secret') + 1]!;
}
