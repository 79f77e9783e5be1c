// The journal's checker for fault trials: from what the clients saw (adds,
// claims and dones with their outcomes and times) and what the members hold at
// the end, after the journal was drained:
//   - nothing acknowledged lost: every acknowledged add was done (acknowledged,
//     or a done whose answer never came) or is flagged;
//   - done at most once: no key was acknowledged done twice;
//   - exclusive leases: no done was honoured that was sent after a later claim
//     of its item had been acknowledged (two workers never both held it);
//   - nothing comes back: no claim sent after an acknowledged done returned
//     that key (keys are never added twice);
//   - nothing invented: every claimed key was one a producer sent;
//   - every member reports the same counts, and none left waiting or processing.
import type { CheckReport } from './checkers.js';

export type Outcome = 'ok' | 'unknown' | 'refused';

export interface JournalHistory {
  /** Each add: its keys and outcome (an add is one entry: all or nothing). */
  readonly adds: ReadonlyArray<{ readonly keys: readonly string[]; readonly outcome: Outcome }>;
  /** Each item a claim returned: the claim's lease, when it was sent and when its answer came (ms, one clock). */
  readonly claims: ReadonlyArray<{ readonly key: string; readonly lease: number; readonly sentAt: number; readonly ackedAt: number }>;
  /** Each done: when it was sent and answered, and its outcome ('refused' = CONFLICT: the lease was gone). */
  readonly dones: ReadonlyArray<{ readonly key: string; readonly lease: number; readonly sentAt: number; readonly ackedAt: number; readonly outcome: Outcome }>;
}

export interface JournalFinal {
  /** Per member: its counts. */
  readonly counts: ReadonlyArray<{ readonly member: string; readonly waiting: number; readonly processing: number; readonly flagged: number }>;
  readonly flagged: ReadonlySet<string>;
}

const MAX_PROBLEMS = 20;

export function checkJournal(history: JournalHistory, final: JournalFinal): CheckReport {
  const problems: string[] = [];
  const problem = (text: string): void => void (problems.length < MAX_PROBLEMS && problems.push(text));

  const acked = new Set<string>();
  const sent = new Set<string>();
  for (const add of history.adds) {
    for (const k of add.keys) {
      sent.add(k);
      if (add.outcome === 'ok') acked.add(k);
    }
  }
  const doneAcked = new Map<string, Array<{ lease: number; sentAt: number; ackedAt: number }>>();
  const doneMaybe = new Set<string>();
  for (const d of history.dones) {
    if (d.outcome === 'ok') doneAcked.set(d.key, [...(doneAcked.get(d.key) ?? []), d]);
    else if (d.outcome === 'unknown') doneMaybe.add(d.key);
  }
  for (const k of acked) {
    if (!doneAcked.has(k) && !doneMaybe.has(k) && !final.flagged.has(k)) problem(`acknowledged add of ${k} was lost: never done, not flagged, not in the journal`);
  }
  for (const [k, ds] of doneAcked) if (ds.length > 1) problem(`${k} was acknowledged done ${ds.length} times (leases ${ds.map((d) => d.lease).join(', ')})`);

  const claimsByKey = new Map<string, Array<JournalHistory['claims'][number]>>();
  for (const c of history.claims) {
    if (!sent.has(c.key)) problem(`a claim (lease ${c.lease}) returned ${c.key}, which no producer sent`);
    claimsByKey.set(c.key, [...(claimsByKey.get(c.key) ?? []), c]);
  }
  for (const [k, ds] of doneAcked) {
    for (const d of ds) {
      const later = (claimsByKey.get(k) ?? []).find((c) => c.lease > d.lease && c.ackedAt < d.sentAt);
      if (later !== undefined) problem(`done of ${k} under lease ${d.lease} was honoured though lease ${later.lease} had claimed it before the done was sent`);
      const back = (claimsByKey.get(k) ?? []).find((c) => c.sentAt > d.ackedAt);
      if (back !== undefined) problem(`${k} was claimed again (lease ${back.lease}) by a claim sent after its done under lease ${d.lease} was acknowledged`);
    }
  }

  const first = final.counts[0];
  for (const c of final.counts) {
    if (first !== undefined && (c.waiting !== first.waiting || c.processing !== first.processing || c.flagged !== first.flagged)) {
      problem(`members disagree: ${first.member} has ${JSON.stringify(first)}, ${c.member} has ${JSON.stringify(c)}`);
    }
    if (c.waiting !== 0 || c.processing !== 0) problem(`${c.member} still holds ${c.waiting} waiting and ${c.processing} processing items after the drain`);
  }
  if (first !== undefined && first.flagged !== final.flagged.size) problem(`${first.member} counts ${first.flagged} flagged but lists ${final.flagged.size}`);

  return {
    name: 'journal',
    problems,
    checked: history.adds.length + history.claims.length + history.dones.length,
    notes: [`${acked.size} adds acknowledged of ${sent.size} sent, ${[...doneAcked.keys()].length} dones acknowledged, ${doneMaybe.size} unknown, ${final.flagged.size} flagged`],
  };
}
