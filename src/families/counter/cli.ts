// `vera counter add|get|remove NAME`: counters from the command line.
import { runSubcommand } from '../../cli/verb-runner.js';
import { boolFlag, stringFlag } from '../../cli/args.js';
import { CLIENT_FLAGS, print, type ClientCommand, type Context } from '../../cli/client-commands.js';
import { UsageError } from '../../cli/errors.js';
import type { CliIO } from '../../cli/io.js';
import { CounterClient } from './client.js';
import { integerProblem, nameProblem } from './wire.js';

export const USAGE = `Usage: vera counter <subcommand> NAME [flags]

Counters: named integers changed atomically (see docs/architecture.md, "Adding a family").

Subcommands:
  add NAME [--by N] [--if-value N] add N (default 1; --by=-1 to subtract); with --if-value,
                                    only if the counter holds that value now (0 when absent)
  get NAME [--stale]                its value (0 when absent)
  remove NAME                       remove it

Client flags: --server URL[,URL...], --json, --encoding E, --timeout MS, --ca FILE,
--token T or --user NAME (password: --password-file FILE or $VERA_PASSWORD), -h/--help`;

function nameArg(ctx: Context): string {
  const name = ctx.args.positionals[0]!;
  const problem = nameProblem(name);
  if (problem !== null) throw new UsageError(problem);
  return name;
}

function integerArg(text: string | undefined, what: string): number | undefined {
  if (text === undefined) return undefined;
  const value = /^-?\d+$/.test(text) ? Number(text) : Number.NaN;
  const problem = integerProblem(value, what);
  if (problem !== null) throw new UsageError(problem);
  return value;
}

const COMMANDS: Readonly<Record<string, ClientCommand>> = {
  add: {
    flags: { ...CLIENT_FLAGS, by: { kind: 'string' }, 'if-value': { kind: 'string' } },
    positionals: ['NAME'],
    prepare: (ctx) => {
      const name = nameArg(ctx);
      const delta = integerArg(stringFlag(ctx.args, 'by'), '--by') ?? 1;
      const ifValue = integerArg(stringFlag(ctx.args, 'if-value'), '--if-value');
      return async (client) => {
        const result = await new CounterClient(client).add(name, delta, ifValue === undefined ? {} : { ifValue });
        print(ctx, result, () => String(result.value));
      };
    },
  },
  get: {
    flags: { ...CLIENT_FLAGS, stale: { kind: 'boolean' } },
    positionals: ['NAME'],
    prepare: (ctx) => {
      const name = nameArg(ctx);
      const stale = boolFlag(ctx.args, 'stale');
      return async (client) => {
        const result = await new CounterClient(client).get(name, { stale });
        print(ctx, result, () => String(result.value));
      };
    },
  },
  remove: {
    flags: CLIENT_FLAGS,
    positionals: ['NAME'],
    prepare: (ctx) => {
      const name = nameArg(ctx);
      return async (client) => {
        const removed = await new CounterClient(client).remove(name);
        print(ctx, { removed }, () => (removed ? `removed ${name}` : `${name} did not exist`));
      };
    },
  },
};

export function run(argv: readonly string[], io: CliIO): Promise<number> {
  return runSubcommand('counter', USAGE, COMMANDS, argv, io);
}
