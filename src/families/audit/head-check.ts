// The audit log's newest end, checked at start against the Raft log this member
// still holds. The chain shows an edited or removed record between two kept
// ones, but not the newest records removed with the head rewound to match: the
// records and the head are all in the audit bucket. The Raft log is not: every
// audit entry this member applied, while its log still holds it, says which facts
// became which records (counted back from the head). A record missing or unlike
// its fact means the audit log was cut back or rewritten under the member; the
// problem is kept in memory, logged, and answered with every audit.list page, so
// `vera audit --verify` fails.
import type { Entry } from '../../raft/types.js';
import type { DecodedCommand } from '../../statemachine/family.js';
import type { StateMachine } from '../../statemachine/index.js';
import type { AuditFact } from './chain.js';
import { audit, decodeRecord, recordKey, type AppendCommand } from './index.js';

/**
 * How the member reads its entries (src/families/commands.ts), handed in by the member: the
 * entry codec knows every family through the registry, which this family's files do not import.
 */
export interface EntryReader {
  /** A cheap test that may say yes wrongly, never no wrongly: whether the entry may be of the family `name`. */
  mayBeOfFamily(bytes: Uint8Array, name: string): boolean;
  /** The entry's command and family; throws when it is malformed or of a command this build cannot apply. */
  decodeEntry(bytes: Uint8Array): DecodedCommand;
}

/** Audit entries checked at most (the newest ones): start stays quick with a long log. */
const MAX_CHECKED_ENTRIES = 256;

/** Facts the applied audit entries of `entries` wrote, newest entry first. */
function appendsOf(entries: readonly Entry[], applied: number, reader: EntryReader): Array<{ index: number; facts: readonly AuditFact[] }> {
  const out: Array<{ index: number; facts: readonly AuditFact[] }> = [];
  for (let i = entries.length - 1; i >= 0 && out.length < MAX_CHECKED_ENTRIES; i--) {
    const entry = entries[i]!;
    if (entry.index > applied || entry.kind !== 'command' || !reader.mayBeOfFamily(entry.data, audit.name)) continue;
    let decoded: DecodedCommand;
    try {
      decoded = reader.decodeEntry(entry.data);
    } catch {
      continue; // refused when applied, so it wrote nothing
    }
    if (decoded.family.name === audit.name && decoded.command.op === 'append') out.push({ index: entry.index, facts: (decoded.command as AppendCommand).facts });
  }
  return out;
}

function same(a: AuditFact, b: AuditFact): boolean {
  return a.at === b.at && a.kind === b.kind && a.principal === b.principal && a.remote === b.remote && a.what === b.what;
}

/** Null when the newest audit records are the ones the held Raft log wrote, else what is wrong (also kept in the audit state). */
export async function checkAuditHead(entries: readonly Entry[], sm: StateMachine, reader: EntryReader): Promise<string | null> {
  const state = sm.stateOf(audit);
  const appends = appendsOf(entries, sm.appliedIndex, reader);
  if (appends.length === 0) return null;
  const problem = await sm.read('the newest audit records', async (db, snapshot) => {
    let seq = state.seq;
    for (const { index, facts } of appends) {
      for (let i = facts.length - 1; i >= 0; i--, seq--) {
        if (seq < state.oldest) return null; // forgotten by the window, as apply forgets
        const raw = await db.get(recordKey(seq), { snapshot });
        if (raw === undefined || !same(decodeRecord(recordKey(seq), raw), facts[i]!)) {
          return `record ${seq} is not what Raft entry ${index} wrote (the log's head says ${state.seq}): the audit log was cut back or rewritten in this member's store`;
        }
      }
    }
    return null;
  });
  state.problem = problem;
  return problem;
}
