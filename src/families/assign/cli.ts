// `vera assign ...`: node assignment from the command line, one subcommand per
// operation, each a client verb (arguments checked before connecting; --json for scripts).
import { parseArgs, boolFlag, stringFlag, type FlagSpecs, type ParsedArgs } from '../../cli/args.js';
import { CLIENT_FLAGS, print, runClientCommand, type ClientCommand, type Context } from '../../cli/client-commands.js';
import { EXIT, UsageError } from '../../cli/errors.js';
import type { CliIO } from '../../cli/io.js';
import { parseCount, parseDuration } from '../../cli/units.js';
import { AssignClient, type Assignment, type NodeInfo, type NodeInput, type PurgeJob } from './client.js';
import { JournalClient } from '../journal/client.js';
import { journalNameProblem } from '../journal/wire.js';
import { MAX_JOBS_PER_CLAIM, runPurgeWorker, type PurgeWorkerReport } from './client-purge-worker.js';
import { runEventsWorker } from './client-events-worker.js';
import { csvDump, importTables } from './import-dump.js';
import { sqlDump, type SqlDialect } from './import-sql.js';
import { clientStateProblem, eventIdProblem, EVENT_KINDS, MAX_GENERATION, nameProblem, serviceNameProblem, type AccountEventKind } from './wire.js';

export const USAGE = `Usage: vera assign <subcommand> [flags]

Node assignment: Tokenserver's user-to-storage-node database (see docs/assignment.md).

Subcommands:
  service NAME [--pattern P] [--release-rate R] [--new-users yes|no] [--top-n N]
                              create a service or change its settings
  services                    list services
  node add SERVICE NODE --capacity N [--available N] [--downed] [--backoff N]
  node set SERVICE NODE [--capacity N] [--available N] [--downed yes|no] [--backoff N]
  node rm SERVICE NODE        down the node, move its users off, remove it
  node ls SERVICE             nodes with load, capacity and available slots
  node users SERVICE NODE [--after UID] [--limit N]
                              one page of the users current on the node
  drain SERVICE NODE [--rate N] [--batch N]
                              stop new users on the node and move its users off, N per second
                              (default 100), with progress; it stays up. --batch: the most a step
                              replaces (default 100); steps start at 25 and grow while quick
  user SERVICE EMAIL [--generation N] [--keys-changed-at N] [--client-state HEX]
                              get or create the user's assignment (Tokenserver's request)
  lookup SERVICE EMAIL        the user's records, changing nothing
  place SERVICE EMAIL NODE    put the user on that node (created there if unknown)
  retire EMAIL [--service S]  retire the user (every service unless --service)
  decommission SERVICE NODE [--uids 1,2,...]
                              replace the node's users (or those uids); they move on their next request
  purge SERVICE [--grace D] [--max N] [--force] [--dry-run] [--journal NAME] [--after CURSOR]
        [--until-done] [--uid-min N] [--uid-max N] [--override-node NODE]
                              delete one batch of records replaced longer ago than D (default 7d);
                              --until-done: batch after batch until every record due was looked at
  purge-job start SERVICE [--grace D] [--max N] [--force] [--journal NAME] [--uid-min N]
        [--uid-max N] [--override-node NODE]
  purge-job stop|status SERVICE
                              a purge the leader runs until done, a batch per step (it goes on
                              across leader changes); stop it, or see its progress
  events delete|passwordChange|reset EMAIL [--generation N] [--event-id ID] [--queue JOURNAL]
                              apply an account event (once per --event-id), or queue it in a journal
  events-worker JOURNAL [--once] [--max N] [--max-events N]
                              apply the queued account events, each once per id
  count SERVICE [--at MS]     users assigned at a time (default now)
  import --services CSV --nodes CSV --users CSV [--batch N] [--no-check]
  import --sql DUMP [--dialect mysql|postgres] [--batch N] [--no-check]
                              import a Tokenserver database (its three tables as CSV with headers,
                              or a SQL dump of their INSERTs), checked whole first, uids kept,
                              then check every user resolves as in the dump
  purge-worker JOURNAL [--once] [--max N] [--max-jobs N] [--request-timeout D]
                              send each purged record's storage node its DELETE, from the
                              clean-up jobs purge --journal queued; --once stops when none is due

Durations (D) are like 5000 (ms), 5s, 2m, 1h, 7d or 1h30m.
Client flags: --server URL[,URL...], --json, --encoding E, --timeout MS, --ca FILE,
--token T or --user NAME (password: --password-file FILE or $VERA_PASSWORD), -h/--help`;

function checked(value: string, problem: string | null): string {
  if (problem !== null) throw new UsageError(problem);
  return value;
}

const service = (ctx: Context, at: number): string => checked(ctx.args.positionals[at]!, serviceNameProblem(ctx.args.positionals[at]));
const node = (ctx: Context, at: number): string => checked(ctx.args.positionals[at]!, nameProblem(ctx.args.positionals[at], 'node'));
const email = (ctx: Context, at: number): string => checked(ctx.args.positionals[at]!, nameProblem(ctx.args.positionals[at], 'email'));

function count(args: ParsedArgs, flag: string): number | undefined {
  const text = stringFlag(args, flag);
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text))) throw new UsageError(`--${flag} must be a whole number, got ${JSON.stringify(text)}`);
  return Number(text);
}

/** Fields that are present (an option object never carries `undefined`). */
function present(fields: Readonly<Record<string, number | undefined>>): Record<string, number> {
  return Object.fromEntries(Object.entries(fields).filter((e): e is [string, number] => e[1] !== undefined));
}

function yesNo(args: ParsedArgs, flag: string): boolean | undefined {
  const text = stringFlag(args, flag);
  if (text === undefined) return undefined;
  if (text !== 'yes' && text !== 'no') throw new UsageError(`--${flag} must be yes or no, got ${JSON.stringify(text)}`);
  return text === 'yes';
}

function describeAssignment(a: Assignment): string {
  return [
    `uid ${a.uid} on ${a.node}${a.created ? ' (new user)' : a.allocated ? ' (moved to a new node)' : ''}`,
    `  endpoint ${a.endpoint}`,
    `  generation ${a.generation}, keys changed at ${a.keysChangedAt}, client state ${a.clientState === '' ? '(none)' : a.clientState}`,
    `  old client states ${a.oldClientStates.length === 0 ? '(none)' : a.oldClientStates.join(', ')}; first seen ${new Date(a.firstSeenAt).toISOString()}`,
  ].join('\n');
}

/** What becomes of the user's newest record: a retired user never moves again (every request is refused). */
function currentNote(r: { readonly generation: number; readonly replacedAt: number }): string {
  if (r.generation >= MAX_GENERATION) return ' (retired: every request is refused)';
  return r.replacedAt !== 0 ? ' (replaced: moves to a node on its next request)' : '';
}

function describeNode(n: NodeInfo): string {
  return `${n.node}  load ${n.load}/${n.capacity}  available ${n.available}${n.downed ? '  DOWNED' : ''}${n.backoff !== 0 ? `  backoff ${n.backoff}` : ''}`;
}

const NODE_FLAGS: FlagSpecs = { ...CLIENT_FLAGS, capacity: { kind: 'string' }, available: { kind: 'string' }, backoff: { kind: 'string' } };

function nodeInput(args: ParsedArgs, downed: boolean | undefined): NodeInput {
  const out: { capacity?: number; available?: number; downed?: boolean; backoff?: number } = {};
  const capacity = count(args, 'capacity');
  if (capacity !== undefined) out.capacity = capacity;
  const available = count(args, 'available');
  if (available !== undefined) out.available = available;
  const backoff = count(args, 'backoff');
  if (backoff !== undefined) out.backoff = backoff;
  if (downed !== undefined) out.downed = downed;
  return out;
}

const NODE_COMMANDS: Readonly<Record<string, ClientCommand>> = {
  add: {
    flags: { ...NODE_FLAGS, downed: { kind: 'boolean' } },
    positionals: ['SERVICE', 'NODE'],
    prepare: (ctx) => {
      const [s, n] = [service(ctx, 0), node(ctx, 1)];
      const input = nodeInput(ctx.args, boolFlag(ctx.args, 'downed'));
      if (input.capacity === undefined) throw new UsageError('--capacity is required');
      const capacity = input.capacity;
      return async (client) => {
        await new AssignClient(client).addNode(s, n, { ...input, capacity });
        print(ctx, {}, () => `added ${n} to ${s}`);
      };
    },
  },
  set: {
    flags: { ...NODE_FLAGS, downed: { kind: 'string' } },
    positionals: ['SERVICE', 'NODE'],
    prepare: (ctx) => {
      const [s, n] = [service(ctx, 0), node(ctx, 1)];
      const input = nodeInput(ctx.args, yesNo(ctx.args, 'downed'));
      if (Object.keys(input).length === 0) throw new UsageError('nothing to change: give --capacity, --available, --downed or --backoff');
      return async (client) => {
        await new AssignClient(client).updateNode(s, n, input);
        print(ctx, {}, () => `updated ${n}`);
      };
    },
  },
  rm: {
    flags: CLIENT_FLAGS,
    positionals: ['SERVICE', 'NODE'],
    prepare: (ctx) => {
      const [s, n] = [service(ctx, 0), node(ctx, 1)];
      return async (client) => {
        const r = await new AssignClient(client).removeNode(s, n);
        print(ctx, r, () => `removed ${n} (${r.replaced} users will move on their next request)`);
      };
    },
  },
  users: {
    flags: { ...CLIENT_FLAGS, after: { kind: 'string' }, limit: { kind: 'string' } },
    positionals: ['SERVICE', 'NODE'],
    prepare: (ctx) => {
      const [s, n] = [service(ctx, 0), node(ctx, 1)];
      const after = count(ctx.args, 'after');
      const limit = count(ctx.args, 'limit');
      if (limit !== undefined && (limit < 1 || limit > 1000)) throw new UsageError('--limit must be 1-1000');
      return async (client) => {
        const page = await new AssignClient(client).nodeUsers(s, n, { ...(after === undefined ? {} : { after }), ...(limit === undefined ? {} : { limit }) });
        print(ctx, page, () =>
          [
            ...(page.users.length === 0 ? ['(no users)'] : page.users.map((u) => `uid ${u.uid}  ${u.email}  generation ${u.generation}  state ${u.clientState || '-'}`)),
            ...(page.next === null ? [] : [`more: --after ${page.next}`]),
          ].join('\n'),
        );
      };
    },
  },
  ls: {
    flags: CLIENT_FLAGS,
    positionals: ['SERVICE'],
    prepare: (ctx) => {
      const s = service(ctx, 0);
      return async (client) => {
        const nodes = await new AssignClient(client).nodes(s);
        print(ctx, nodes, () => (nodes.length === 0 ? '(no nodes)' : nodes.map(describeNode).join('\n')));
      };
    },
  },
};

function describeReport(r: PurgeWorkerReport): string {
  return `deleted ${r.deleted}, already gone ${r.gone}, failed ${r.failed} (released to retry), not a job ${r.invalid}`;
}

const PURGE_WORKER: ClientCommand = {
  flags: { ...CLIENT_FLAGS, once: { kind: 'boolean' }, max: { kind: 'string' }, 'max-jobs': { kind: 'string' }, 'request-timeout': { kind: 'string' } },
  positionals: ['JOURNAL'],
  prepare: (ctx) => {
    const journal = ctx.args.positionals[0]!;
    if (journalNameProblem(journal) !== null) throw new UsageError(`JOURNAL must be a journal's name, got ${JSON.stringify(journal)}`);
    const max = count(ctx.args, 'max');
    if (max !== undefined && (max < 1 || max > MAX_JOBS_PER_CLAIM)) throw new UsageError(`--max must be 1-${MAX_JOBS_PER_CLAIM}`);
    const maxJobs = count(ctx.args, 'max-jobs');
    const timeout = stringFlag(ctx.args, 'request-timeout');
    const once = boolFlag(ctx.args, 'once');
    return async (client) => {
      // Without --once it runs until Ctrl-C or SIGTERM (the CLI's stop signal); the jobs in hand are finished first.
      const report = await runPurgeWorker(new JournalClient(client), journal, {
        untilEmpty: once,
        signal: ctx.io.stop,
        ...(max === undefined ? {} : { max }),
        ...(maxJobs === undefined ? {} : { maxJobs }),
        ...(timeout === undefined ? {} : { requestTimeoutMs: parseDuration(timeout, '--request-timeout') }),
        onJob: (job, outcome, detail) => {
          if (!ctx.json) ctx.io.stdout(`${outcome} ${job === null ? detail : `uid ${job.uid} ${job.endpoint} (${detail})`}\n`);
        },
      });
      print(ctx, report, () => describeReport(report));
    };
  },
};

const DRAIN: ClientCommand = {
  flags: { ...CLIENT_FLAGS, rate: { kind: 'string' }, batch: { kind: 'string' } },
  positionals: ['SERVICE', 'NODE'],
  prepare: (ctx) => {
    const [s, n] = [service(ctx, 0), node(ctx, 1)];
    const rate = count(ctx.args, 'rate');
    const batch = count(ctx.args, 'batch');
    if (rate !== undefined && rate < 1) throw new UsageError('--rate must be at least 1 (users per second)');
    if (batch !== undefined && (batch < 1 || batch > 1000)) throw new UsageError('--batch must be 1-1000');
    return async (client) => {
      const r = await new AssignClient(client).drain(s, n, {
        signal: ctx.io.stop,
        ...(rate === undefined ? {} : { ratePerSecond: rate }),
        ...(batch === undefined ? {} : { batch }),
        onBatch: (p) => {
          if (!ctx.json) ctx.io.stdout(`batch ${p.batches}: ${p.replaced} users replaced so far, ${p.load} still on ${n}\n`);
        },
      });
      print(ctx, r, () => `${r.done ? 'drained' : 'stopped draining'} ${n}: ${r.replaced} users replaced in ${r.batches} batches; they move on their next request. ${n} takes no new users until: vera assign node set ${s} ${n} --backoff 0`);
    };
  },
};

const IMPORT: ClientCommand = {
  flags: { ...CLIENT_FLAGS, services: { kind: 'string' }, nodes: { kind: 'string' }, users: { kind: 'string' }, sql: { kind: 'string' }, dialect: { kind: 'string' }, batch: { kind: 'string' }, 'no-check': { kind: 'boolean' } },
  positionals: [],
  prepare: (ctx) => {
    const files = { services: stringFlag(ctx.args, 'services'), nodes: stringFlag(ctx.args, 'nodes'), users: stringFlag(ctx.args, 'users') };
    const sql = stringFlag(ctx.args, 'sql');
    const dialect = stringFlag(ctx.args, 'dialect');
    const csv = files.services !== undefined || files.nodes !== undefined || files.users !== undefined;
    if (sql !== undefined && csv) throw new UsageError('give --sql (a dump of the three tables) or --services, --nodes and --users (CSV), not both');
    if (sql === undefined && (files.services === undefined || files.nodes === undefined || files.users === undefined)) throw new UsageError('give --services, --nodes and --users: the CSV files of the three tables (or --sql DUMP)');
    if (dialect !== undefined && (sql === undefined || (dialect !== 'mysql' && dialect !== 'postgres'))) throw new UsageError('--dialect is mysql or postgres, with --sql');
    const read = sql !== undefined ? sqlDump(sql, (dialect as SqlDialect | undefined) ?? null) : csvDump(files as { services: string; nodes: string; users: string });
    const batch = count(ctx.args, 'batch');
    if (batch !== undefined && (batch < 1 || batch > 1000)) throw new UsageError('--batch must be 1-1000');
    const check = !boolFlag(ctx.args, 'no-check');
    return async (client) => {
      const r = await importTables(new AssignClient(client), read, {
        check,
        ...(batch === undefined ? {} : { batch }),
        onProgress: (p) => {
          if (!ctx.json && (p.phase === 'users' || p.phase === 'read' || (p.phase === 'check' && p.done % 1024 === 0))) ctx.io.stdout(`${p.phase}: ${p.detail}\n`);
        },
      });
      print(ctx, r, () =>
        [
          `imported ${r.services} services, ${r.nodes} nodes, ${r.imported} user records in ${r.batches} batches (${r.present} already there${r.repaired > 0 ? `, ${r.repaired} duplicate current records replaced` : ''})`,
          check ? (r.mismatched === 0 ? `checked ${r.checked} users: each resolves to the dump's uid and node` : `checked ${r.checked} users: ${r.mismatched} do not resolve as in the dump`) : 'not checked (--no-check)',
          ...r.mismatches.map((m) => `  ${m}`),
        ].join('\n'),
      );
      if (r.mismatched > 0) throw new Error(`${r.mismatched} users do not resolve as in the dump`);
    };
  },
};

function describePurgeJob(j: PurgeJob): string {
  const scope = [
    `grace ${j.graceMs} ms`,
    `batches of ${j.max}`,
    ...(j.force ? ['forced'] : []),
    ...(j.uidMin === undefined && j.uidMax === undefined ? [] : [`uids ${j.uidMin ?? 1}-${j.uidMax ?? 'end'}`]),
    ...(j.journal === undefined ? [] : [`clean-ups into ${j.journal}`]),
    ...(j.overrideNode === undefined ? [] : [`override node ${j.overrideNode}`]),
  ];
  return [
    `purge job ${j.seq} of ${j.service}: ${j.state}${j.error === undefined ? '' : ` (${j.error})`}`,
    `  ${scope.join(', ')}`,
    `  ${j.batches} batches: ${j.purged} purged, ${j.skipped} on downed nodes left${j.overrideNode === undefined ? '' : `, ${j.overridden} sent to the override node, ${j.activeData} active data kept`}`,
    `  started ${new Date(j.startedAt).toISOString()}${j.endedAt === null ? '' : `, ended ${new Date(j.endedAt).toISOString()}`}`,
  ].join('\n');
}

const PURGE_JOB: ClientCommand = {
  flags: {
    ...CLIENT_FLAGS,
    grace: { kind: 'string' },
    max: { kind: 'string' },
    force: { kind: 'boolean' },
    journal: { kind: 'string' },
    'uid-min': { kind: 'string' },
    'uid-max': { kind: 'string' },
    'override-node': { kind: 'string' },
  },
  positionals: ['start|stop|status', 'SERVICE'],
  prepare: (ctx) => {
    const action = ctx.args.positionals[0];
    const s = service(ctx, 1);
    if (action === 'stop' || action === 'status') {
      for (const flag of ['grace', 'max', 'force', 'journal', 'uid-min', 'uid-max', 'override-node']) {
        if (ctx.args.flags.has(flag)) throw new UsageError(`--${flag} is for purge-job start`);
      }
      return async (client) => {
        const a = new AssignClient(client);
        const j = action === 'stop' ? await a.purgeStop(s) : await a.purgeStatus(s);
        print(ctx, j, () => describePurgeJob(j));
      };
    }
    if (action !== 'start') throw new UsageError('vera assign purge-job needs start, stop or status');
    const grace = stringFlag(ctx.args, 'grace');
    const journal = stringFlag(ctx.args, 'journal');
    const overrideNode = stringFlag(ctx.args, 'override-node');
    const options = {
      ...(grace === undefined ? {} : { graceMs: grace === '0' ? 0 : parseDuration(grace, '--grace') }),
      ...present({ max: count(ctx.args, 'max'), uidMin: count(ctx.args, 'uid-min'), uidMax: count(ctx.args, 'uid-max') }),
      force: boolFlag(ctx.args, 'force'),
      ...(journal === undefined ? {} : { journal }),
      ...(overrideNode === undefined ? {} : { overrideNode: checked(overrideNode, nameProblem(overrideNode, 'node')) }),
    };
    if (overrideNode !== undefined && (!options.force || journal === undefined)) throw new UsageError('--override-node needs --force and --journal');
    return async (client) => {
      const j = await new AssignClient(client).purgeStart(s, options);
      print(ctx, j, () => `${describePurgeJob(j)}\nthe leader runs it until done; see its progress with: vera assign purge-job status ${s}`);
    };
  },
};

const COMMANDS: Readonly<Record<string, ClientCommand>> = {
  drain: DRAIN,
  'purge-job': PURGE_JOB,
  import: IMPORT,
  'purge-worker': PURGE_WORKER,
  service: {
    flags: { ...CLIENT_FLAGS, pattern: { kind: 'string' }, 'release-rate': { kind: 'string' }, 'new-users': { kind: 'string' }, 'top-n': { kind: 'string' } },
    positionals: ['NAME'],
    prepare: (ctx) => {
      const s = service(ctx, 0);
      const pattern = stringFlag(ctx.args, 'pattern');
      const rateText = stringFlag(ctx.args, 'release-rate');
      const releaseRate = rateText === undefined ? undefined : Number(rateText);
      if (releaseRate !== undefined && !(releaseRate > 0 && releaseRate <= 1)) throw new UsageError(`--release-rate must be a number in (0, 1], got ${JSON.stringify(rateText)}`);
      const newUsers = yesNo(ctx.args, 'new-users');
      const topN = count(ctx.args, 'top-n');
      const settings = { ...(pattern === undefined ? {} : { pattern }), ...(releaseRate === undefined ? {} : { releaseRate }), ...(newUsers === undefined ? {} : { newUsers }), ...(topN === undefined ? {} : { topN }) };
      return async (client) => {
        const r = await new AssignClient(client).service(s, settings);
        print(ctx, r, () => `${r.created ? 'created' : 'updated'} ${s}: pattern ${r.pattern}, release rate ${r.releaseRate}, new users ${r.newUsers ? 'yes' : 'no'}, top ${r.topN}`);
      };
    },
  },
  services: {
    flags: CLIENT_FLAGS,
    positionals: [],
    prepare: (ctx) => async (client) => {
      const services = await new AssignClient(client).services();
      print(ctx, services, () => (services.length === 0 ? '(no services)' : services.map((s) => `${s.service}  ${s.pattern}  ${s.nodes} nodes${s.newUsers ? '' : '  (no new users)'}`).join('\n')));
    },
  },
  user: {
    flags: { ...CLIENT_FLAGS, generation: { kind: 'string' }, 'keys-changed-at': { kind: 'string' }, 'client-state': { kind: 'string' } },
    positionals: ['SERVICE', 'EMAIL'],
    prepare: (ctx) => {
      const [s, e] = [service(ctx, 0), email(ctx, 1)];
      const generation = count(ctx.args, 'generation');
      const keysChangedAt = count(ctx.args, 'keys-changed-at');
      const clientState = stringFlag(ctx.args, 'client-state');
      if (clientState !== undefined) checked(clientState, clientStateProblem(clientState));
      const login = { ...(generation === undefined ? {} : { generation }), ...(keysChangedAt === undefined ? {} : { keysChangedAt }), ...(clientState === undefined ? {} : { clientState }) };
      return async (client) => {
        const a = await new AssignClient(client).user(s, e, login);
        print(ctx, a, () => describeAssignment(a));
      };
    },
  },
  lookup: {
    flags: CLIENT_FLAGS,
    positionals: ['SERVICE', 'EMAIL'],
    prepare: (ctx) => {
      const [s, e] = [service(ctx, 0), email(ctx, 1)];
      return async (client) => {
        const l = await new AssignClient(client).lookup(s, e);
        print(ctx, l, () =>
          [
            `current: uid ${l.current.uid} on ${l.current.node}${currentNote(l.current)}, endpoint ${l.current.endpoint}`,
            `old client states: ${l.oldClientStates.length === 0 ? '(none)' : l.oldClientStates.join(', ')}`,
            ...l.records.map((r) => `  uid ${r.uid}  ${r.node}  generation ${r.generation}  state ${r.clientState || '-'}  created ${new Date(r.createdAt).toISOString()}${r.replacedAt === 0 ? '' : `  replaced ${new Date(r.replacedAt).toISOString()}`}`),
          ].join('\n'),
        );
      };
    },
  },
  place: {
    flags: CLIENT_FLAGS,
    positionals: ['SERVICE', 'EMAIL', 'NODE'],
    prepare: (ctx) => {
      const [s, e, n] = [service(ctx, 0), email(ctx, 1), node(ctx, 2)];
      return async (client) => {
        const r = await new AssignClient(client).place(s, e, n);
        print(ctx, r, () => `${e}: uid ${r.uid} on ${r.node}${r.created ? ' (new user)' : r.moved ? ' (moved)' : ' (already there)'}, endpoint ${r.endpoint}`);
      };
    },
  },
  retire: {
    flags: { ...CLIENT_FLAGS, service: { kind: 'string' } },
    positionals: ['EMAIL'],
    prepare: (ctx) => {
      const e = email(ctx, 0);
      const s = stringFlag(ctx.args, 'service');
      if (s !== undefined) checked(s, serviceNameProblem(s));
      return async (client) => {
        const r = await new AssignClient(client).retire(e, s);
        print(ctx, r, () => `retired ${e} from ${r.services} service${r.services === 1 ? '' : 's'}`);
      };
    },
  },
  decommission: {
    flags: { ...CLIENT_FLAGS, uids: { kind: 'string' } },
    positionals: ['SERVICE', 'NODE'],
    prepare: (ctx) => {
      const [s, n] = [service(ctx, 0), node(ctx, 1)];
      const text = stringFlag(ctx.args, 'uids');
      const uids = text === undefined ? undefined : text.split(',').map((u) => parseCount(u.trim(), '--uids'));
      return async (client) => {
        const r = await new AssignClient(client).decommission(s, n, uids);
        print(ctx, r, () => `replaced ${r.replaced} users on ${n}; they move on their next request${r.closed === true ? `\n${n} takes no new users now (backoff 1); reopen it with: vera assign node set ${s} ${n} --backoff 0` : ''}`);
      };
    },
  },
  purge: {
    flags: {
      ...CLIENT_FLAGS,
      grace: { kind: 'string' },
      max: { kind: 'string' },
      force: { kind: 'boolean' },
      'dry-run': { kind: 'boolean' },
      journal: { kind: 'string' },
      after: { kind: 'string' },
      'until-done': { kind: 'boolean' },
      'uid-min': { kind: 'string' },
      'uid-max': { kind: 'string' },
      'override-node': { kind: 'string' },
    },
    positionals: ['SERVICE'],
    prepare: (ctx) => {
      const s = service(ctx, 0);
      const grace = stringFlag(ctx.args, 'grace');
      const max = count(ctx.args, 'max');
      const journal = stringFlag(ctx.args, 'journal');
      const after = stringFlag(ctx.args, 'after');
      const overrideNode = stringFlag(ctx.args, 'override-node');
      const options = {
        ...(grace === undefined ? {} : { graceMs: grace === '0' ? 0 : parseDuration(grace, '--grace') }),
        ...(max === undefined ? {} : { max }),
        force: boolFlag(ctx.args, 'force'),
        dryRun: boolFlag(ctx.args, 'dry-run'),
        ...(journal === undefined ? {} : { journal }),
        ...(after === undefined ? {} : { after }),
        ...present({ uidMin: count(ctx.args, 'uid-min'), uidMax: count(ctx.args, 'uid-max') }),
        ...(overrideNode === undefined ? {} : { overrideNode: checked(overrideNode, nameProblem(overrideNode, 'node')) }),
      };
      if (overrideNode !== undefined && (!options.force || journal === undefined)) throw new UsageError('--override-node needs --force and --journal');
      if (boolFlag(ctx.args, 'until-done')) {
        if (after !== undefined) throw new UsageError('--until-done starts from the beginning: leave out --after');
        return async (client) => {
          // One line per batch: what it did and the totals so far.
          const total = await new AssignClient(client).purgeAll(s, options, (p) => {
            if (!ctx.json) ctx.io.stdout(`batch ${p.batches}: ${options.dryRun ? 'would purge' : 'purged'} ${p.batch.purged.length}, skipped ${p.batch.skipped}; total ${p.purged} purged, ${p.skipped} skipped\n`);
          });
          print(ctx, total, () => `${total.done ? 'done' : 'stopped'}: ${total.purged} records ${options.dryRun ? 'would be purged' : 'purged'} in ${total.batches} batches${total.skipped > 0 ? `, ${total.skipped} on downed nodes left (--force purges them)` : ''}`);
        };
      }
      return async (client) => {
        const r = await new AssignClient(client).purge(s, options);
        print(ctx, r, () =>
          [
            `${r.dryRun ? 'would purge' : 'purged'} ${r.purged.length} records${r.skipped > 0 ? `, skipped ${r.skipped} on downed nodes (--force purges them)` : ''}`,
            ...r.purged.map((p) => `  uid ${p.uid}  ${p.email}  ${p.node}`),
            ...(r.next === null ? [] : [`more to look at: --after ${r.next}`]),
          ].join('\n'),
        );
      };
    },
  },
  events: {
    flags: { ...CLIENT_FLAGS, generation: { kind: 'string' }, 'event-id': { kind: 'string' }, queue: { kind: 'string' } },
    positionals: ['KIND', 'EMAIL'],
    prepare: (ctx) => {
      const kind = ctx.args.positionals[0]!;
      if (!EVENT_KINDS.includes(kind as AccountEventKind)) throw new UsageError(`KIND must be one of ${EVENT_KINDS.join(', ')}`);
      const e = email(ctx, 1);
      const generation = count(ctx.args, 'generation');
      if (kind !== 'delete' && generation === undefined) throw new UsageError(`a ${kind} event needs --generation`);
      const eventId = stringFlag(ctx.args, 'event-id');
      if (eventId !== undefined) checked(eventId, eventIdProblem(eventId));
      const queue = stringFlag(ctx.args, 'queue');
      if (queue !== undefined && eventId === undefined) throw new UsageError('--queue needs --event-id: the id keys the queued event');
      return async (client) => {
        const assign = new AssignClient(client);
        if (queue !== undefined) {
          await assign.enqueueEvent(queue, { eventId: eventId!, kind: kind as AccountEventKind, email: e, ...(generation === undefined ? {} : { generation }) });
          print(ctx, { queued: true }, () => `queued ${kind} ${e} as ${eventId!} in ${queue}`);
          return;
        }
        const r = await assign.event(kind as AccountEventKind, e, generation, eventId);
        print(ctx, r, () => (r.duplicate === true ? `${kind}: event ${eventId!} was applied before; nothing changed` : `${kind}: ${r.changed} record${r.changed === 1 ? '' : 's'} changed`));
      };
    },
  },
  'events-worker': {
    flags: { ...CLIENT_FLAGS, once: { kind: 'boolean' }, max: { kind: 'string' }, 'max-events': { kind: 'string' } },
    positionals: ['JOURNAL'],
    prepare: (ctx) => {
      const journal = ctx.args.positionals[0]!;
      if (journalNameProblem(journal) !== null) throw new UsageError(`JOURNAL must be a journal's name, got ${JSON.stringify(journal)}`);
      const max = count(ctx.args, 'max');
      if (max !== undefined && (max < 1 || max > 100)) throw new UsageError('--max must be 1-100');
      const maxEvents = count(ctx.args, 'max-events');
      const once = boolFlag(ctx.args, 'once');
      return async (client) => {
        const assign = new AssignClient(client);
        const report = await runEventsWorker(new JournalClient(client), (kind, e, generation, eventId) => assign.event(kind, e, generation, eventId), journal, {
          untilEmpty: once,
          signal: ctx.io.stop,
          ...(max === undefined ? {} : { max }),
          ...(maxEvents === undefined ? {} : { maxEvents }),
          onEvent: (id, outcome, detail) => {
            if (!ctx.json) ctx.io.stdout(`${outcome} ${id}: ${detail}\n`);
          },
        });
        print(ctx, report, () => `applied ${report.applied}, repeats ${report.repeat}, failed ${report.failed} (released to retry), not an event ${report.invalid}`);
      };
    },
  },
  count: {
    flags: { ...CLIENT_FLAGS, at: { kind: 'string' } },
    positionals: ['SERVICE'],
    prepare: (ctx) => {
      const s = service(ctx, 0);
      const at = count(ctx.args, 'at');
      return async (client) => {
        const users = await new AssignClient(client).count(s, at);
        print(ctx, { users }, () => `${users} users`);
      };
    },
  },
};

export async function run(argv: readonly string[], io: CliIO): Promise<number> {
  let [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    (sub === undefined ? io.stderr : io.stdout)(`${USAGE}\n`);
    return sub === undefined ? EXIT.usage : EXIT.ok;
  }
  let table = COMMANDS;
  let name = sub;
  if (sub === 'node') {
    const [action, ...more] = rest;
    if (action === undefined || NODE_COMMANDS[action] === undefined) throw new UsageError(`vera assign node needs one of ${Object.keys(NODE_COMMANDS).join(', ')}`);
    table = NODE_COMMANDS;
    name = action;
    sub = `node ${action}`;
    rest = more;
  }
  const command = table[name];
  if (command === undefined) throw new UsageError(`unknown assign subcommand ${JSON.stringify(sub)} (subcommands: ${[...Object.keys(COMMANDS), 'node'].join(', ')})`);
  const args = parseArgs(rest, command.flags, `vera assign ${sub}`);
  if (boolFlag(args, 'help')) {
    io.stdout(`${USAGE}\n`);
    return EXIT.ok;
  }
  return runClientCommand(`assign ${sub}`, command, args, io);
}
