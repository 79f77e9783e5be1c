// `vera lease grant|keep-alive|revoke|show`: leases from the command line. A
// lease outlives the command that granted it (it is no connection's session):
// keep it alive with `keep-alive LEASE` (once) or `keep-alive LEASE --hold`
// (until Ctrl-C), and name it with `vera put --lease`.
import { runSubcommand } from '../../cli/verb-runner.js';
import { boolFlag } from '../../cli/args.js';
import { CLIENT_FLAGS, print, type ClientCommand, type Context } from '../../cli/client-commands.js';
import { UsageError } from '../../cli/errors.js';
import { stopped, type CliIO } from '../../cli/io.js';
import { parseDuration } from '../../cli/units.js';
import { LeaseClient } from './client.js';
import { leaseProblem } from './wire.js';

export const USAGE = `Usage: vera lease <subcommand> [flags]

Leases: lifetimes with their own TTL, independent of any connection (see docs/kv.md).

Subcommands:
  grant TTL                   a new lease (TTL like 30s or 5m); prints its id
  keep-alive LEASE [--hold]   restart its TTL once, or every third of it until Ctrl-C
  revoke LEASE                end it now, deleting every item it owns
  show LEASE                  its TTL and the time left

Client flags: --server URL[,URL...], --json, --encoding E, --timeout MS, --ca FILE,
--token T or --user NAME (password: --password-file FILE or $VERA_PASSWORD), -h/--help`;

function leaseArg(ctx: Context): string {
  const id = ctx.args.positionals[0]!;
  const problem = leaseProblem(id);
  if (problem !== null) throw new UsageError(problem);
  return id;
}

const COMMANDS: Readonly<Record<string, ClientCommand>> = {
  grant: {
    flags: CLIENT_FLAGS,
    positionals: ['TTL'],
    prepare: (ctx) => {
      const ttlMs = parseDuration(ctx.args.positionals[0]!, 'TTL');
      return async (client) => {
        const granted = await new LeaseClient(client).grant(ttlMs);
        print(ctx, granted, () => granted.lease);
      };
    },
  },
  'keep-alive': {
    flags: { ...CLIENT_FLAGS, hold: { kind: 'boolean' } },
    positionals: ['LEASE'],
    prepare: (ctx) => {
      const id = leaseArg(ctx);
      const hold = boolFlag(ctx.args, 'hold');
      return async (client) => {
        const leases = new LeaseClient(client);
        const { ttlMs } = await leases.keepAliveOnce(id);
        if (!hold) return print(ctx, { ttlMs }, () => `${id} kept alive for ${ttlMs} ms`);
        ctx.io.stderr(`keeping ${id} alive every ${Math.round(ttlMs / 3)} ms until Ctrl-C\n`);
        const kept = leases.keepAlive(id, ttlMs);
        const lost = await Promise.race([kept.lost, stopped(ctx.io.stop).then(() => null)]);
        kept.stop();
        if (lost !== null) throw lost;
      };
    },
  },
  revoke: {
    flags: CLIENT_FLAGS,
    positionals: ['LEASE'],
    prepare: (ctx) => {
      const id = leaseArg(ctx);
      return async (client) => {
        await new LeaseClient(client).revoke(id);
        print(ctx, {}, () => `revoked ${id}`);
      };
    },
  },
  show: {
    flags: CLIENT_FLAGS,
    positionals: ['LEASE'],
    prepare: (ctx) => {
      const id = leaseArg(ctx);
      return async (client) => {
        const info = await new LeaseClient(client).show(id);
        print(ctx, info, () => `${info.lease}  ttl ${info.ttlMs} ms  remaining ${info.remainingMs} ms${info.user === undefined ? '' : `  user ${info.user}`}`);
      };
    },
  },
};

export function run(argv: readonly string[], io: CliIO): Promise<number> {
  return runSubcommand('lease', USAGE, COMMANDS, argv, io);
}
