// A leader duty's proposals are never forwarded (docs/scale-out.md, step 8a): once members
// forward a follower's proposals to the leader, a duty whose work outlives its member's
// leadership (a journal's drop in batches, a freeze's steps, a purge) must fail NOT_LEADER
// rather than be made on the new leader's behalf, which runs its own duties. Duties propose
// through the host's `leaderOnly` view, which goes to VeraNode.proposeAsLeader; client ops
// through the host itself, which goes to VeraNode.propose (forwarded on a follower).
import { describe, expect, it } from 'vitest';
import type { FamilyHost, Plugin } from '../../src/kit/index.js';
import { counter } from '../../src/families/counter/index.js';
import { journal } from '../../src/families/journal/index.js';
import { plugin as journalPlugin } from '../../src/families/journal/server.js';
import { pluginPart } from '../../src/server/front/plugin-part.js';
import type { FrontEnd } from '../../src/server/front/context.js';

interface Member {
  readonly fe: FrontEnd;
  /** Each proposal, as `forwardable` (VeraNode.propose) or `here` (proposeAsLeader), with its op. */
  readonly proposed: string[];
}

/** A stand-in member that records which of VeraNode's two proposal paths each command took. */
function member(states: ReadonlyMap<string, unknown> = new Map()): Member {
  const proposed: string[] = [];
  const counterMetric = { inc: () => undefined, observe: () => undefined };
  const answer = (path: string) => async (command: { op: string; family?: string }) => {
    proposed.push(`${path} ${command.family ?? ''}.${command.op}`);
    return { index: proposed.length, ignored: false, result: { ok: true, op: 'family', family: command.family, value: { op: command.op } }, events: [] };
  };
  const fe = {
    metrics: { proposals: counterMetric, proposalsFailed: counterMetric, proposeLatency: counterMetric },
    isLeader: () => true,
    node: {
      propose: answer('forwardable'),
      proposeAsLeader: answer('here'),
      stateMachine: { stateOf: (family: { name: string }) => states.get(family.name) },
      status: () => ({ id: 'n1', role: 'leader', term: 1, leader: 'n1', commit: 0, lastIndex: 0, config: { voters: ['n1'], learners: [] } }),
      appliedIndex: 0,
    },
    logger: { child: () => ({ debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined }) },
  } as unknown as FrontEnd;
  return { fe, proposed };
}

/** The host the counter family's plugin gets on `m`. */
function counterHost(m: Member): FamilyHost<unknown> {
  let host: FamilyHost<unknown> | undefined;
  const probe: Plugin<Record<string, never>, unknown> = {
    ops: {},
    needs: {},
    touchesNoLists: 'the probe answers no op',
    createServer: (h) => {
      host = h as FamilyHost<unknown>;
      return { handlers: {} };
    },
  };
  pluginPart(counter, probe).bind(m.fe);
  return host!;
}

describe("a host's leaderOnly view", () => {
  it('proposes through the path that never forwards; the host itself through the one that may', async () => {
    const m = member();
    const host = counterHost(m);
    await host.propose({ op: 'add', name: 'a', delta: 1 });
    await host.leaderOnly.propose({ op: 'add', name: 'a', delta: 1 });
    await host.leaderOnly.proposeOutcome({ op: 'add', name: 'a', delta: 1 });
    await host.leaderOnly.proposeTo('counter', { op: 'add', name: 'a', delta: 1 });
    expect(m.proposed).toEqual(['forwardable counter.add', 'here counter.add', 'here counter.add', 'here counter.add']);
    // The view of the view is itself; everything else answers as the host does.
    expect(host.leaderOnly.leaderOnly).toBe(host.leaderOnly);
    expect(host.leaderOnly.isLeader()).toBe(true);
  });

  it("a journal's drop, which a client's op and the drops duty both propose, goes the duty's way from the duty", async () => {
    const dropping = { dropping: true, counts: { waiting: 0, processing: 0 }, settings: { timeoutMs: 1000 } };
    const m = member(new Map([['journal', { journals: new Map([['j', dropping]]), schedules: new Map() }]]));
    const part = pluginPart(journal, journalPlugin);
    part.bind(m.fe);
    const drops = part.duties.find((d) => d.name === 'journal-drops')!;
    drops.tick();
    await expect.poll(() => m.proposed).toEqual(['here journal.drop']);
  });
});
