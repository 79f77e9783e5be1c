// Entry point of the `vera` command (bin/vera.js runs the compiled form).
import { readFileSync } from 'node:fs';
import { parseArgs, boolFlag, type FlagSpecs } from './args.js';
import { buildServerConfig, START_FLAGS } from './config.js';
import { EXIT, UsageError } from './errors.js';
import { processIO, type CliIO } from './io.js';
import { USAGE } from './usage.js';

// The client verbs (and the client library under them) load only for a client verb: a
// starting member does not need them before it serves (issue 32, rejoin time).
async function statusFlags(): Promise<FlagSpecs> {
  const { CLIENT_FLAGS } = await import('./client-commands.js');
  return { server: CLIENT_FLAGS.server!, json: CLIENT_FLAGS.json!, timeout: CLIENT_FLAGS.timeout!, ca: CLIENT_FLAGS.ca!, cert: CLIENT_FLAGS.cert!, key: CLIENT_FLAGS.key!, help: CLIENT_FLAGS.help! };
}

/** Runs `vera <argv...>` and resolves with the exit code. */
export async function main(argv: string[], io: CliIO = processIO()): Promise<number> {
  const [verb, ...rest] = argv;
  if (verb === undefined || verb === '--help' || verb === '-h' || verb === 'help') {
    const write = verb === undefined ? io.stderr : io.stdout;
    write(`${USAGE.main}\n`);
    return verb === undefined ? EXIT.usage : EXIT.ok;
  }
  if (verb === '--version' || verb === '-V' || verb === 'version') {
    io.stdout(`vera ${packageVersion()}\n`);
    return EXIT.ok;
  }
  try {
    return await runVerb(verb, rest, io);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    const hint = verb in USAGE ? `vera ${verb} --help` : 'vera --help';
    io.stderr(`vera ${verb}: ${error.message}\nRun '${hint}' for usage.\n`);
    return EXIT.usage;
  }
}

async function runVerb(verb: string, argv: string[], io: CliIO): Promise<number> {
  if (verb === 'start') {
    const args = parseArgs(argv, START_FLAGS, 'vera start');
    if (boolFlag(args, 'help')) return help(io, 'start');
    if (args.positionals.length > 0) throw new UsageError(`'vera start' takes no arguments, got ${args.positionals.join(' ')}`);
    const insecure = boolFlag(args, 'insecure');
    // Whether the port may be exposed at all is judged by the server, once its store says if authentication is on.
    const config = { ...buildServerConfig({ flags: args.flags, env: io.env, cwd: io.cwd }), insecure };
    if (insecure) io.stderr(`vera start: --insecure: the client port ${config.client.host}:${config.client.port} takes anyone who reaches it, without authentication\n`);
    // Loaded only here, so client verbs never load the server.
    const { runServer } = await import('./start.js');
    return runServer(config, io);
  }
  if (verb === 'dev') {
    const { DEV_FLAGS, parseDevOptions, runDev } = await import('./dev.js');
    const args = parseArgs(argv, DEV_FLAGS, 'vera dev');
    if (boolFlag(args, 'help')) return help(io, 'dev');
    return runDev(parseDevOptions(args, io.cwd), io);
  }
  if (verb === 'snapshot') {
    // Loaded only here: restore opens LevelDB.
    const { runSnapshot } = await import('./snapshot.js');
    return runSnapshot(argv, io);
  }
  if (verb === 'member' || verb === 'leader') {
    const { ADMIN_FLAGS, runAdmin } = await import('./member.js');
    const args = parseArgs(argv, ADMIN_FLAGS, `vera ${verb}`);
    if (boolFlag(args, 'help')) return help(io, verb);
    return runAdmin(verb, args, io);
  }
  if (verb === 'completion') {
    if (argv[0] === '--help' || argv[0] === '-h') return help(io, 'completion');
    if (argv.length !== 1) throw new UsageError(`'vera completion' takes one shell: bash or zsh`);
    const { completionScript } = await import('./completion.js');
    io.stdout(completionScript(argv[0]!));
    return EXIT.ok;
  }
  if (verb === 'status') {
    const args = parseArgs(argv, await statusFlags(), 'vera status');
    if (boolFlag(args, 'help')) return help(io, 'status');
    const { runStatus } = await import('./status.js');
    return runStatus(args, io);
  }
  const [{ CLIENT_COMMANDS, runClientCommand }, { FAMILY_VERBS, registeredVerb, registeredVerbs }] = await Promise.all([import('./client-commands.js'), import('./family-verbs.js')]);
  const family = FAMILY_VERBS[verb];
  if (family !== undefined) return (await family()).run(argv, io);
  const command = CLIENT_COMMANDS[verb];
  if (command === undefined) {
    const registered = await registeredVerb(verb);
    if (registered !== undefined) return registered.run(argv, io);
    const verbs = [...Object.keys(CLIENT_COMMANDS), ...Object.keys(FAMILY_VERBS), ...(await registeredVerbs())];
    throw new UsageError(`unknown command ${JSON.stringify(verb)} (commands: start, dev, ${verbs.join(', ')}, status, snapshot, member, leader)`);
  }
  const args = parseArgs(argv, command.flags, `vera ${verb}`);
  if (boolFlag(args, 'help')) return help(io, verb);
  return runClientCommand(verb, command, args, io);
}

/** The version in package.json (two levels up from this module, in src/ as in dist/). */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : 'unknown';
}

function help(io: CliIO, verb: string): number {
  io.stdout(`${USAGE[verb]}\n`);
  return EXIT.ok;
}
