// How a client verb of a family runs: help when asked for (or, with nothing
// given, on stderr with the usage exit code), an unknown sub-command refused by
// name, then the arguments parsed against the command's flags and the command run.
import { boolFlag, parseArgs } from './args.js';
import { runClientCommand, type ClientCommand } from './client-commands.js';
import { EXIT, UsageError } from './errors.js';
import type { CliIO } from './io.js';

/** `vera VERB SUB ARGS...`: one of `commands`, chosen by SUB. */
export async function runSubcommand(verb: string, usage: string, commands: Readonly<Record<string, ClientCommand>>, argv: readonly string[], io: CliIO): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    (sub === undefined ? io.stderr : io.stdout)(`${usage}\n`);
    return sub === undefined ? EXIT.usage : EXIT.ok;
  }
  const command = commands[sub];
  if (command === undefined) throw new UsageError(`unknown ${verb} subcommand ${JSON.stringify(sub)} (subcommands: ${Object.keys(commands).join(', ')})`);
  return runParsed(`${verb} ${sub}`, usage, command, rest, io);
}

/** `vera VERB ARGS...`: a verb that is one command. */
export async function runSingle(verb: string, usage: string, command: ClientCommand, argv: readonly string[], io: CliIO): Promise<number> {
  if (argv.length === 0) {
    io.stderr(`${usage}\n`);
    return EXIT.usage;
  }
  return runParsed(verb, usage, command, argv, io);
}

async function runParsed(name: string, usage: string, command: ClientCommand, argv: readonly string[], io: CliIO): Promise<number> {
  const args = parseArgs(argv, command.flags, `vera ${name}`);
  if (boolFlag(args, 'help')) {
    io.stdout(`${usage}\n`);
    return EXIT.ok;
  }
  return runClientCommand(name, command, args, io);
}
