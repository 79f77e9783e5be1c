// A hello in the moment after a new cluster's first election waits for the
// command version its leader is raising (so a new session gets a resume token),
// but only when the raise can come: never for a member behind, and never longer
// than its bound. settleCommandVersion with a stand-in for the member.
import { describe, expect, it } from 'vitest';
import { cluster } from '../../src/families/cluster/index.js';
import { plugin as clusterPlugin } from '../../src/families/cluster/server.js';
import { pluginPart } from '../../src/server/front/plugin-part.js';
import { COMMAND_VERSION } from '../../src/families/registry.js';
import type { FrontEnd } from '../../src/server/front/context.js';

/** What the cluster family's instance on `fe` answers a hello that waits for `version`. */
function settleCommandVersion(fe: FrontEnd, version: number, timeoutMs: number): Promise<void> {
  const part = pluginPart(cluster, clusterPlugin);
  part.bind(fe);
  return part.connection!.settleVersion!(version, timeoutMs);
}

function member(peerVersion: number): { fe: FrontEnd; applied: () => void; waitedFor: number[] } {
  const cluster = { active: 1 };
  const waitedFor: number[] = [];
  let release: () => void = () => undefined;
  const fe = {
    node: {
      stateMachine: { stateOf: () => cluster },
      status: () => ({ id: 'n1', config: { voters: ['n1', 'n2'], learners: [] }, lastIndex: 5 }),
      waitApplied: (index: number) => {
        waitedFor.push(index);
        return new Promise<void>((resolve) => {
          release = () => {
            cluster.active = COMMAND_VERSION;
            resolve();
          };
        });
      },
    },
    peerCommandVersions: new Map([['n2', peerVersion]]),
  } as unknown as FrontEnd;
  return { fe, applied: () => release(), waitedFor };
}

describe('settling the command version before a session opens', () => {
  it('waits for what the leader has appended when every member supports the version', async () => {
    const m = member(COMMAND_VERSION);
    let settled = false;
    const settling = settleCommandVersion(m.fe, 6, 60_000).then(() => (settled = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    expect(m.waitedFor).toEqual([5]);
    m.applied();
    await settling;
    expect(settled).toBe(true);
  });

  it('does not wait when a member is behind, nor past its bound', async () => {
    const behind = member(5);
    await settleCommandVersion(behind.fe, 6, 60_000);
    expect(behind.waitedFor).toEqual([]);
    const stuck = member(COMMAND_VERSION);
    const started = performance.now();
    await settleCommandVersion(stuck.fe, 6, 30);
    expect(stuck.waitedFor).toEqual([5]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
  });
});
