// `vera hibernate PATH`, `vera hibernate ls` and `vera thaw PATH` (see docs/hibernation.md).
import { parseArgs, boolFlag } from '../../cli/args.js';
import { CLIENT_FLAGS, print, runClientCommand, type ClientCommand } from '../../cli/client-commands.js';
import { EXIT, UsageError } from '../../cli/errors.js';
import type { CliIO } from '../../cli/io.js';
import { validatePath } from '../../protocol/index.js';
import { HibernateClient } from './client.js';

export const USAGE = `Usage: vera hibernate PATH | vera hibernate ls | vera thaw PATH

Hibernation: a unit (a list and every list below it) moves to the cold store and
comes back on its first use (see docs/hibernation.md). 'hibernate PATH' exits 1
when the unit was not frozen (missing, empty, holding ephemeral items, too large).

  hibernate PATH   freeze the unit at PATH now
  hibernate ls     the Frozen (and Freezing) units with their size
  thaw PATH        bring the unit back now (any operation on it does that too)

Client flags: --server URL[,URL...], --json, --encoding E, --timeout MS, --ca FILE,
--token T or --user NAME (password: --password-file FILE or $VERA_PASSWORD), -h/--help`;

function unitPath(value: string | undefined): string {
  const problem = validatePath(value, { allowRoot: false });
  if (problem !== null) throw new UsageError(problem);
  return value!;
}

const freeze: ClientCommand = {
  flags: CLIENT_FLAGS,
  positionals: ['PATH'],
  prepare: (ctx) => {
    const path = unitPath(ctx.args.positionals[0]);
    return async (client) => {
      const r = await new HibernateClient(client).freeze(path);
      print(ctx, r, () => (r.frozen ? `${path}: frozen, ${r.items} items in ${r.bytes} bytes` : `${path}: not frozen (${r.why})`));
      // A unit that could not be frozen (missing, empty, in use) did not do what was asked: exit 1 for scripts.
      return r.frozen ? EXIT.ok : EXIT.serverError;
    };
  },
};

const list: ClientCommand = {
  flags: CLIENT_FLAGS,
  positionals: [],
  prepare: (ctx) => async (client) => {
    const units = await new HibernateClient(client).units();
    print(ctx, { units }, () => (units.length === 0 ? 'no Frozen or Freezing units' : units.map((u) => (u.state === 'frozen' ? `${u.unit}  frozen  ${u.items} items  ${u.bytes} bytes  (entry ${u.frozenAt})${u.draining === true ? '  draining' : ''}` : `${u.unit}  freezing  (since entry ${u.since})`)).join('\n')));
  },
};

const thawCommand: ClientCommand = {
  flags: CLIENT_FLAGS,
  positionals: ['PATH'],
  prepare: (ctx) => {
    const path = unitPath(ctx.args.positionals[0]);
    return async (client) => {
      const r = await new HibernateClient(client).thaw(path);
      print(ctx, r, () => (r.thawed ? `${r.unit === path ? path : `${path}: unit ${r.unit}`}: thawed, ${r.items} items` : `${path}: was not frozen`));
    };
  },
};

async function runOne(name: string, command: ClientCommand, argv: readonly string[], io: CliIO): Promise<number> {
  const args = parseArgs(argv, command.flags, `vera ${name}`);
  if (boolFlag(args, 'help')) {
    io.stdout(`${USAGE}\n`);
    return EXIT.ok;
  }
  return runClientCommand(name, command, args, io);
}

/** `vera hibernate ...` */
export async function run(argv: readonly string[], io: CliIO): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    (first === undefined ? io.stderr : io.stdout)(`${USAGE}\n`);
    return first === undefined ? EXIT.usage : EXIT.ok;
  }
  return first === 'ls' ? runOne('hibernate ls', list, rest, io) : runOne('hibernate', freeze, argv, io);
}

/** `vera thaw PATH` */
export const thaw = { run: (argv: readonly string[], io: CliIO): Promise<number> => runOne('thaw', thawCommand, argv, io) };
