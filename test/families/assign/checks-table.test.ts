// Tokenserver's request checks and updates as a table: each row is a stored user
// (made by the logins listed, then perhaps retired or decommissioned) and one
// request, with the answer Tokenserver gives. Every expected answer was worked
// out by hand from syncstorage-rs, not from Vera's code:
//   - the checks and their order: `TokenserverRequest::validate` in
//     syncserver/src/tokenserver/extractors.rs (a comparison where either side is
//     unknown passes; 0 reported counts as unknown, `AuthData::from_request`);
//   - what an accepted request stores: `update_user` in
//     syncserver/src/tokenserver/handlers.rs (new record on a new client state,
//     generation from keys-changed-at when no generation is reported);
//   - the record checked: `get_or_create_user` in tokenserver-db-common/src/lib.rs
//     (a new user is checked against the record made from its own request; a
//     replaced one against its copy on a new node).
// Rows marked "Vera" are where Vera deliberately differs (docs/assignment.md,
// "Differences from Tokenserver"): a retired user is refused even when upstream
// would accept, and a refusal keeps nothing, not even a new node.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UserRecord } from '../../../src/families/assign/records.js';
import { AssignHarness, SERVICE } from './harness.js';

interface Req {
  readonly generation?: number;
  readonly keysChangedAt?: number;
  readonly clientState?: string;
}

/** How the stored user came to be: logins in order, then optionally retired or decommissioned. */
interface Stored {
  readonly logins: readonly Req[];
  readonly then?: 'retire' | 'decommission';
}

type Refusal = 'kca>gen' | 'cs-empty' | 'cs-stale' | 'cs-no-gen' | 'cs-no-kca' | 'gen-back' | 'kca-back' | 'kca-absent' | 'retired';

const REFUSALS: Record<Refusal, [string, RegExp]> = {
  'kca>gen': ['invalid-keysChangedAt', /greater than generation/],
  'cs-empty': ['invalid-client-state', /empty string/],
  'cs-stale': ['invalid-client-state', /stale value/],
  'cs-no-gen': ['invalid-client-state', /no generation change/],
  'cs-no-kca': ['invalid-client-state', /no keys_changed_at change/],
  'gen-back': ['invalid-generation', /less than previously-seen generation/],
  'kca-back': ['invalid-keysChangedAt', /less than previously seen/],
  'kca-absent': ['invalid-keysChangedAt', /absent but previously seen/],
  retired: ['invalid-generation', /is retired/],
};

/** Accepted: what the user's current record holds afterwards, and whether it is a new record. */
interface Accepted {
  readonly generation: number;
  readonly keysChangedAt: number;
  readonly clientState: string;
  readonly newRecord: boolean;
}

type Row = readonly [what: string, stored: Stored | null, request: Req, expected: Refusal | Accepted];

const s1000: Stored = { logins: [{ generation: 1000, keysChangedAt: 1000, clientState: 'aa' }] };
const sNoKca: Stored = { logins: [{ generation: 500, clientState: 'aa' }] };
const sGen0: Stored = { logins: [{ keysChangedAt: 1234, clientState: 'aa' }] };
const sOld: Stored = { logins: [{ generation: 1, keysChangedAt: 1, clientState: 'zz' }, { generation: 10, keysChangedAt: 8, clientState: 'aa' }] };
const same = (generation: number, keysChangedAt: number, clientState = 'aa'): Accepted => ({ generation, keysChangedAt, clientState, newRecord: false });
const fresh = (generation: number, keysChangedAt: number, clientState: string): Accepted => ({ generation, keysChangedAt, clientState, newRecord: true });

const ROWS: readonly Row[] = [
  // A new user: checked against the record its own request made, so always accepted.
  ['new user, keys-changed-at above generation (issue example)', null, { generation: 1232, keysChangedAt: 1234, clientState: 'aa' }, fresh(1232, 1234, 'aa')],
  ['new user reporting nothing', null, {}, fresh(0, 0, '')],
  ['new user with only a generation', null, { generation: 5, clientState: 'aa' }, fresh(5, 0, 'aa')],
  ['new user with only keys-changed-at: generation stays 0', null, { keysChangedAt: 7, clientState: 'aa' }, fresh(0, 7, 'aa')],
  // Stored 1000/1000/aa.
  ['newer keys-changed-at above the reported generation (issue example)', s1000, { generation: 1001, keysChangedAt: 1002, clientState: 'aa' }, 'kca>gen'],
  ['both newer and equal', s1000, { generation: 1002, keysChangedAt: 1002, clientState: 'aa' }, same(1002, 1002)],
  ['newer generation, same keys-changed-at', s1000, { generation: 1001, keysChangedAt: 1000, clientState: 'aa' }, same(1001, 1000)],
  ['generation back', s1000, { generation: 999, keysChangedAt: 1000, clientState: 'aa' }, 'gen-back'],
  ['keys-changed-at back', s1000, { generation: 1000, keysChangedAt: 999, clientState: 'aa' }, 'kca-back'],
  ['keys-changed-at absent after one was stored', s1000, { generation: 1000, clientState: 'aa' }, 'kca-absent'],
  ['no generation, same keys-changed-at', s1000, { keysChangedAt: 1000, clientState: 'aa' }, same(1000, 1000)],
  ['no generation, newer keys-changed-at: it becomes the generation', s1000, { keysChangedAt: 1500, clientState: 'aa' }, same(1500, 1500)],
  ['no timestamps reported after a keys-changed-at was stored', s1000, { clientState: 'aa' }, 'kca-absent'],
  ['nothing at all reported: the empty client state is checked first', s1000, {}, 'cs-empty'],
  ['new client state, keys-changed-at above generation: the first check wins', s1000, { generation: 1001, keysChangedAt: 1002, clientState: 'bb' }, 'kca>gen'],
  ['new client state, same generation, newer keys-changed-at above it', s1000, { generation: 1000, keysChangedAt: 1001, clientState: 'bb' }, 'kca>gen'],
  ['new client state with both newer', s1000, { generation: 1001, keysChangedAt: 1001, clientState: 'bb' }, fresh(1001, 1001, 'bb')],
  ['new client state, nothing newer', s1000, { generation: 1000, keysChangedAt: 1000, clientState: 'bb' }, 'cs-no-gen'],
  ['new client state, newer generation only', s1000, { generation: 1002, keysChangedAt: 1000, clientState: 'bb' }, 'cs-no-kca'],
  ['empty client state after aa', s1000, { generation: 1001, keysChangedAt: 1001, clientState: '' }, 'cs-empty'],
  ['new client state, no generation, newer keys-changed-at', s1000, { keysChangedAt: 1001, clientState: 'bb' }, fresh(1001, 1001, 'bb')],
  ['new client state, older generation, newer keys-changed-at', s1000, { generation: 999, keysChangedAt: 1001, clientState: 'bb' }, 'kca>gen'],
  ['new client state, older generation, same keys-changed-at', s1000, { generation: 999, keysChangedAt: 1000, clientState: 'bb' }, 'cs-no-gen'],
  // Stored 1234/1234 and 0/1234.
  ['generation 1233 after 1234/1234 (issue example)', { logins: [{ generation: 1234, keysChangedAt: 1234, clientState: 'aa' }] }, { generation: 1233, keysChangedAt: 1234, clientState: 'aa' }, 'gen-back'],
  ['generation 1233 above a stored 0, keys-changed-at unchanged (issue example)', sGen0, { generation: 1233, keysChangedAt: 1234, clientState: 'aa' }, same(1233, 1234)],
  ['stored 0/1234, newer keys-changed-at above the reported generation', sGen0, { generation: 1235, keysChangedAt: 1236, clientState: 'aa' }, 'kca>gen'],
  // Stored 500 with no keys-changed-at: comparisons with it pass.
  ['first keys-changed-at, above the reported generation', sNoKca, { generation: 600, keysChangedAt: 700, clientState: 'aa' }, same(600, 700)],
  ['generation back, no keys-changed-at anywhere', sNoKca, { generation: 400, clientState: 'aa' }, 'gen-back'],
  ['nothing reported, nothing stored', sNoKca, { clientState: 'aa' }, same(500, 0)],
  ['no generation, first keys-changed-at below the generation', sNoKca, { keysChangedAt: 400, clientState: 'aa' }, same(500, 400)],
  ['no generation, first keys-changed-at above the generation', sNoKca, { keysChangedAt: 600, clientState: 'aa' }, same(600, 600)],
  ['new client state, same generation', sNoKca, { generation: 500, clientState: 'bb' }, 'cs-no-gen'],
  ['new client state, newer generation, no keys-changed-at', sNoKca, { generation: 501, clientState: 'bb' }, fresh(501, 0, 'bb')],
  ['new client state with neither timestamp reported', sNoKca, { clientState: 'bb' }, fresh(500, 0, 'bb')],
  // Stored 10/8/aa after 1/1/zz.
  ['an old client state', sOld, { generation: 11, keysChangedAt: 11, clientState: 'zz' }, 'cs-stale'],
  ['an old client state with keys-changed-at above generation: the first check wins', sOld, { generation: 11, keysChangedAt: 12, clientState: 'zz' }, 'kca>gen'],
  ['an old client state with both newer', sOld, { generation: 12, keysChangedAt: 12, clientState: 'zz' }, 'cs-stale'],
  ['a third client state', sOld, { generation: 12, keysChangedAt: 12, clientState: 'cc' }, fresh(12, 12, 'cc')],
  ['newer keys-changed-at above a generation that went back: the first check wins', sOld, { generation: 9, keysChangedAt: 10, clientState: 'aa' }, 'kca>gen'],
  ['equal timestamps, below the stored generation', sOld, { generation: 9, keysChangedAt: 9, clientState: 'aa' }, 'gen-back'],
  // Stored with an empty client state.
  ['empty client state again', { logins: [{ generation: 5, keysChangedAt: 5 }] }, { generation: 5, keysChangedAt: 5 }, same(5, 5, '')],
  ['a first client state after an empty one', { logins: [{ generation: 5, keysChangedAt: 5 }] }, { generation: 6, keysChangedAt: 6, clientState: 'aa' }, fresh(6, 6, 'aa')],
  // Retired: checked against the retired record (generation the maximum).
  ['retired, both newer', { ...sOld, then: 'retire' }, { generation: 11, keysChangedAt: 11, clientState: 'aa' }, 'gen-back'],
  ['retired, keys-changed-at above the reported generation', { ...sOld, then: 'retire' }, { generation: 11, keysChangedAt: 12, clientState: 'aa' }, 'kca>gen'],
  ['retired, a new client state', { ...sOld, then: 'retire' }, { generation: 11, keysChangedAt: 11, clientState: 'cc' }, 'cs-no-gen'],
  // Vera: upstream accepts a retired user who reports no generation; Vera refuses it for good.
  ['retired, no generation (Vera)', { ...sOld, then: 'retire' }, { keysChangedAt: 8, clientState: 'aa' }, 'retired'],
  // Decommissioned: checked against its copy on a new node (Vera keeps no copy when refused).
  ['decommissioned, keys-changed-at above the reported generation', { ...s1000, then: 'decommission' }, { generation: 1001, keysChangedAt: 1002, clientState: 'aa' }, 'kca>gen'],
  ['decommissioned, both newer', { ...s1000, then: 'decommission' }, { generation: 1001, keysChangedAt: 1001, clientState: 'aa' }, same(1001, 1001)],
];

describe('get-or-create checks and updates, row by row against Tokenserver', () => {
  let h: AssignHarness;
  beforeAll(async () => {
    h = await AssignHarness.open();
    await h.service();
    await h.addNode('https://a', 1000);
    await h.addNode('https://b', 1000);
  });
  afterAll(async () => {
    await h?.close();
  });

  const recordsOf = async (email: string): Promise<UserRecord[]> => (await h.users()).filter((u) => u.email === email).sort((a, b) => a.uid - b.uid);

  it('has at least 30 rows', () => {
    expect(ROWS.length).toBeGreaterThanOrEqual(30);
  });

  ROWS.forEach(([what, stored, request, expected], i) => {
    it(`${i + 1}. ${what}`, async () => {
      const email = `row${i + 1}@x`;
      let before: UserRecord | null = null;
      for (const login of stored?.logins ?? []) before = (await h.login(email, login)).user as unknown as UserRecord;
      if (stored?.then === 'retire') await h.ok({ op: 'retire', email, service: SERVICE });
      if (stored?.then === 'decommission') await h.ok({ op: 'decommission', service: SERVICE, node: before!.node, uids: [before!.uid], max: 1000 });
      const recordsBefore = await recordsOf(email);
      if (typeof expected === 'string') {
        const [reason, message] = REFUSALS[expected];
        const r = await h.refused(email, request);
        expect({ reason: r.refused, message: r.message }).toEqual({ reason, message: expect.stringMatching(message) });
        expect(await recordsOf(email)).toEqual(recordsBefore);
      } else {
        const { user, allocated } = await h.login(email, request);
        expect({ generation: user.generation, keysChangedAt: user.keysChangedAt, clientState: user.clientState }).toEqual({
          generation: expected.generation,
          keysChangedAt: expected.keysChangedAt,
          clientState: expected.clientState,
        });
        if (stored !== null) expect(user.uid !== before!.uid, 'a new record').toBe(expected.newRecord || stored.then === 'decommission');
        if (stored?.then === 'decommission') expect(allocated).toBe(true);
      }
      await h.checkInvariants();
    });
  });
});

describe('before command version 9 (a cluster with a member on an older build)', () => {
  it('entries apply the rules they always did, so every member agrees', async () => {
    const h = await AssignHarness.open(8);
    try {
      await h.service();
      await h.addNode('https://a', 10);
      await h.addNode('https://b', 10);
      // The first check as it was: the stored keys-changed-at against the reported generation.
      await h.login('old@x', { generation: 1000, keysChangedAt: 1000, clientState: 'aa' });
      expect((await h.login('old@x', { generation: 1001, keysChangedAt: 1002, clientState: 'aa' })).user).toMatchObject({ generation: 1001, keysChangedAt: 1002 });
      expect(await h.refused('old@x', { generation: 1001, keysChangedAt: 1002, clientState: 'aa' })).toMatchObject({ refused: 'invalid-keysChangedAt' });
      // A password event skipped a user whose record was replaced.
      const u = await h.login('moved@x', { generation: 10, keysChangedAt: 10, clientState: 'aa' });
      await h.ok({ op: 'decommission', service: SERVICE, node: u.user.node, uids: [u.user.uid], max: 1000 });
      expect(await h.ok({ op: 'event', kind: 'passwordChange', email: 'moved@x', generation: 21 })).toMatchObject({ changed: 0 });
    } finally {
      await h.close();
    }
  });
});
