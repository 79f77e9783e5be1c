// The peer service as startServer wires it (docs/scale-out.md, step 8a): three members in
// this process, each with its client port and peer transport on 127.0.0.1. A follower's
// forward reaches the leader's desk over the real service channel and is answered from the
// follower's own apply; a follower's relayed op runs at the leader through runFamilyOp as
// the caller's session. Clients see nothing of it yet: a follower's own proposal is still
// refused NOT_LEADER (the forwarder is attached to the node in step 8b).
import { TEST_LIMITS } from '../support/member.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../src/client/client.js';
import type { AnyCommand } from '../../src/families/core-commands.js';
import { encodeForwardBody } from '../../src/families/commands.js';
import { cluster as clusterFamily } from '../../src/families/cluster/index.js';
import { FORWARDING_SINCE } from '../../src/server/node/vera-node.js';
import type { FamilyRequest } from '../../src/protocol/index.js';
import type { ServerConfig } from '../../src/server/config.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import type { ApplyOutcome } from '../../src/statemachine/types.js';
import { withTimeout } from '../support/poll.js';
import { freePort } from '../support/vera-process.js';

const IDS = ['n1', 'n2', 'n3'] as const;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function cluster(): Promise<RunningServer[]> {
  const ports = new Map<string, { peer: number; client: number }>();
  for (const id of IDS) ports.set(id, { peer: await freePort(), client: await freePort() });
  const peers = IDS.map((id) => ({ id, host: '127.0.0.1', peerPort: ports.get(id)!.peer, clientPort: ports.get(id)!.client }));
  return Promise.all(
    IDS.map(async (id) => {
      const dir = mkdtempSync(join(tmpdir(), `vera-wiring-${id}-`));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const config: ServerConfig = {
        id,
        dataDir: dir,
        client: { host: '127.0.0.1', port: ports.get(id)!.client },
        peer: { host: '127.0.0.1', port: ports.get(id)!.peer },
        peers,
        join: false,
        secret: 'peer-service-wiring-secret',
        logLevel: 'silent',
        sessionTimeout: { min: 1000, max: 60_000, default: 10_000 },
        limits: TEST_LIMITS,
        compaction: { everyEntries: 10_000, keepEntries: 1000 },
      };
      const server = await startServer(config, { logger: pino({ level: 'silent' }) });
      cleanups.push(() => server.close());
      return server;
    }),
  );
}

async function until(check: () => boolean, what: string): Promise<void> {
  await withTimeout(
    (async () => {
      while (!check()) await new Promise((r) => setTimeout(r, 20));
    })(),
    20_000,
    what,
  );
}

const add = (name: string, delta: number): AnyCommand => ({ family: 'counter', op: 'add', name, delta }) as unknown as AnyCommand;
const counterValue = (o: ApplyOutcome): unknown => (o.result.ok && o.result.op === 'family' ? (o.result.value as { value: number }).value : o.result);

describe('the peer service of a started member', () => {
  it("carries a follower's forward and relayed op to the leader; a follower's own proposal is still refused", async () => {
    const members = await cluster();
    let leader: RunningServer | undefined;
    await until(() => {
      leader = members.find((m) => m.node.status().role === 'leader');
      // The counter's ops need command version 9, which the leader raises once it hears every member.
      return leader !== undefined && leader.node.stateMachine.stateOf(clusterFamily).active >= FORWARDING_SINCE;
    }, 'a leader');
    const leaderId = leader!.node.id;
    const followers = members.filter((m) => m !== leader);
    const client: VeraClient = await connect(`ws://127.0.0.1:${leader!.clientPort}`, { timeoutMs: 10_000 });
    cleanups.push(() => client.close());
    const follower = followers[0]!;
    await until(() => follower.node.status().leader === leaderId && follower.peerService !== null, 'the follower knowing the leader');

    // A forward, through the wired channel: proposed by the leader's desk, answered by the follower's apply.
    let outcome: ApplyOutcome | undefined;
    await until(() => {
      if (outcome === undefined && follower.peerService!.forwarder.accepts(leaderId)) {
        outcome = {} as ApplyOutcome;
        void follower.peerService!.forwarder.forward(leaderId, encodeForwardBody(add('wired', 2)).bytes).then((o) => (outcome = o));
      }
      return outcome !== undefined && 'result' in outcome;
    }, 'the forward answered');
    expect(counterValue(outcome!)).toBe(2);
    expect(follower.node.appliedIndex).toBeGreaterThanOrEqual(outcome!.index);

    // A relayed op, run at the leader by runFamilyOp as the client's session.
    const request = { id: 1, op: 'counter.add', name: 'wired', delta: 3 } as unknown as FamilyRequest;
    const answer = await follower.peerService!.relay.request(leaderId, request, { session: client.session, principal: null, remote: '127.0.0.1:1', frameBytes: 40 });
    expect(answer.result).toMatchObject({ name: 'wired', value: 5 });
    const ended = await follower.peerService!.relay.request(leaderId, request, { session: 'no-such-session', principal: null, remote: '127.0.0.1:1', frameBytes: 40 }).catch((e: unknown) => e);
    expect(ended).toMatchObject({ code: 'SESSION_EXPIRED' });

    // Inert for clients: the follower's node does not forward its own proposals yet.
    const refused = await follower.node.propose(add('wired', 1)).catch((e: unknown) => e);
    expect(refused).toMatchObject({ name: 'RaftError', code: 'NOT_LEADER', leader: leaderId });
  });
});
