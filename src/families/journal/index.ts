// The journal family: durable priority work queues (seed 002). Items wait by
// priority and process date, are claimed under a lease (the claim entry's
// index), extended, done or released, time out back to Waiting (flagged after
// too many timeouts), expire, and merge by key as the seed says. See
// docs/journal.md; the layout is in keys.ts and docs/storage.md.
import { CommandError, type Family } from '../../statemachine/family.js';
import { planJournal } from './apply.js';
import { USER_QUOTA_SINCE } from '../../kit/index.js';
import {
  addChargeFields,
  claimsField,
  countField,
  dateField,
  doneItemsField,
  errorTextField,
  itemsField,
  keyField,
  leaseField,
  MAX_CLAIM_ITEMS,
  MAX_JOURNALS_CEILING,
  nameField,
  notAFailure,
  scheduleField,
  scheduleIdField,
  settingsField,
  type JournalCommand,
} from './commands.js';
import { JournalBucket } from './keys.js';
import { JournalState } from './state.js';

/** The command version that brought the journal: a cluster runs it once every member can apply it. */
export const JOURNAL_SINCE = 2;
/** The command version that brought doneMany (a worker's completions together in one entry). */
export const DONE_MANY_SINCE = 8;
/**
 * Failure accounting (docs/journal.md): a release counts as a failed processing unless it says
 * otherwise, a failure count that merges do not reset, process dates raised to the insertion
 * date. Entries apply so once the cluster runs this version (read from the replicated state at
 * each entry, so every member decides alike); before, exactly as seed 002's first rules did.
 */
export const FAILURES_SINCE = 9;


/** The largest byte budget a claim may carry (a sanity bound: members set theirs from their reply limit). */
const MAX_BYTE_BUDGET = 2 ** 40;

/** Items one drain entry deletes, at most. */
const DRAIN_MAX = 10_000;

function trueField(value: unknown, what: string): true {
  if (value !== true) throw new CommandError(`${what}, when given, must be true`);
  return true;
}

function boolOf(value: unknown, what: string): boolean {
  if (typeof value !== 'boolean') throw new CommandError(`${what} must be a boolean`);
  return value;
}

/** The fields of an op on a claimed item: which journal, which item, under which lease. */
function leased(c: Readonly<Record<string, unknown>>): { name: string; key: string; lease: number } {
  return { name: nameField(c.name), key: keyField(c.key), lease: leaseField(c.lease) };
}

/** doneMany's fields, checked. */
function decodeDoneMany(c: Readonly<Record<string, unknown>>): JournalCommand {
  return {
    op: 'doneMany',
    name: nameField(c.name),
    items: doneItemsField(c.items),
    ...(c.claim === undefined ? {} : { claim: countField(c.claim, 'claim', MAX_CLAIM_ITEMS) }),
    ...(c.claimBytes === undefined ? {} : { claimBytes: countField(c.claimBytes, 'claimBytes', MAX_BYTE_BUDGET) }),
    ...(c.dueBy === undefined ? {} : { dueBy: dateField(c.dueBy, 'dueBy') }),
  };
}

export const journal: Family<JournalCommand, JournalState> = {
  name: 'journal',
  since: JOURNAL_SINCE,
  buckets: [
    { id: JournalBucket.definition, name: 'journal definitions' },
    { id: JournalBucket.item, name: 'journal items by key' },
    { id: JournalBucket.waiting, name: 'journal waiting items by priority and process date' },
    { id: JournalBucket.processing, name: 'journal processing items by start date' },
    { id: JournalBucket.expiry, name: 'journal items by expiration date' },
    { id: JournalBucket.flagged, name: 'journal flagged items' },
    { id: JournalBucket.limits, name: 'journal cluster-wide limits' },
    { id: JournalBucket.result, name: 'journal results kept by key' },
    { id: JournalBucket.resultExpiry, name: 'journal results by when they go' },
    { id: JournalBucket.schedule, name: 'journal schedules (repeatable jobs)' },
  ],
  ops: {
    create: { fields: ['name', 'settings'], since: JOURNAL_SINCE, decode: (c) => ({ op: 'create', name: nameField(c.name), settings: settingsField(c.settings) }) },
    configure: { fields: ['name', 'settings'], since: JOURNAL_SINCE, decode: (c) => ({ op: 'configure', name: nameField(c.name), settings: settingsField(c.settings) }) },
    drop: { fields: ['name'], since: JOURNAL_SINCE, decode: (c) => ({ op: 'drop', name: nameField(c.name) }) },
    add: {
      fields: ['name', 'items', 'user', 'userQuota'],
      since: JOURNAL_SINCE,
      // Per-user storage quotas (issue 31, item 7) came with the failure accounting's version.
      fieldsSince: { user: USER_QUOTA_SINCE, userQuota: USER_QUOTA_SINCE },
      decode: (c) => ({ op: 'add', name: nameField(c.name), items: itemsField(c.items), ...addChargeFields(c) }),
    },
    claim: {
      fields: ['name', 'max', 'maxBytes', 'dueBy'],
      since: JOURNAL_SINCE,
      // Claims a round ahead of the date (apply.ts, CLAIM_AHEAD_MAX_MS) came with command version 9.
      fieldsSince: { dueBy: FAILURES_SINCE },
      decode: (c) => ({
        op: 'claim',
        name: nameField(c.name),
        max: countField(c.max, 'max', MAX_CLAIM_ITEMS),
        ...(c.maxBytes === undefined ? {} : { maxBytes: countField(c.maxBytes, 'maxBytes', MAX_BYTE_BUDGET) }),
        ...(c.dueBy === undefined ? {} : { dueBy: dateField(c.dueBy, 'dueBy') }),
      }),
    },
    extend: { fields: ['name', 'key', 'lease'], since: JOURNAL_SINCE, decode: (c) => ({ op: 'extend', ...leased(c) }) },
    done: {
      fields: ['name', 'key', 'lease', 'claim', 'claimBytes', 'result'],
      since: JOURNAL_SINCE,
      fieldsSince: { result: FAILURES_SINCE },
      decode: (c) => ({
        ...(c.result === undefined ? {} : { result: c.result }),
        op: 'done',
        ...leased(c),
        ...(c.claim === undefined ? {} : { claim: countField(c.claim, 'claim', MAX_CLAIM_ITEMS) }),
        ...(c.claimBytes === undefined ? {} : { claimBytes: countField(c.claimBytes, 'claimBytes', MAX_BYTE_BUDGET) }),
      }),
    },
    doneMany: {
      fields: ['name', 'items', 'claim', 'claimBytes', 'dueBy'],
      since: DONE_MANY_SINCE,
      fieldsSince: { dueBy: FAILURES_SINCE },
      decode: (c) => {
        // dueBy says which items the claim in the same entry takes: alone it would mean nothing.
        if (c.dueBy !== undefined && c.claim === undefined) throw new CommandError('dueBy goes with claim');
        return decodeDoneMany(c);
      },
    },
    release: {
      fields: ['name', 'key', 'lease', 'processAt', 'failure', 'error', 'unrecoverable'],
      since: JOURNAL_SINCE,
      fieldsSince: { failure: FAILURES_SINCE, error: FAILURES_SINCE, unrecoverable: FAILURES_SINCE },
      decode: (c) => ({
        op: 'release',
        ...leased(c),
        ...(c.processAt === undefined ? {} : { processAt: dateField(c.processAt, 'processAt') }),
        ...(c.failure === undefined ? {} : { failure: notAFailure(c.failure) }),
        ...(c.error === undefined ? {} : { error: errorTextField(c.error) }),
        ...(c.unrecoverable === undefined ? {} : { unrecoverable: trueField(c.unrecoverable, 'unrecoverable') }),
      }),
    },
    // Command version 9 (docs/journal.md): remove, pause and resume, drain, progress, the results' expiry.
    remove: { fields: ['name', 'key'], since: FAILURES_SINCE, decode: (c) => ({ op: 'remove', name: nameField(c.name), key: keyField(c.key) }) },
    pause: { fields: ['name', 'paused'], since: FAILURES_SINCE, decode: (c) => ({ op: 'pause', name: nameField(c.name), paused: boolOf(c.paused, 'paused') }) },
    drain: { fields: ['name', 'max'], since: FAILURES_SINCE, decode: (c) => ({ op: 'drain', name: nameField(c.name), max: countField(c.max, 'max', DRAIN_MAX) }) },
    progress: { fields: ['name', 'key', 'lease', 'progress'], since: FAILURES_SINCE, decode: (c) => ({ op: 'progress', ...leased(c), progress: c.progress ?? null }) },
    expireResults: { fields: ['name', 'max'], since: FAILURES_SINCE, decode: (c) => ({ op: 'expireResults', name: nameField(c.name), max: countField(c.max, 'max', 100_000) }) },
    // Repeatable jobs (command version 9): a tick carries its time, and apply refuses one at or before the schedule's last.
    schedule: { fields: ['name', 'schedule'], since: FAILURES_SINCE, decode: (c) => ({ op: 'schedule', name: nameField(c.name), schedule: scheduleField(c.schedule) }) },
    unschedule: { fields: ['name', 'id'], since: FAILURES_SINCE, decode: (c) => ({ op: 'unschedule', name: nameField(c.name), id: scheduleIdField(c.id) }) },
    tick: { fields: ['name', 'id', 'tick'], since: FAILURES_SINCE, decode: (c) => ({ op: 'tick', name: nameField(c.name), id: scheduleIdField(c.id), tick: dateField(c.tick, 'tick') }) },
    timeout: { fields: ['name', 'claims'], since: JOURNAL_SINCE, decode: (c) => ({ op: 'timeout', name: nameField(c.name), claims: claimsField(c.claims) }) },
    expire: { fields: ['name', 'max'], since: JOURNAL_SINCE, decode: (c) => ({ op: 'expire', name: nameField(c.name), max: countField(c.max, 'max', 100_000) }) },
    requeue: { fields: ['name', 'key'], since: JOURNAL_SINCE, decode: (c) => ({ op: 'requeue', name: nameField(c.name), key: keyField(c.key) }) },
    forget: { fields: ['name', 'key'], since: JOURNAL_SINCE, decode: (c) => ({ op: 'forget', name: nameField(c.name), key: keyField(c.key) }) },
    limits: { fields: ['maxJournals'], since: JOURNAL_SINCE, decode: (c) => ({ op: 'limits', maxJournals: countField(c.maxJournals, 'maxJournals', MAX_JOURNALS_CEILING) }) },
  },
  load: (db, snapshot) => JournalState.load(db, snapshot),
  plan: (command, ctx) => planJournal(command, ctx, ctx.states.of(journal)),
  // A drop deletes what it finds in the db (ctx.db); every other op reads through ctx.reads.
  goesAlone: (command) => command.op === 'drop',
  plugin: async () => (await import('./server.js')).plugin,
};
