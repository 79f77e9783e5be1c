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
//   - every member reports the same counts, and none left waiting or processing;
//   - retries: a job whose handler always fails is released at most its policy's
//     attempts, is never done, ends flagged (not lost), and is not claimed once a
//     release said it was flagged;
//   - deletes: a job whose remove was acknowledged is never claimed by a claim sent
//     after that, and a cancelled one's holder never gets a done through;
//   - schedules: every tick job is aligned on the schedule, done at most once, and
//     the ticks the schedule counted are exactly the distinct tick jobs claimed
//     (a tick made twice, merged or made again after its done, breaks one of these);
//   - never early: a delayed job's claim was answered no earlier than its process
//     date (by the wall clock, shared on one machine), claims a round ahead or not;
//   - rate limits: the items of the claims that fell wholly inside one window of
//     the rate-limited journal (by the wall clock, which the members share with the
//     clients on one machine) never pass the window's limit.
import type { CheckReport } from './checkers.js';

export type Outcome = 'ok' | 'unknown' | 'refused';

export interface JournalHistory {
  /** Each add: its keys and outcome (an add is one entry: all or nothing). */
  readonly adds: ReadonlyArray<{ readonly keys: readonly string[]; readonly outcome: Outcome }>;
  /** Each item a claim returned: the claim's lease, when it was sent and when its answer came (ms, one clock). */
  readonly claims: ReadonlyArray<{ readonly key: string; readonly lease: number; readonly sentAt: number; readonly ackedAt: number }>;
  /** Each done: when it was sent and answered, and its outcome ('refused' = CONFLICT: the lease was gone). */
  readonly dones: ReadonlyArray<{ readonly key: string; readonly lease: number; readonly sentAt: number; readonly ackedAt: number; readonly outcome: Outcome }>;
  /** Failing releases of jobs whose handler always fails (keys `poison-*`), with `attempts` their policy's. */
  readonly releases?: ReadonlyArray<{ readonly key: string; readonly lease: number; readonly sentAt: number; readonly ackedAt: number; readonly outcome: Outcome; readonly flagged: boolean }>;
  readonly attempts?: number;
  /** Removes by key, with what the member said it did. */
  readonly removes?: ReadonlyArray<{ readonly key: string; readonly sentAt: number; readonly ackedAt: number; readonly outcome: Outcome; readonly status?: 'removed' | 'cancelled' }>;
  /** Delayed jobs' process dates (wall-clock ms), and per claimed delayed job when (wall clock) its claim was answered. */
  readonly delayed?: {
    readonly due: Readonly<Record<string, number>>;
    readonly answered: ReadonlyArray<{ readonly key: string; readonly lease: number; readonly at: number }>;
  };
  /** The rate-limited journal's claims (wall-clock ms) and its limit. */
  readonly rated?: {
    readonly max: number;
    readonly windowMs: number;
    readonly claims: ReadonlyArray<{ readonly items: number; readonly sentAt: number; readonly ackedAt: number }>;
  };
}

/** What the schedule said at its end (read before it was removed): its ticks, the last one, its period, and the prefix of its jobs' keys. */
export interface ScheduleFinal {
  readonly prefix: string;
  readonly everyMs: number;
  readonly produced: number;
  readonly skipped: number;
  readonly lastTick: number;
}

export interface JournalFinal {
  /** Per member: its counts. */
  readonly counts: ReadonlyArray<{ readonly member: string; readonly waiting: number; readonly processing: number; readonly flagged: number }>;
  readonly flagged: ReadonlySet<string>;
  readonly schedule?: ScheduleFinal;
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
  // A job removed (or maybe removed: the answer was lost) need not be done.
  const removed = new Set((history.removes ?? []).filter((r) => r.outcome !== 'refused').map((r) => r.key));
  for (const k of acked) {
    if (!doneAcked.has(k) && !doneMaybe.has(k) && !final.flagged.has(k) && !removed.has(k)) problem(`acknowledged add of ${k} was lost: never done, not flagged, not removed, not in the journal`);
  }
  for (const [k, ds] of doneAcked) if (ds.length > 1) problem(`${k} was acknowledged done ${ds.length} times (leases ${ds.map((d) => d.lease).join(', ')})`);

  const claimsByKey = new Map<string, Array<JournalHistory['claims'][number]>>();
  // A schedule's jobs are sent by its ticks.
  const tickOf = (key: string): number | null => (final.schedule !== undefined && key.startsWith(final.schedule.prefix) ? Date.parse(key.slice(final.schedule.prefix.length)) : null);
  for (const c of history.claims) {
    if (!sent.has(c.key) && tickOf(c.key) === null) problem(`a claim (lease ${c.lease}) returned ${c.key}, which no producer sent`);
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

  checkRetries(history, final, claimsByKey, doneAcked, problem);
  checkRemoves(history, claimsByKey, problem);
  if (final.schedule !== undefined) checkSchedule(final.schedule, claimsByKey, tickOf, problem);
  if (history.rated !== undefined) checkRate(history.rated, problem);
  if (history.delayed !== undefined) checkNeverEarly(history.delayed, problem);

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
    checked: history.adds.length + history.claims.length + history.dones.length + (history.releases?.length ?? 0) + (history.removes?.length ?? 0) + (history.rated?.claims.length ?? 0),
    notes: [
      `${acked.size} adds acknowledged of ${sent.size} sent, ${[...doneAcked.keys()].length} dones acknowledged, ${doneMaybe.size} unknown, ${final.flagged.size} flagged`,
      `${(history.releases ?? []).length} failing releases, ${removed.size} removed, ${final.schedule?.produced ?? 0} ticks, ${history.rated?.claims.length ?? 0} rate-limited claims, ${history.delayed?.answered.length ?? 0} delayed jobs claimed`,
    ],
  };
}

type Claims = ReadonlyMap<string, ReadonlyArray<JournalHistory['claims'][number]>>;
type Problem = (text: string) => void;

function checkRetries(history: JournalHistory, final: JournalFinal, claimsByKey: Claims, doneAcked: ReadonlyMap<string, unknown>, problem: Problem): void {
  const releases = history.releases ?? [];
  const byKey = new Map<string, Array<(typeof releases)[number]>>();
  for (const r of releases) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r]);
  const poison = new Set([...history.adds.filter((a) => a.outcome === 'ok').flatMap((a) => a.keys.filter((k) => k.startsWith('poison-')))]);
  for (const k of poison) {
    const ok = (byKey.get(k) ?? []).filter((r) => r.outcome === 'ok');
    if (history.attempts !== undefined && ok.length > history.attempts) problem(`${k} failed ${ok.length} times, past its ${history.attempts} attempts`);
    if (doneAcked.has(k)) problem(`${k}, whose handler always fails, was done`);
    if (!final.flagged.has(k)) problem(`${k}, whose handler always fails, did not end flagged`);
    const flaggedBy = ok.find((r) => r.flagged);
    const after = flaggedBy === undefined ? undefined : (claimsByKey.get(k) ?? []).find((c) => c.sentAt > flaggedBy.ackedAt);
    if (after !== undefined) problem(`${k} was claimed (lease ${after.lease}) after a release flagged it`);
  }
}

function checkRemoves(history: JournalHistory, claimsByKey: Claims, problem: Problem): void {
  for (const r of history.removes ?? []) {
    if (r.outcome !== 'ok') continue;
    const back = (claimsByKey.get(r.key) ?? []).find((c) => c.sentAt > r.ackedAt);
    if (back !== undefined) problem(`${r.key} was claimed (lease ${back.lease}) by a claim sent after its remove was acknowledged`);
    if (r.status === 'cancelled') {
      const through = history.dones.find((d) => d.key === r.key && d.outcome === 'ok' && d.sentAt > r.ackedAt);
      if (through !== undefined) problem(`${r.key} was cancelled, yet a done under lease ${through.lease} sent after it went through`);
    }
  }
}

function checkSchedule(s: ScheduleFinal, claimsByKey: Claims, tickOf: (key: string) => number | null, problem: Problem): void {
  const ticks = [...claimsByKey.keys()].map((k) => [k, tickOf(k)] as const).filter((p): p is readonly [string, number] => p[1] !== null);
  for (const [k, t] of ticks) if (!Number.isSafeInteger(t) || t % s.everyMs !== 0) problem(`${k} is not a tick of the schedule (every ${s.everyMs} ms)`);
  const counted = ticks.filter(([, t]) => t <= s.lastTick).length;
  if (counted !== s.produced) problem(`the schedule counts ${s.produced} ticks made up to ${s.lastTick}, but ${counted} distinct tick jobs were claimed`);
}

function checkRate(rated: NonNullable<JournalHistory['rated']>, problem: Problem): void {
  const perWindow = new Map<number, number>();
  for (const c of rated.claims) {
    const w = Math.floor(c.sentAt / rated.windowMs);
    if (Math.floor(c.ackedAt / rated.windowMs) !== w || c.items === 0) continue; // the window it fell in is not known
    perWindow.set(w, (perWindow.get(w) ?? 0) + c.items);
  }
  for (const [w, n] of perWindow) if (n > rated.max) problem(`${n} items were claimed in the rate window starting ${w * rated.windowMs}, over its limit of ${rated.max}`);
}

function checkNeverEarly(delayed: NonNullable<JournalHistory['delayed']>, problem: Problem): void {
  for (const a of delayed.answered) {
    const due = delayed.due[a.key];
    if (due !== undefined && a.at < due) problem(`${a.key} reached a worker (lease ${a.lease}) ${due - a.at} ms before its process date`);
  }
}
