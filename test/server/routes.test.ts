// Which op runs where, and which commands a member may forward (docs/scale-out.md
// "Relayed ops", src/server/peer-service/routes.ts): every op of every registered
// family has a route, every command of every family has an origin, and the leader's
// desk refuses a forward of a command only its duties propose, changing nothing.
import { describe, expect, it } from 'vitest';
import { encodeForwardBody, readForwardEnvelope } from '../../src/families/commands.js';
import type { AnyCommand } from '../../src/families/core-commands.js';
import { FAMILIES } from '../../src/families/registry.js';
import { OPS } from '../../src/protocol/index.js';
import { loadPlugins } from '../../src/server/front/plugin-part.js';
import { decodeServiceMessage } from '../../src/server/peer-service/codec.js';
import { Desk } from '../../src/server/peer-service/desk.js';
import { COMMAND_ORIGINS, CORE_ROUTES, forwardRefusal, routeOf } from '../../src/server/peer-service/routes.js';
import type { ApplyOutcome } from '../../src/statemachine/types.js';
import type { AnyFamily } from '../../src/statemachine/family.js';
import type { AnyPlugin } from '../../src/kit/plugin.js';

describe('op routes', () => {
  it('every core op is classified, and every op of every registered family has a route: the leader, until a family says otherwise', async () => {
    const parts = await loadPlugins(FAMILIES);
    expect(Object.keys(CORE_ROUTES).sort()).toEqual([...OPS].sort());
    for (const op of OPS) expect(routeOf(op, parts.familyOps), op).toBe('anywhere');
    expect(parts.familyOps.size).toBeGreaterThan(80);
    const routes = new Map([...parts.familyOps.keys()].map((op) => [op, routeOf(op, parts.familyOps)]));
    // Stage 1 step 7: no family has moved an op yet (step 11 does, one family per commit, each with its test).
    expect([...routes].filter(([, r]) => r !== 'leader')).toEqual([]);
    expect(routes.get('journal.claim')).toBe('leader');
    expect(routes.get('lease.keepAlive')).toBe('leader');
    expect(routeOf('no.such.op', parts.familyOps)).toBeUndefined();
    parts.close();
  });

  it("takes a plugin's runsOn, and refuses one naming no op or no place", async () => {
    const [counter] = FAMILIES.filter((f) => f.name === 'counter');
    const plugin = await counter!.plugin!();
    // A family whose plugin says where its ops run (the last two as a mistaken plugin written without the types might).
    const routed = (runsOn: Record<string, string>): AnyFamily => ({ ...counter!, plugin: async () => ({ ...plugin, runsOn }) as AnyPlugin });
    const withRoute = routed({ get: 'anywhere' });
    const parts = await loadPlugins([withRoute]);
    expect(routeOf('counter.get', parts.familyOps)).toBe('anywhere');
    expect(routeOf('counter.add', parts.familyOps)).toBe('leader');
    const misspelt = routed({ gte: 'anywhere' });
    await expect(loadPlugins([misspelt])).rejects.toThrow(/runsOn for gte, which is none of its ops/);
    const nowhere = routed({ get: 'follower' });
    await expect(loadPlugins([nowhere])).rejects.toThrow(/neither 'leader' nor 'anywhere'/);
  });
});

describe('forwardable commands', () => {
  it('every command of every registered family has an origin, and the table names no command that does not exist', () => {
    const registered = FAMILIES.flatMap((f) => Object.keys(f.ops).map((op) => `${f.name}.${op}`)).sort();
    const classified = Object.entries(COMMAND_ORIGINS)
      .flatMap(([family, ops]) => Object.keys(ops).map((op) => `${family}.${op}`))
      .sort();
    expect(classified).toEqual(registered);
  });

  it("refuses the leader's duties' commands and takes a client's", () => {
    expect(forwardRefusal('lists', { op: 'push' })).toBeNull();
    expect(forwardRefusal('sessions', { op: 'closeSession', session: 's', reason: 'bye' })).toBeNull();
    expect(forwardRefusal('sessions', { op: 'closeSession', session: 's', reason: 'expired' })).toMatch(/session-expiry duty/);
    expect(forwardRefusal('cluster', { op: 'setCommandVersion', version: 9 })).toMatch(/leader's own to propose/);
    expect(forwardRefusal('lag', { op: 'ack', acks: [] })).toMatch(/ack-flush/);
    // A member's own audit facts (auth failures its guard saw) reach the log by forwarding.
    expect(forwardRefusal('audit', { op: 'append', facts: [{ at: 1, kind: 'auth-failed', principal: null, remote: 'r', what: 'x' }] })).toBeNull();
    expect(forwardRefusal('journal', { op: 'timeout', name: 'j', claims: [] })).toMatch(/journal-timeouts/);
    expect(forwardRefusal('assign', { op: 'purgeStop', service: 's' })).toBeNull();
    expect(forwardRefusal('assign', { op: 'purgeStop', service: 's', seq: 1, error: 'x' })).toMatch(/assign-purge/);
    expect(forwardRefusal('assign', { op: 'purgeStep', service: 's' })).toMatch(/assign-purge/);
    expect(forwardRefusal('nosuch', { op: 'x' })).toMatch(/not a command a member may forward/);
  });

  it("the desk refuses a forwarded duty command before proposing it, and proposes a client's", () => {
    const replies: Uint8Array[] = [];
    const proposed: string[] = [];
    const desk = new Desk({
      send: (_to, payload) => (replies.push(payload), true),
      // As VeraNode.proposeForwarded: the envelope is read, then the desk's admit judges it, then the proposal.
      propose: (body, _rid, admit) => {
        const envelope = readForwardEnvelope(body);
        admit(envelope);
        proposed.push(`${envelope.family}.${envelope.op}`);
        return { place: { index: proposed.length, term: 1 }, result: new Promise<ApplyOutcome>(() => undefined) };
      },
      maxInFlight: 10,
    });
    const body = (c: object): Uint8Array => encodeForwardBody(c as AnyCommand).bytes;
    desk.onForward('n2', { k: 'fwd', id: 1, rid: 'n2/t/1', body: body({ family: 'cluster', op: 'setCommandVersion', version: 9 }) });
    desk.onForward('n2', { k: 'fwd', id: 2, rid: 'n2/t/2', body: body({ op: 'closeSession', session: 'AAAAAAAAAAAAAAAAAAAAAA', reason: 'expired' }) });
    desk.onForward('n2', { k: 'fwd', id: 3, rid: 'n2/t/3', body: body({ op: 'closeSession', session: 'AAAAAAAAAAAAAAAAAAAAAA', reason: 'bye' }) });
    expect(proposed).toEqual(['sessions.closeSession']);
    expect(desk.forwardsInFlight).toBe(1);
    const answers = replies.map((r) => decodeServiceMessage(r));
    expect(answers[0]).toMatchObject({ k: 'fwdErr', id: 1, code: 'BAD_REQUEST', notProposed: true });
    expect((answers[0] as { message: string }).message).toMatch(/cluster\.setCommandVersion is the leader's own/);
    expect(answers[1]).toMatchObject({ k: 'fwdErr', id: 2, code: 'BAD_REQUEST', notProposed: true });
    expect(answers[2]).toMatchObject({ k: 'fwdOk', id: 3 });
  });
});
