// Node assignment's checker for fault trials. From what the clients saw (each
// get-or-create request with its outcome and times), what samplers read on
// members while the faults ran, and every member's final state:
//   - one current record: no email ever has two current records, on any member,
//     in any sample or at the end (the bug Tokenserver repairs on read);
//   - exact load: every node's load counter equals its current records, and
//     never passes its capacity; available is never negative;
//   - uids are unique and each belongs to one email;
//   - members agree on every record and every node;
//   - nothing acknowledged is lost: each acknowledged assignment's record is
//     there with the node it named, and its client state is the user's current
//     or one of its old ones;
//   - real-time order: once a request was acknowledged, a request sent later
//     never sees an older current record (smaller uid) or a smaller generation.
import type { CheckReport } from './checkers.js';

export type Outcome = 'ok' | 'unknown' | 'refused';

export interface AssignRecord {
  readonly uid: number;
  readonly email: string;
  readonly generation: number;
  readonly keysChangedAt: number;
  readonly clientState: string;
  readonly createdAt: number;
  readonly replacedAt: number;
  readonly node: string;
}

export interface AssignNode {
  readonly node: string;
  readonly capacity: number;
  readonly load: number;
  readonly available: number;
}

export interface LoginEvent {
  readonly email: string;
  readonly sentAt: number;
  readonly ackedAt: number;
  readonly outcome: Outcome;
  /** What the server answered, for acknowledged requests. */
  readonly result?: { readonly uid: number; readonly node: string; readonly generation: number; readonly clientState: string };
}

export interface AssignHistory {
  readonly logins: readonly LoginEvent[];
  /** Reads taken on members while the faults ran: how many current records an email had in one snapshot. */
  readonly samples: ReadonlyArray<{ readonly member: string; readonly email: string; readonly current: number }>;
}

export interface AssignMemberState {
  readonly member: string;
  readonly nodes: readonly AssignNode[];
  /** Every record of every email the workload used. */
  readonly records: readonly AssignRecord[];
}

const MAX_PROBLEMS = 20;

export function checkAssign(history: AssignHistory, finals: readonly AssignMemberState[]): CheckReport {
  const problems: string[] = [];
  const problem = (text: string): void => void (problems.length < MAX_PROBLEMS && problems.push(text));

  for (const s of history.samples) if (s.current > 1) problem(`${s.member}: a read found ${s.current} current records for ${s.email}`);

  for (const f of finals) {
    const currentOf = new Map<string, AssignRecord[]>();
    const ownerOf = new Map<number, string>();
    const perNode = new Map<string, number>();
    for (const r of f.records) {
      const owner = ownerOf.get(r.uid);
      if (owner !== undefined && owner !== r.email) problem(`${f.member}: uid ${r.uid} belongs to both ${owner} and ${r.email}`);
      ownerOf.set(r.uid, r.email);
      if (r.replacedAt !== 0) continue;
      currentOf.set(r.email, [...(currentOf.get(r.email) ?? []), r]);
      if (r.node !== '') perNode.set(r.node, (perNode.get(r.node) ?? 0) + 1);
    }
    for (const [email, current] of currentOf) {
      if (current.length > 1) problem(`${f.member}: ${email} has ${current.length} current records (uids ${current.map((r) => r.uid).join(', ')})`);
    }
    for (const n of f.nodes) {
      const held = perNode.get(n.node) ?? 0;
      if (n.load !== held) problem(`${f.member}: ${n.node} counts load ${n.load} but holds ${held} current records`);
      if (n.load > n.capacity) problem(`${f.member}: ${n.node} has load ${n.load} over its capacity ${n.capacity}`);
      if (n.available < 0) problem(`${f.member}: ${n.node} has ${n.available} available`);
    }
    for (const node of perNode.keys()) if (!f.nodes.some((n) => n.node === node)) problem(`${f.member}: current records on ${node}, which is not a node`);
  }

  const first = finals[0];
  for (const f of finals.slice(1)) {
    if (first === undefined) break;
    if (canonical(f.records) !== canonical(first.records)) problem(`members disagree on records: ${first.member} and ${f.member}`);
    if (canonical(f.nodes) !== canonical(first.nodes)) problem(`members disagree on nodes: ${first.member} has ${JSON.stringify(first.nodes)}, ${f.member} has ${JSON.stringify(f.nodes)}`);
  }

  const acked = history.logins.filter((l) => l.outcome === 'ok' && l.result !== undefined);
  if (first !== undefined) {
    const byUid = new Map(first.records.map((r) => [r.uid, r]));
    const statesOf = new Map<string, Set<string>>();
    for (const r of first.records) statesOf.set(r.email, (statesOf.get(r.email) ?? new Set()).add(r.clientState));
    for (const l of acked) {
      const res = l.result!;
      const r = byUid.get(res.uid);
      if (r === undefined || r.email !== l.email) problem(`acknowledged uid ${res.uid} of ${l.email} is not ${l.email}'s record on ${first.member}`);
      else if (r.node !== res.node) problem(`acknowledged uid ${res.uid} of ${l.email} on ${res.node} is on ${r.node} on ${first.member}`);
      if (!(statesOf.get(l.email)?.has(res.clientState) ?? false)) problem(`acknowledged client state ${JSON.stringify(res.clientState)} of ${l.email} is none of its records' on ${first.member}`);
    }
  }

  // Real time: for each email, requests in order of acknowledgement; a request sent after
  // an earlier one was acknowledged must see at least its uid and generation.
  const byEmail = new Map<string, LoginEvent[]>();
  for (const l of acked) byEmail.set(l.email, [...(byEmail.get(l.email) ?? []), l]);
  for (const [email, ls] of byEmail) {
    const done = [...ls].sort((a, b) => a.ackedAt - b.ackedAt);
    let maxUid = -1;
    let maxGeneration = -1;
    let k = 0;
    for (const l of [...ls].sort((a, b) => a.sentAt - b.sentAt)) {
      while (k < done.length && done[k]!.ackedAt < l.sentAt) {
        maxUid = Math.max(maxUid, done[k]!.result!.uid);
        maxGeneration = Math.max(maxGeneration, done[k]!.result!.generation);
        k++;
      }
      if (l.result!.uid < maxUid) problem(`${email}: a request answered uid ${l.result!.uid} after uid ${maxUid} had been acknowledged`);
      if (l.result!.generation < maxGeneration) problem(`${email}: a request answered generation ${l.result!.generation} after ${maxGeneration} had been acknowledged`);
    }
  }

  return {
    name: 'assign',
    problems,
    checked: history.logins.length + history.samples.length,
    notes: [`${acked.length} requests acknowledged of ${history.logins.length}, ${history.logins.filter((l) => l.outcome === 'refused').length} refused, ${history.samples.length} samples, ${first?.records.length ?? 0} records`],
  };
}

function canonical(values: ReadonlyArray<object>): string {
  return JSON.stringify([...values].map((v) => JSON.stringify(v, Object.keys(v).sort())).sort());
}
