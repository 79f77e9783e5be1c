// The node assignment checker on hand-written evidence: each property it claims
// to check is broken once, so a checker that passes everything cannot let a trial pass.
import { describe, expect, it } from 'vitest';
import { checkAssign, type AssignHistory, type AssignMemberState, type AssignRecord } from './assign-checker.js';

const rec = (uid: number, email: string, node: string, extra: Partial<AssignRecord> = {}): AssignRecord => ({
  uid,
  email,
  node,
  generation: 1,
  keysChangedAt: 1,
  clientState: '',
  createdAt: 100 + uid,
  replacedAt: 0,
  ...extra,
});

const records: AssignRecord[] = [
  rec(1, 'a', 'n1', { replacedAt: 150 }),
  rec(2, 'a', 'n1', { generation: 2, clientState: 'x' }),
  rec(3, 'b', 'n2'),
];
const nodes = [
  { node: 'n1', capacity: 5, load: 1, available: 3 },
  { node: 'n2', capacity: 5, load: 1, available: 0 },
];
const member = (name: string, patch: Partial<AssignMemberState> = {}): AssignMemberState => ({ member: name, nodes, records, ...patch });
const finals = [member('m1'), member('m2')];

const clean: AssignHistory = {
  logins: [
    { email: 'a', sentAt: 1, ackedAt: 2, outcome: 'ok', result: { uid: 1, node: 'n1', generation: 1, clientState: '' } },
    { email: 'a', sentAt: 3, ackedAt: 4, outcome: 'ok', result: { uid: 2, node: 'n1', generation: 2, clientState: 'x' } },
    { email: 'a', sentAt: 3, ackedAt: 5, outcome: 'refused' },
    { email: 'b', sentAt: 1, ackedAt: 9, outcome: 'unknown' },
    { email: 'b', sentAt: 2, ackedAt: 3, outcome: 'ok', result: { uid: 3, node: 'n2', generation: 1, clientState: '' } },
  ],
  samples: [
    { member: 'm1', email: 'a', current: 1 },
    { member: 'm2', email: 'b', current: 0 },
  ],
};

const problems = (h: AssignHistory, f: readonly AssignMemberState[] = finals): readonly string[] => checkAssign(h, f).problems;

describe('the node assignment checker', () => {
  it('passes a clean history', () => {
    expect(problems(clean)).toEqual([]);
  });

  it('flags two current records for one email, in a sample or at the end', () => {
    expect(problems({ ...clean, samples: [{ member: 'm2', email: 'a', current: 2 }] })).toEqual(['m2: a read found 2 current records for a']);
    const two = records.map((r) => (r.uid === 1 ? { ...r, replacedAt: 0 } : r));
    const fixedLoad = nodes.map((n) => (n.node === 'n1' ? { ...n, load: 2 } : n));
    expect(problems(clean, [member('m1', { records: two, nodes: fixedLoad })])).toEqual(['m1: a has 2 current records (uids 1, 2)']);
  });

  it('flags a load counter that drifted from the current records, and one over capacity', () => {
    const drift = nodes.map((n) => (n.node === 'n2' ? { ...n, load: 2 } : n));
    expect(problems(clean, [member('m1', { nodes: drift })])).toEqual(['m1: n2 counts load 2 but holds 1 current records']);
    const over = nodes.map((n) => (n.node === 'n1' ? { ...n, capacity: 0 } : n));
    expect(problems(clean, [member('m1', { nodes: over })])).toEqual(['m1: n1 has load 1 over its capacity 0']);
  });

  it('flags a uid shared by two emails and members that disagree', () => {
    const shared = [...records, rec(9, 'c', 'n2', { replacedAt: 5 }), rec(9, 'd', 'n2', { replacedAt: 5 })];
    expect(problems(clean, [member('m1', { records: shared })])).toEqual(['m1: uid 9 belongs to both c and d']);
    const other = records.map((r) => (r.uid === 3 ? { ...r, generation: 7 } : r));
    expect(problems(clean, [member('m1'), member('m2', { records: other })])).toEqual(['members disagree on records: m1 and m2']);
  });

  it('flags an acknowledged assignment that is missing or elsewhere, and a lost client state', () => {
    const gone = records.filter((r) => r.uid !== 1);
    expect(problems(clean, [member('m1', { records: gone })])).toEqual([
      "acknowledged uid 1 of a is not a's record on m1",
      'acknowledged client state "" of a is none of its records\' on m1',
    ]);
    const moved: AssignHistory = { ...clean, logins: clean.logins.map((l) => (l.result?.uid === 3 ? { ...l, result: { ...l.result, node: 'n1' } } : l)) };
    expect(problems(moved)).toEqual(['acknowledged uid 3 of b on n1 is on n2 on m1']);
    const lostState: AssignHistory = { ...clean, logins: clean.logins.map((l) => (l.result?.uid === 2 ? { ...l, result: { ...l.result, clientState: 'y' } } : l)) };
    expect(problems(lostState)).toEqual(['acknowledged client state "y" of a is none of its records\' on m1']);
  });

  it('flags a request that saw an older record or generation after a newer one was acknowledged', () => {
    const late: AssignHistory = { ...clean, logins: [...clean.logins, { email: 'a', sentAt: 6, ackedAt: 7, outcome: 'ok', result: { uid: 1, node: 'n1', generation: 1, clientState: '' } }] };
    expect(problems(late)).toEqual(['a: a request answered uid 1 after uid 2 had been acknowledged', 'a: a request answered generation 1 after 2 had been acknowledged']);
    // Overlapping requests may be answered in either order.
    const overlapping: AssignHistory = { ...clean, logins: [...clean.logins, { email: 'a', sentAt: 3.5, ackedAt: 7, outcome: 'ok', result: { uid: 1, node: 'n1', generation: 1, clientState: '' } }] };
    expect(problems(overlapping)).toEqual([]);
  });
});
