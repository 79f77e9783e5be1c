// Node assignment against the naive model of model.ts: random sequences of
// logins (new users, key changes, stale and backward values), retirements,
// decommissions, node changes, account events and purges, with the clock
// moving; after every step the answer and the whole stored state must match,
// and load must equal each node's current records.
import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { unchangedLogin } from '../../../src/families/assign/apply.js';
import { AssignHarness, DEFAULTS, SERVICE } from './harness.js';
import { AssignModel, type MLoginResult } from './model.js';

const NODES = ['https://n1', 'https://n2', 'https://n3'];
const email = fc.constantFrom('a@x', 'b@x', 'c@x', 'd@x', 'e@x');
const node = fc.constantFrom(...NODES);
const small = fc.constantFrom(0, 1, 2, 3, 5, 8);

type Step =
  | { kind: 'tick'; ms: number }
  | { kind: 'login'; email: string; generation: number; keysChangedAt: number; clientState: string; pick: number }
  | { kind: 'repeat'; email: string }
  | { kind: 'retire'; email: string }
  | { kind: 'decommission'; node: string; max: number }
  | { kind: 'node'; node: string; downed?: boolean; backoff?: number; available?: number; capacity?: number }
  | { kind: 'passwordChange'; email: string; generation: number }
  | { kind: 'purge'; graceMs: number; force: boolean };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom(1, 10, 100).map((ms) => ({ kind: 'tick' as const, ms })) },
  {
    weight: 8,
    arbitrary: fc.record({ email, generation: small, keysChangedAt: small, clientState: fc.constantFrom('', 'aa', 'bb', 'cc'), pick: fc.nat(7) }).map((r) => ({ kind: 'login' as const, ...r })),
  },
  { weight: 3, arbitrary: email.map((e) => ({ kind: 'repeat' as const, email: e })) },
  { weight: 1, arbitrary: email.map((e) => ({ kind: 'retire' as const, email: e })) },
  { weight: 1, arbitrary: fc.record({ node, max: fc.integer({ min: 1, max: 3 }) }).map((r) => ({ kind: 'decommission' as const, ...r })) },
  {
    weight: 2,
    arbitrary: fc
      .record({ node, downed: fc.boolean(), backoff: fc.constantFrom(0, 0, 1), available: fc.nat(3), capacity: fc.integer({ min: 1, max: 6 }) }, { requiredKeys: ['node'] })
      .filter((r) => Object.keys(r).length > 1)
      .map((r) => ({ kind: 'node' as const, ...r })),
  },
  { weight: 1, arbitrary: fc.record({ email, generation: fc.integer({ min: 1, max: 12 }) }).map((r) => ({ kind: 'passwordChange' as const, ...r })) },
  { weight: 1, arbitrary: fc.record({ graceMs: fc.constantFrom(0, 50), force: fc.boolean() }).map((r) => ({ kind: 'purge' as const, ...r })) },
);

const harnesses: AssignHarness[] = [];
/** Logins the server would have answered without an entry: the property must have met some. */
let unchangedAnswers = 0;
afterAll(async () => {
  for (const h of harnesses) await h.close();
});

describe('node assignment against a model', () => {
  it('gives the model\'s answers and state after every step of random sequences', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(1, 2), fc.constantFrom(0.1, 0.5), fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 3, maxLength: 3 }), fc.array(step, { minLength: 1, maxLength: 40 }), async (topN, releaseRate, capacities, steps) => {
        const h = await AssignHarness.open();
        harnesses.push(h);
        const m = new AssignModel(SERVICE, releaseRate, topN);
        await h.service({ topN, releaseRate });
        for (const [i, n] of NODES.entries()) {
          await h.addNode(n, capacities[i]!, { available: Math.min(2, capacities[i]!) });
          m.nodes.set(n, { capacity: capacities[i]!, available: Math.min(2, capacities[i]!), downed: false, backoff: 0 });
        }
        // A returning user sends what it sent last time: the most common request.
        const last = new Map<string, Extract<Step, { kind: 'login' }>>();
        for (const drawn of steps) {
          const s = drawn.kind === 'repeat' ? (last.get(drawn.email) ?? { kind: 'tick' as const, ms: 1 }) : drawn;
          if (s.kind === 'login') last.set(s.email, s);
          switch (s.kind) {
            case 'tick':
              h.now += s.ms;
              break;
            case 'login': {
              // The server's read-only answer, where it gives one, must be the entry's answer, and the entry must change nothing.
              const stored = (await h.users()).filter((u) => u.email === s.email && u.service === SERVICE);
              const request = { generation: s.generation, keysChangedAt: s.keysChangedAt, clientState: s.clientState };
              const readOnly = unchangedLogin(DEFAULTS.pattern, SERVICE, stored, request, (n) => h.node(n) !== undefined);
              const usersBefore = readOnly === null ? null : JSON.stringify(await h.users());
              const v = await h.ok({ op: 'login', service: SERVICE, email: s.email, generation: s.generation, keysChangedAt: s.keysChangedAt, clientState: s.clientState, pick: s.pick });
              if (v.op !== 'login') throw new Error('not a login');
              const got: MLoginResult = 'refused' in v ? { refused: v.refused } : { uid: v.user.uid, node: v.user.node, generation: v.user.generation, keysChangedAt: v.user.keysChangedAt, clientState: v.user.clientState, oldClientStates: [...v.user.oldClientStates], firstSeenAt: v.user.firstSeenAt, created: v.created, allocated: v.allocated };
              expect(got, JSON.stringify(s)).toEqual(m.login(s, h.now));
              if (readOnly !== null) {
                expect('user' in v && v.user, JSON.stringify(s)).toEqual(readOnly);
                expect(JSON.stringify(await h.users())).toBe(usersBefore);
                unchangedAnswers++;
              }
              break;
            }
            case 'retire':
              expect(await h.ok({ op: 'retire', email: s.email, service: SERVICE })).toMatchObject({ services: m.retire(s.email, h.now) });
              break;
            case 'decommission': {
              const expected = m.decommission(s.node, s.max, h.now);
              const r = await h.run({ op: 'decommission', service: SERVICE, node: s.node, max: s.max });
              if (expected === 'NOT_FOUND') expect(r).toMatchObject({ ok: false, code: 'NOT_FOUND' });
              else expect(r).toMatchObject({ ok: true, value: expected });
              break;
            }
            case 'node': {
              const { kind: _k, node: n, ...changes } = s;
              await h.ok({ op: 'updateNode', service: SERVICE, node: n, ...changes });
              Object.assign(m.nodes.get(n)!, changes);
              break;
            }
            case 'passwordChange':
              expect(await h.ok({ op: 'event', kind: 'passwordChange', email: s.email, generation: s.generation })).toMatchObject({ changed: m.passwordChange(s.email, s.generation) });
              break;
            case 'purge': {
              const before = h.now - s.graceMs;
              const uids = m.records.filter((r) => r.replacedAt !== 0).map((r) => r.uid);
              const expected = m.purge(uids, before, s.force);
              const v = await h.ok({ op: 'purge', service: SERVICE, before, uids, force: s.force });
              expect(v).toMatchObject({ skipped: expected.skipped });
              expect((v as unknown as { purged: Array<{ uid: number }> }).purged.map((p) => p.uid)).toEqual(expected.purged);
              break;
            }
          }
          // The whole state after every step.
          expect((await h.users()).sort((a, b) => a.uid - b.uid)).toEqual([...m.records].sort((a, b) => a.uid - b.uid));
          for (const n of NODES) {
            const mine = m.nodes.get(n)!;
            expect(h.node(n), n).toEqual({ capacity: mine.capacity, load: m.load(n), available: mine.available, downed: mine.downed, backoff: mine.backoff });
          }
          await h.checkInvariants();
        }
        await h.close();
        harnesses.splice(harnesses.indexOf(h), 1);
      }),
      { numRuns: 150 },
    );
    expect(unchangedAnswers).toBeGreaterThan(0);
  }, 120_000);
});
