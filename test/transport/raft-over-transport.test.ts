// Three real Raft nodes (core + driver + in-memory log) talking over PeerTransport
// on loopback: the transport must carry a whole election and replication.

import { afterEach, describe, expect, it } from 'vitest';
import { RaftNode } from '../../src/raft/core.js';
import { RaftDriver } from '../../src/raft/driver.js';
import { MemoryLogStorage } from '../../src/raft/memory-storage.js';
import { encodeMessages } from '../../src/raft/transport/codec.js';
import { PeerTransport } from '../../src/raft/transport/peer-transport.js';
import type { Entry, NodeId, RandomSource } from '../../src/raft/types.js';
import { CLUSTER, freePort, RecordingLogger, SECRET } from './helpers.js';

/** A small seeded LCG (Numerical Recipes constants): election timeouts differ per node but reproducibly. */
class SeededRandom implements RandomSource {
  constructor(private state: number) {}
  int(n: number): number {
    this.state = (Math.imul(this.state, 1664525) + 1013904223) >>> 0;
    return this.state % n;
  }
}

interface Member {
  readonly id: NodeId;
  readonly driver: RaftDriver<number>;
  readonly transport: PeerTransport;
  readonly applied: Entry[];
  readonly fatal: unknown[];
  /** Encoded size of the largest append the core handed to the transport. */
  largestAppendBytes: number;
}

const running: Member[] = [];

afterEach(async () => {
  const members = running.splice(0);
  await Promise.all(members.map((m) => m.driver.stop()));
  await Promise.all(members.map((m) => m.transport.close()));
});

async function startCluster(ids: readonly NodeId[], onLeader: (id: NodeId) => void): Promise<Member[]> {
  const ports: Record<NodeId, number> = {};
  for (const id of ids) ports[id] = await freePort();
  const members = await Promise.all(
    ids.map(async (id, i) => {
      const storage = new MemoryLogStorage({ initialConfig: { voters: [...ids], learners: [] } });
      const loaded = await storage.load();
      const node = new RaftNode(
        {
          id,
          electionTicks: 10,
          heartbeatTicks: 2,
          random: new SeededRandom(1000 + i),
          maxInflightMessages: 64,
          maxInflightBytes: 1 << 20,
          maxMessageBytes: 64 * 1024,
        },
        { hardState: loaded.hardState, snapshot: loaded.snapshot, entries: loaded.entries, applied: 0 },
      );
      const applied: Entry[] = [];
      const fatal: unknown[] = [];
      let driver: RaftDriver<number> | null = null;
      let member: Member | null = null;
      const transport = new PeerTransport({
        selfId: id,
        listen: { host: '127.0.0.1', port: ports[id]! },
        peers: ids.filter((p) => p !== id).map((p) => ({ id: p, host: '127.0.0.1', port: ports[p]! })),
        secret: SECRET,
        clusterId: CLUSTER,
        onMessage: (m) => driver?.step(m),
        logger: new RecordingLogger(),
        // Small frames, so replication of the proposals below also exercises append splitting.
        limits: { maxQueueMessages: 10_000, maxQueueBytes: 16 << 20, maxFrameBytes: 4096 },
        reconnect: { initialDelayMs: 5, maxDelayMs: 100 },
      });
      driver = new RaftDriver<number>(
        {
          node,
          storage,
          transport: {
            send: (m) => {
              if (m.type === 'app' && member) {
                member.largestAppendBytes = Math.max(member.largestAppendBytes, encodeMessages([m]).byteLength);
              }
              transport.send(m);
            },
          },
          apply: async (entries, done) => {
            for (const entry of entries) {
              applied.push(entry);
              done(entry, entry.index);
            }
          },
          tickMs: 10,
          onSoftState: (s) => {
            if (s.role === 'leader') onLeader(id);
          },
          onFatal: (err) => fatal.push(err),
        },
        0,
      );
      member = { id, driver, transport, applied, fatal, largestAppendBytes: 0 };
      running.push(member);
      return member;
    }),
  );
  await Promise.all(members.map((m) => m.transport.start()));
  for (const m of members) m.driver.start();
  return members;
}

describe('Raft over PeerTransport', () => {
  it('elects a leader, commits 50 proposals and applies them in the same order on all three nodes', async () => {
    let elected!: (id: NodeId) => void;
    const leaderElected = new Promise<NodeId>((resolve) => (elected = resolve));
    const members = await startCluster(['n1', 'n2', 'n3'], (id) => elected(id));
    const leaderId = await leaderElected;
    const leader = members.find((m) => m.id === leaderId)!;

    const encoder = new TextEncoder();
    const payload = (i: number): Uint8Array => encoder.encode(`cmd-${i}:`.padEnd(300, '.'));
    const indexes = await Promise.all(Array.from({ length: 50 }, (_, i) => leader.driver.propose(payload(i))));
    expect(indexes).toEqual([...indexes].sort((a, b) => a - b));

    const last = Math.max(...indexes);
    await Promise.all(members.map((m) => m.driver.waitApplied(last)));

    const decoder = new TextDecoder();
    const commandsOf = (m: Member): string[] =>
      m.applied.filter((e) => e.kind === 'command').map((e) => decoder.decode(e.data).split(':')[0]!);
    const expected = Array.from({ length: 50 }, (_, i) => `cmd-${i}`);
    const asRecords = (m: Member): unknown[] =>
      m.applied.filter((e) => e.index <= last).map((e) => ({ index: e.index, term: e.term, kind: e.kind, data: [...e.data] }));
    for (const m of members) {
      expect(commandsOf(m)).toEqual(expected);
      expect(m.fatal).toEqual([]);
      // Every node applied the very same entries, index by index.
      expect(asRecords(m)).toEqual(asRecords(leader));
      expect(m.applied.map((e) => e.index)).toEqual(Array.from({ length: m.applied.length }, (_, i) => i + 1));
    }
    // The core sent appends bigger than the 4 KiB frame limit, which the receivers refuse
    // whole: they arrived only because the transport split them.
    expect(leader.largestAppendBytes).toBeGreaterThan(4096);
  });
});
