// `vera paths PREFIX`: every non-empty list at or below a prefix, recursively,
// read a page at a time (range.paths).
import { runSingle } from '../../cli/verb-runner.js';
import { boolFlag, stringFlag } from '../../cli/args.js';
import { CLIENT_FLAGS, pathArg, print, type ClientCommand } from '../../cli/client-commands.js';
import type { CliIO } from '../../cli/io.js';
import { parseCount } from '../../cli/units.js';
import { RangeClient } from './client.js';

export const USAGE = `Usage: vera paths PREFIX [--limit N] [--stale]

Prints every non-empty list at or below PREFIX ('/' for all), recursively, in
order, with the index of its newest item, reading N paths a page (default 1000).
--stale reads what the member has applied without confirming it is current.
--json prints one {"path", "newest"} per line.
Client flags: --server URL[,URL...], --json, --encoding E, --timeout MS, --ca FILE,
--token T or --user NAME (password: --password-file FILE or $VERA_PASSWORD), -h/--help`;

const PATHS: ClientCommand = {
  flags: { ...CLIENT_FLAGS, limit: { kind: 'string' }, stale: { kind: 'boolean' } },
  positionals: ['PREFIX'],
  prepare: (ctx) => {
    const prefix = pathArg(ctx, 0, true);
    const limit = stringFlag(ctx.args, 'limit');
    const options = { ...(limit === undefined ? {} : { limit: parseCount(limit, '--limit') }), stale: boolFlag(ctx.args, 'stale') };
    return async (client) => {
      let n = 0;
      for await (const p of new RangeClient(client).allPaths(prefix, options)) {
        print(ctx, p, () => `${p.path}  #${p.newest}`);
        n++;
      }
      if (n === 0 && !ctx.json) ctx.io.stderr(`(no lists at or below ${prefix})\n`);
    };
  },
};

export function run(argv: readonly string[], io: CliIO): Promise<number> {
  return runSingle('paths', USAGE, PATHS, argv, io);
}
