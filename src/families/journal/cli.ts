// `vera journal ...`: the journal from the command line, one subcommand per op,
// each a client verb (arguments checked before connecting; --json for scripts).
import { runSubcommand } from '../../cli/verb-runner.js';
import { boolFlag, stringFlag, type FlagSpecs, type ParsedArgs } from '../../cli/args.js';
import { CLIENT_FLAGS, dataArg, print, type ClientCommand, type Context } from '../../cli/client-commands.js';
import { UsageError } from '../../cli/errors.js';
import type { CliIO } from '../../cli/io.js';
import { parseCount, parseDuration } from '../../cli/units.js';
import { JournalClient, type JobInfo, type JournalSettingsInput, type ScheduleInfo, type ScheduleInput } from './client.js';
import { parseCron } from './cron.js';
import { journalKeyProblem, journalNameProblem, parseScheduleFields, scheduleIdProblem } from './wire.js';

export const USAGE = `Usage: vera journal <subcommand> [flags]

Durable priority work queues (see docs/journal.md).

Subcommands:
  create NAME [--timeout-ms D] [--max-timeouts N] [--priority P] [--expires-in D] [--max-items N]
              [--retry-attempts N [--backoff fixed|exponential] [--backoff-delay D] [--backoff-max D] [--jitter PCT]]
              [--keep-results D] [--rate-max N --rate-window D]
  configure NAME [same flags as create; --no-retry, --no-rate-limit clear them]
  ls                          list journals with their counts
  show NAME                   settings and counts of one journal
  add NAME KEY DATA [--priority P] [--at MS|+D] [--expires MS|+D]
  claim NAME [--max N] [--wait D]
  extend NAME KEY LEASE
  done NAME KEY LEASE [--result JSON]
  release NAME KEY LEASE [--at MS|+D] [--not-failed] [--error TEXT] [--unrecoverable]
                              give it back; counts as a failure (flagged past maxTimeouts) unless --not-failed
  progress NAME KEY LEASE JSON  report the holder's progress (also extends the claim)
  get NAME KEY                one job: status, dates, counters, last error, lease
  items NAME [--status waiting|processing|flagged] [--after CURSOR] [--limit N]
                              a page of jobs of one status
  result NAME KEY             the result a done left, while kept
  remove NAME KEY             delete a waiting job, or cancel a processing one
  pause NAME / resume NAME    claims take nothing while paused; adds go on
  drain NAME                  delete every waiting job
  flagged NAME                items that timed out too often
  flags NAME [--after CURSOR] [--wait D]
                              flag events after a cursor (default: from now), waiting up to D for one
  events NAME [--after CURSOR] [--wait D] [--job KEY]
                              lifecycle events (added, claimed, progress, completed, failed, released, flagged, removed)
  schedule NAME ID (--every D | --cron 'M H DOM MON DOW' [--tz ZONE]) [--catch-up one|none]
              [--data JSON] [--priority P]
                              add or replace a schedule: one job (key ID@DATE) per tick, made by the leader
  schedules NAME              the journal's schedules, with their last and next ticks
  unschedule NAME ID          remove a schedule (the jobs it made stay)
  requeue NAME KEY            put a flagged item back, due now
  forget NAME KEY             delete a flagged item
  drop NAME                   delete the journal and all its items
  limits [--max-journals N]   the cluster-wide limit on journals (and set it)

Durations (D) are like 5000 (ms), 5s, 2m, 1h, 7d or 1h30m; dates are ms since the epoch, or +D from now.
Client flags: --server URL[,URL...], --json, --encoding E, --timeout MS, --ca FILE,
--token T or --user NAME (password: --password-file FILE or $VERA_PASSWORD), -h/--help`;

const SETTING_FLAGS: FlagSpecs = {
  'timeout-ms': { kind: 'string' },
  'max-timeouts': { kind: 'string' },
  priority: { kind: 'string' },
  'expires-in': { kind: 'string' },
  'max-items': { kind: 'string' },
  'retry-attempts': { kind: 'string' },
  backoff: { kind: 'string' },
  'backoff-delay': { kind: 'string' },
  'backoff-max': { kind: 'string' },
  jitter: { kind: 'string' },
  'keep-results': { kind: 'string' },
  'rate-max': { kind: 'string' },
  'rate-window': { kind: 'string' },
  'no-retry': { kind: 'boolean' },
  'no-rate-limit': { kind: 'boolean' },
};

function name(ctx: Context, position = 0): string {
  const value = ctx.args.positionals[position]!;
  const problem = journalNameProblem(value);
  if (problem !== null) throw new UsageError(problem);
  return value;
}

function key(ctx: Context, position: number): string {
  const value = ctx.args.positionals[position]!;
  const problem = journalKeyProblem(value);
  if (problem !== null) throw new UsageError(problem);
  return value;
}

function scheduleId(ctx: Context, position: number): string {
  const value = ctx.args.positionals[position]!;
  const problem = scheduleIdProblem(value);
  if (problem !== null) throw new UsageError(problem);
  return value;
}

function scheduleLine(s: ScheduleInfo): string {
  const when = s.everyMs !== undefined ? `every ${s.everyMs} ms` : `cron '${s.cron}' ${s.tz}`;
  const next = s.nextTick === null ? 'no next tick' : `next ${iso(s.nextTick)}`;
  return `${s.schedule}  ${when}  catch-up ${s.catchUp}  ${s.produced} made, ${s.skipped} skipped  ${next}`;
}

function lease(ctx: Context, position: number): number {
  return parseCount(ctx.args.positionals[position]!, 'LEASE');
}

function byteValue(text: string | undefined, what: string, max: number): number | undefined {
  if (text === undefined) return undefined;
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n > max) throw new UsageError(`${what} must be a whole number from 0 to ${max}, got ${JSON.stringify(text)}`);
  return n;
}

/** `1700000000000` (ms since the epoch) or `+5s` (from now). */
function dateFlag(args: ParsedArgs, flag: string): number | undefined {
  const text = stringFlag(args, flag);
  if (text === undefined) return undefined;
  if (text.startsWith('+')) return Date.now() + parseDuration(text.slice(1), `--${flag}`);
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n)) throw new UsageError(`--${flag} must be ms since the epoch or +DURATION, got ${JSON.stringify(text)}`);
  return n;
}

function settings(args: ParsedArgs): JournalSettingsInput {
  const out: Record<string, number> = {};
  const timeout = stringFlag(args, 'timeout-ms');
  if (timeout !== undefined) out.timeoutMs = parseDuration(timeout, '--timeout-ms');
  const maxTimeouts = byteValue(stringFlag(args, 'max-timeouts'), '--max-timeouts', 255);
  if (maxTimeouts !== undefined) out.maxTimeouts = maxTimeouts;
  const priority = byteValue(stringFlag(args, 'priority'), '--priority', 255);
  if (priority !== undefined) out.priority = priority;
  const expiresIn = stringFlag(args, 'expires-in');
  if (expiresIn !== undefined) out.expiresInMs = expiresIn === '0' ? 0 : parseDuration(expiresIn, '--expires-in');
  const maxItems = stringFlag(args, 'max-items');
  if (maxItems !== undefined) out.maxItems = parseCount(maxItems, '--max-items');
  return { ...out, ...policies(args) };
}

/** The retry policy, results' keeping and rate limit flags (command version 9). */
function policies(args: ParsedArgs): JournalSettingsInput {
  const out: { -readonly [K in keyof JournalSettingsInput]: JournalSettingsInput[K] } = {};
  const attempts = stringFlag(args, 'retry-attempts');
  const retryFlags = ['backoff', 'backoff-delay', 'backoff-max', 'jitter'].filter((f) => stringFlag(args, f) !== undefined);
  if (attempts === undefined && retryFlags.length > 0) throw new UsageError(`--${retryFlags[0]} goes with --retry-attempts`);
  if (boolFlag(args, 'no-retry')) {
    if (attempts !== undefined) throw new UsageError('--no-retry and --retry-attempts contradict each other');
    out.retry = null;
  }
  if (attempts !== undefined) {
    const backoff = stringFlag(args, 'backoff');
    if (backoff !== undefined && backoff !== 'fixed' && backoff !== 'exponential') throw new UsageError(`--backoff must be fixed or exponential, got ${JSON.stringify(backoff)}`);
    const delay = stringFlag(args, 'backoff-delay');
    const max = stringFlag(args, 'backoff-max');
    const jitter = byteValue(stringFlag(args, 'jitter'), '--jitter', 100);
    out.retry = {
      attempts: parseCount(attempts, '--retry-attempts'),
      ...(backoff === undefined ? {} : { backoff }),
      ...(delay === undefined ? {} : { delayMs: delay === '0' ? 0 : parseDuration(delay, '--backoff-delay') }),
      ...(max === undefined ? {} : { maxDelayMs: parseDuration(max, '--backoff-max') }),
      ...(jitter === undefined ? {} : { jitterPct: jitter }),
    };
  }
  const keep = stringFlag(args, 'keep-results');
  if (keep !== undefined) out.keepResultsMs = keep === '0' ? 0 : parseDuration(keep, '--keep-results');
  const rateMax = stringFlag(args, 'rate-max');
  const rateWindow = stringFlag(args, 'rate-window');
  if ((rateMax === undefined) !== (rateWindow === undefined)) throw new UsageError('--rate-max and --rate-window go together');
  if (boolFlag(args, 'no-rate-limit')) {
    if (rateMax !== undefined) throw new UsageError('--no-rate-limit and --rate-max contradict each other');
    out.rateLimit = null;
  }
  if (rateMax !== undefined) out.rateLimit = { max: parseCount(rateMax, '--rate-max'), windowMs: parseDuration(rateWindow!, '--rate-window') };
  return out;
}

function jobLines(j: JobInfo): string {
  const lines = [
    `${j.key}  ${j.status}  priority ${j.priority}  ${JSON.stringify(j.data)}`,
    `  inserted ${iso(j.insertedAt)}, due ${iso(j.processAt)}, expires ${j.expiresAt === 0 ? 'never' : iso(j.expiresAt)}`,
    `  timeouts ${j.timeouts}, failures ${j.failures}${j.lastError === undefined ? '' : `, last error: ${j.lastError}`}`,
  ];
  if (j.lease !== undefined) lines.push(`  lease ${j.lease}, started ${iso(j.startedAt!)}, times out ${iso(j.leaseExpiresAt!)}`);
  if (j.progress !== undefined) lines.push(`  progress ${JSON.stringify(j.progress)}`);
  if (j.flaggedAt !== undefined) lines.push(`  flagged ${iso(j.flaggedAt)}`);
  if (j.next !== undefined) lines.push(`  a newer version waits for this processing to end: ${JSON.stringify(j.next.data)}`);
  return lines.join('\n');
}

const iso = (ms: number): string => new Date(ms).toISOString();

const ok = (ctx: Context, what: string) => () => print(ctx, {}, () => what);

/** `--after N` and `--wait D` of a feed read (flags, events): where to start, and how long to wait for more. */
function cursorFlags(ctx: Context): { readonly after?: number; readonly waitMs: number } {
  const afterText = stringFlag(ctx.args, 'after');
  const wait = stringFlag(ctx.args, 'wait');
  const waitMs = wait === undefined || wait === '0' ? 0 : parseDuration(wait, '--wait');
  return afterText === undefined ? { waitMs } : { after: parseCount(afterText, '--after'), waitMs };
}

const COMMANDS: Readonly<Record<string, ClientCommand>> = {
  create: {
    flags: { ...CLIENT_FLAGS, ...SETTING_FLAGS },
    positionals: ['NAME'],
    prepare: (ctx) => {
      const n = name(ctx);
      const s = settings(ctx.args);
      return async (client) => {
        await new JournalClient(client).create(n, s);
        ok(ctx, `created journal ${n}`)();
      };
    },
  },
  configure: {
    flags: { ...CLIENT_FLAGS, ...SETTING_FLAGS },
    positionals: ['NAME'],
    prepare: (ctx) => {
      const n = name(ctx);
      const s = settings(ctx.args);
      return async (client) => {
        await new JournalClient(client).configure(n, s);
        ok(ctx, `configured journal ${n}`)();
      };
    },
  },
  ls: {
    flags: CLIENT_FLAGS,
    positionals: [],
    prepare: (ctx) => async (client) => {
      const journals = await new JournalClient(client).list();
      print(ctx, journals, () =>
        journals.length === 0 ? '(no journals)' : journals.map((j) => `${j.name}  waiting ${j.counts.waiting}  processing ${j.counts.processing}  flagged ${j.counts.flagged}`).join('\n'),
      );
    },
  },
  show: {
    flags: CLIENT_FLAGS,
    positionals: ['NAME'],
    prepare: (ctx) => {
      const n = name(ctx);
      return async (client) => {
        const j = await new JournalClient(client).show(n);
        print(ctx, j, () =>
          [
            `journal ${j.name}`,
            `  timeout ${j.settings.timeoutMs} ms, flagged after ${j.settings.maxTimeouts} timeouts, default priority ${j.settings.priority}`,
            `  expires ${j.settings.expiresInMs === 0 ? 'never' : `${j.settings.expiresInMs} ms after adding`}, at most ${j.settings.maxItems} items`,
            `  waiting ${j.counts.waiting}, processing ${j.counts.processing}, flagged ${j.counts.flagged}`,
          ].join('\n'),
        );
      };
    },
  },
  add: {
    flags: { ...CLIENT_FLAGS, priority: { kind: 'string' }, at: { kind: 'string' }, expires: { kind: 'string' }, string: { kind: 'boolean' } },
    positionals: ['NAME', 'KEY', 'DATA'],
    prepare: (ctx) => {
      const n = name(ctx);
      const k = key(ctx, 1);
      const data = dataArg(ctx, ctx.args.positionals[2]!);
      const priority = byteValue(stringFlag(ctx.args, 'priority'), '--priority', 255);
      const processAt = dateFlag(ctx.args, 'at');
      const expiresAt = dateFlag(ctx.args, 'expires');
      return async (client) => {
        const r = await new JournalClient(client).add(n, [
          { key: k, data, ...(priority === undefined ? {} : { priority }), ...(processAt === undefined ? {} : { processAt }), ...(expiresAt === undefined ? {} : { expiresAt }) },
        ]);
        print(ctx, r, () => `${r.inserted > 0 ? 'added' : r.merged > 0 ? 'merged into the waiting' : 'kept for after the processing of the'} item ${k}`);
      };
    },
  },
  claim: {
    flags: { ...CLIENT_FLAGS, max: { kind: 'string' }, wait: { kind: 'string' } },
    positionals: ['NAME'],
    prepare: (ctx) => {
      const n = name(ctx);
      const max = parseCount(stringFlag(ctx.args, 'max') ?? '1', '--max');
      const wait = stringFlag(ctx.args, 'wait');
      const waitMs = wait === undefined || wait === '0' ? 0 : parseDuration(wait, '--wait');
      return async (client) => {
        const c = await new JournalClient(client).claim(n, { max, waitMs });
        print(ctx, c, () => (c.items.length === 0 ? 'nothing due' : [`lease ${c.lease}`, ...c.items.map((i) => `  ${i.key}  ${JSON.stringify(i.data)}  (priority ${i.priority}, timeouts ${i.timeouts})`)].join('\n')));
      };
    },
  },
  flags: {
    flags: { ...CLIENT_FLAGS, after: { kind: 'string' }, wait: { kind: 'string' } },
    positionals: ['NAME'],
    prepare: (ctx) => {
      const n = name(ctx);
      const cursor = cursorFlags(ctx);
      return async (client) => {
        const page = await new JournalClient(client).flags(n, cursor);
        print(ctx, page, () =>
          [
            ...(page.missed ? ['(flags after this cursor may have been missed here: see `vera journal flagged`)'] : []),
            ...page.events.map((e) => `${e.key}  flagged by entry ${e.index}`),
            `next: --after ${page.next}`,
          ].join('\n'),
        );
      };
    },
  },
  events: {
    // --job, not --key: --key names the TLS client key file.
    flags: { ...CLIENT_FLAGS, after: { kind: 'string' }, wait: { kind: 'string' }, job: { kind: 'string' } },
    positionals: ['NAME'],
    prepare: (ctx) => {
      const n = name(ctx);
      const cursor = cursorFlags(ctx);
      const k = stringFlag(ctx.args, 'job');
      const keyProblem = k === undefined ? null : journalKeyProblem(k);
      if (keyProblem !== null) throw new UsageError(`--job: ${keyProblem}`);
      return async (client) => {
        const page = await new JournalClient(client).events(n, { ...cursor, ...(k === undefined ? {} : { key: k }) });
        print(ctx, page, () =>
          [
            ...(page.missed ? ['(events after this cursor may have been missed here)'] : []),
            ...page.events.map((e) => `${e.index}  ${e.type}  ${e.key}`),
            `next: --after ${page.next}`,
          ].join('\n'),
        );
      };
    },
  },
  ...Object.fromEntries(
    (['extend', 'done'] as const).map((op) => [
      op,
      {
        flags: op === 'done' ? { ...CLIENT_FLAGS, result: { kind: 'string' } } : CLIENT_FLAGS,
        positionals: ['NAME', 'KEY', 'LEASE'],
        prepare: (ctx: Context) => {
          const [n, k, l] = [name(ctx), key(ctx, 1), lease(ctx, 2)];
          const resultText = stringFlag(ctx.args, 'result');
          const result = resultText === undefined ? undefined : dataArg(ctx, resultText);
          return async (client) => {
            if (op === 'done') await new JournalClient(client).done(n, k, l, result);
            else await new JournalClient(client).extend(n, k, l);
            ok(ctx, `${op === 'done' ? 'done with' : 'extended the claim on'} ${k}`)();
          };
        },
      } satisfies ClientCommand,
    ]),
  ),
  progress: {
    flags: CLIENT_FLAGS,
    positionals: ['NAME', 'KEY', 'LEASE', 'JSON'],
    prepare: (ctx) => {
      const [n, k, l] = [name(ctx), key(ctx, 1), lease(ctx, 2)];
      const progress = dataArg(ctx, ctx.args.positionals[3]!);
      return async (client) => {
        await new JournalClient(client).progress(n, k, l, progress);
        ok(ctx, `reported the progress of ${k}`)();
      };
    },
  },
  get: {
    flags: CLIENT_FLAGS,
    positionals: ['NAME', 'KEY'],
    prepare: (ctx) => {
      const [n, k] = [name(ctx), key(ctx, 1)];
      return async (client) => {
        const j = await new JournalClient(client).get(n, k);
        print(ctx, j, () => jobLines(j));
      };
    },
  },
  items: {
    flags: { ...CLIENT_FLAGS, status: { kind: 'string' }, after: { kind: 'string' }, limit: { kind: 'string' } },
    positionals: ['NAME'],
    prepare: (ctx) => {
      const n = name(ctx);
      const status = stringFlag(ctx.args, 'status') ?? 'waiting';
      if (status !== 'waiting' && status !== 'processing' && status !== 'flagged') throw new UsageError(`--status must be waiting, processing or flagged, got ${JSON.stringify(status)}`);
      const after = stringFlag(ctx.args, 'after');
      const limitText = stringFlag(ctx.args, 'limit');
      const limit = limitText === undefined ? undefined : parseCount(limitText, '--limit');
      return async (client) => {
        const page = await new JournalClient(client).items(n, status, { ...(after === undefined ? {} : { after }), ...(limit === undefined ? {} : { limit }) });
        print(ctx, page, () => [...(page.items.length === 0 ? [`(no ${status} jobs here)`] : page.items.map(jobLines)), ...(page.next === null ? [] : [`next: --after ${page.next}`])].join('\n'));
      };
    },
  },
  result: {
    flags: CLIENT_FLAGS,
    positionals: ['NAME', 'KEY'],
    prepare: (ctx) => {
      const [n, k] = [name(ctx), key(ctx, 1)];
      return async (client) => {
        const r = await new JournalClient(client).result(n, k);
        print(ctx, r, () => `${JSON.stringify(r.result)}  (done ${iso(r.doneAt)}, kept until ${iso(r.keptUntil)})`);
      };
    },
  },
  remove: {
    flags: CLIENT_FLAGS,
    positionals: ['NAME', 'KEY'],
    prepare: (ctx) => {
      const [n, k] = [name(ctx), key(ctx, 1)];
      return async (client) => {
        const r = await new JournalClient(client).remove(n, k);
        print(ctx, r, () => (r.status === 'removed' ? `removed ${k}` : `cancelled ${k} (it was processing; its holder is told on its next call)`));
      };
    },
  },
  ...Object.fromEntries(
    (['pause', 'resume', 'drain'] as const).map((op) => [
      op,
      {
        flags: CLIENT_FLAGS,
        positionals: ['NAME'],
        prepare: (ctx: Context) => {
          const n = name(ctx);
          return async (client) => {
            const journals = new JournalClient(client);
            if (op === 'drain') {
              const r = await journals.drain(n);
              return print(ctx, r, () => `drained ${n}: ${r.removed} waiting jobs removed`);
            }
            await journals[op](n);
            ok(ctx, `${op === 'pause' ? 'paused' : 'resumed'} journal ${n}`)();
          };
        },
      } satisfies ClientCommand,
    ]),
  ),
  release: {
    flags: { ...CLIENT_FLAGS, at: { kind: 'string' }, 'not-failed': { kind: 'boolean' }, error: { kind: 'string' }, unrecoverable: { kind: 'boolean' } },
    positionals: ['NAME', 'KEY', 'LEASE'],
    prepare: (ctx) => {
      const [n, k, l] = [name(ctx), key(ctx, 1), lease(ctx, 2)];
      const processAt = dateFlag(ctx.args, 'at');
      const failure = !boolFlag(ctx.args, 'not-failed');
      const error = stringFlag(ctx.args, 'error');
      const unrecoverable = boolFlag(ctx.args, 'unrecoverable');
      if (!failure && (error !== undefined || unrecoverable)) throw new UsageError('--not-failed takes no --error or --unrecoverable');
      return async (client) => {
        const { flagged } = await new JournalClient(client).release(n, k, l, processAt, { failure, ...(error === undefined ? {} : { error }), ...(unrecoverable ? { unrecoverable } : {}) });
        print(ctx, { flagged }, () => (flagged ? `released ${k}: flagged (too many failures)` : `released ${k}`));
      };
    },
  },
  flagged: {
    flags: CLIENT_FLAGS,
    positionals: ['NAME'],
    prepare: (ctx) => {
      const n = name(ctx);
      return async (client) => {
        const items = await new JournalClient(client).flagged(n);
        print(ctx, items, () => (items.length === 0 ? '(none flagged)' : items.map((i) => `${i.key}  ${JSON.stringify(i.data)}  timeouts ${i.timeouts}, flagged at ${new Date(i.flaggedAt).toISOString()}`).join('\n')));
      };
    },
  },
  ...Object.fromEntries(
    (['requeue', 'forget'] as const).map((op) => [
      op,
      {
        flags: CLIENT_FLAGS,
        positionals: ['NAME', 'KEY'],
        prepare: (ctx: Context) => {
          const [n, k] = [name(ctx), key(ctx, 1)];
          return async (client) => {
            await new JournalClient(client)[op](n, k);
            ok(ctx, `${op === 'requeue' ? 'requeued' : 'forgot'} ${k}`)();
          };
        },
      } satisfies ClientCommand,
    ]),
  ),
  schedule: {
    flags: { ...CLIENT_FLAGS, every: { kind: 'string' }, cron: { kind: 'string' }, tz: { kind: 'string' }, 'catch-up': { kind: 'string' }, data: { kind: 'string' }, priority: { kind: 'string' } },
    positionals: ['NAME', 'ID'],
    prepare: (ctx) => {
      const [n, id] = [name(ctx), scheduleId(ctx, 1)];
      const every = stringFlag(ctx.args, 'every');
      const data = stringFlag(ctx.args, 'data');
      const priority = byteValue(stringFlag(ctx.args, 'priority'), '--priority', 255);
      const [cron, tz, catchUp] = [stringFlag(ctx.args, 'cron'), stringFlag(ctx.args, 'tz'), stringFlag(ctx.args, 'catch-up')];
      const input: Record<string, unknown> = {
        ...(every === undefined ? {} : { everyMs: parseDuration(every, '--every') }),
        ...(cron === undefined ? {} : { cron }),
        ...(tz === undefined ? {} : { tz }),
        ...(catchUp === undefined ? {} : { catchUp }),
        ...(data === undefined ? {} : { data: dataArg(ctx, data) }),
        ...(priority === undefined ? {} : { priority }),
      };
      // Checked before connecting, as the server checks it (the zone's name aside: the server knows its zones).
      const parsed = parseScheduleFields(id, input);
      const problem = typeof parsed === 'string' ? parsed : cron === undefined ? null : parseCron(cron);
      if (typeof problem === 'string') throw new UsageError(problem.replace('everyMs', '--every').replace(/^cron /, '--cron: ').replace('catchUp', '--catch-up'));
      return async (client) => {
        const r = await new JournalClient(client).schedule(n, id, input as ScheduleInput);
        print(ctx, r, () => `${r.replaced ? 'replaced' : 'added'} schedule ${id} of ${n}; next tick ${iso(r.nextTick)}`);
      };
    },
  },
  schedules: {
    flags: CLIENT_FLAGS,
    positionals: ['NAME'],
    prepare: (ctx) => {
      const n = name(ctx);
      return async (client) => {
        const list = await new JournalClient(client).schedules(n);
        print(ctx, { schedules: list }, () => (list.length === 0 ? `(no schedules in ${n})` : list.map(scheduleLine).join('\n')));
      };
    },
  },
  unschedule: {
    flags: CLIENT_FLAGS,
    positionals: ['NAME', 'ID'],
    prepare: (ctx) => {
      const [n, id] = [name(ctx), scheduleId(ctx, 1)];
      return async (client) => {
        await new JournalClient(client).unschedule(n, id);
        ok(ctx, `removed schedule ${id} of ${n}`)();
      };
    },
  },
  limits: {
    flags: { ...CLIENT_FLAGS, 'max-journals': { kind: 'string' } },
    positionals: [],
    prepare: (ctx) => {
      const text = stringFlag(ctx.args, 'max-journals');
      const maxJournals = text === undefined ? undefined : parseCount(text, '--max-journals');
      return async (client) => {
        const limits = await new JournalClient(client).limits(maxJournals === undefined ? {} : { maxJournals });
        print(ctx, limits, () => `${limits.journals} journals, at most ${limits.maxJournals}`);
      };
    },
  },
  drop: {
    flags: CLIENT_FLAGS,
    positionals: ['NAME'],
    prepare: (ctx) => {
      const n = name(ctx);
      return async (client) => {
        await new JournalClient(client).drop(n);
        ok(ctx, `dropped journal ${n}`)();
      };
    },
  },
};

export function run(argv: readonly string[], io: CliIO): Promise<number> {
  return runSubcommand('journal', USAGE, COMMANDS, argv, io);
}
