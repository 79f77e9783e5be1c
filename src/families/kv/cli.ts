// `vera put` and `vera txn`: a list's value set in one entry, and transactions
// given as JSON (an argument, `-` for stdin or `@FILE`).
import { runSingle } from '../../cli/verb-runner.js';
import { boolFlag, stringFlag } from '../../cli/args.js';
import { CLIENT_FLAGS, dataArg, indexArg, pathArg, print, type ClientCommand } from '../../cli/client-commands.js';
import { UsageError } from '../../cli/errors.js';
import { formatItem } from '../../cli/format.js';
import type { CliIO } from '../../cli/io.js';
import { parseCount } from '../../cli/units.js';
import { KvClient, type PutOptions, type Txn } from './client.js';

const CLIENT_HELP = `Client flags: --server URL[,URL...], --json, --encoding E, --timeout MS, --ca FILE,
--token T or --user NAME (password: --password-file FILE or $VERA_PASSWORD), -h/--help`;

export const PUT_USAGE = `Usage: vera put PATH DATA [--keep N] [--if-last-index I] [--lease L | --ephemeral] [--string | --bytes]

Sets the list at PATH to DATA in one entry: its items are replaced by the new one
(or all but the newest N-1 with --keep N). The item is persistent unless it is
owned by a lease (--lease, from 'vera lease grant') or by this command's session
(--ephemeral). --if-last-index I: only if the list's newest index is I (0: empty).

DATA is JSON ('-' reads stdin, @FILE a file); --string takes it as text, --bytes
as a binary value. See docs/kv.md.
${CLIENT_HELP}`;

export const TXN_USAGE = `Usage: vera txn SPEC

Runs a transaction, all or nothing, in one entry. SPEC is JSON ('-' reads stdin,
@FILE a file): {"compare": [...], "success": [...], "failure": [...]}, e.g.
  {"compare": [{"path": "/lock", "target": "exists", "value": false}],
   "success": [{"op": "put", "path": "/lock", "data": "me"}]}
Compares: target newest | length | exists, cmp = != < > (default =), value.
Writes: push, put (keep, ephemeral, lease), delete (index), clear. See docs/kv.md.
${CLIENT_HELP}`;

const PUT: ClientCommand = {
  flags: { ...CLIENT_FLAGS, keep: { kind: 'string' }, 'if-last-index': { kind: 'string' }, lease: { kind: 'string' }, ephemeral: { kind: 'boolean' }, string: { kind: 'boolean' }, bytes: { kind: 'boolean' } },
  positionals: ['PATH', 'DATA'],
  prepare: (ctx) => {
    const path = pathArg(ctx, 0, false);
    const data = dataArg(ctx, ctx.args.positionals[1]!);
    const keep = stringFlag(ctx.args, 'keep');
    const ifLast = stringFlag(ctx.args, 'if-last-index');
    const lease = stringFlag(ctx.args, 'lease');
    const ephemeral = boolFlag(ctx.args, 'ephemeral');
    if (lease !== undefined && ephemeral) throw new UsageError('--lease and --ephemeral cannot go together');
    const options: PutOptions = {
      ...(keep === undefined ? {} : { keep: parseCount(keep, '--keep') }),
      ...(ifLast === undefined ? {} : { ifLastIndex: indexArg(ifLast, '--if-last-index') }),
      ...(lease === undefined ? {} : { lease }),
      ...(ephemeral ? { ephemeral } : {}),
    };
    return async (client) => {
      const r = await new KvClient(client).put(path, data, options);
      print(ctx, r, () => `put ${path} ${formatItem(r.item)}${r.deleted > 0 ? ` (${r.deleted} item(s) replaced)` : ''}`);
      if (ephemeral) ctx.io.stderr('note: the item is ephemeral and is deleted as this command ends its session (use a lease to keep it)\n');
    };
  },
};

const TXN: ClientCommand = {
  flags: CLIENT_FLAGS,
  positionals: ['SPEC'],
  prepare: (ctx) => {
    const spec = dataArg(ctx, ctx.args.positionals[0]!);
    if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) throw new UsageError('SPEC must be a JSON object with compare, success and failure');
    return async (client) => {
      const r = await new KvClient(client).txn(spec as unknown as Txn);
      print(ctx, r, () =>
        [
          r.succeeded ? 'compares held: ran success' : 'a compare failed: ran failure',
          ...r.results.map((w) => ('item' in w ? `  ${w.op} ${formatItem(w.item)}` : `  ${w.op}`) + ('deleted' in w && w.deleted > 0 ? ` (${w.deleted} deleted)` : '')),
        ].join('\n'),
      );
    };
  },
};

function verb(name: string, usage: string, command: ClientCommand) {
  return { run: (argv: readonly string[], io: CliIO): Promise<number> => runSingle(name, usage, command, argv, io) };
}

export const putVerb = verb('put', PUT_USAGE, PUT);
export const txnVerb = verb('txn', TXN_USAGE, TXN);
