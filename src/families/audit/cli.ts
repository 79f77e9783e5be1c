// `vera audit`: print the audit log, or check its hash chain (see docs/security.md).
import { boolFlag, parseArgs, stringFlag } from '../../cli/args.js';
import { CLIENT_FLAGS, runClientCommand, type ClientCommand } from '../../cli/client-commands.js';
import { EXIT, UsageError } from '../../cli/errors.js';
import type { CliIO } from '../../cli/io.js';
import { VeraError } from '../../protocol/index.js';
import { ChainCheck } from './chain.js';
import { AuditClient } from './client.js';

export const USAGE = `Usage: vera audit [--after N] [--verify]

Prints the audit log: authentication failures, permission denials, and what
administrators did (user, role and membership changes, admin ops), one record a
line, oldest first. Needs read on 'audit' (an admin).

  --after N   only records after number N
  --verify    check every record's hash and its link to the one before it, that the
              log starts where its window does and ends at the head the member
              applied; exits 1 and names the first record that does not hold

Client flags: --server URL[,URL...], --json, --encoding E, --timeout MS, --token T, --user U, -h/--help`;

const command: ClientCommand = {
  flags: { ...CLIENT_FLAGS, after: { kind: 'string' }, verify: { kind: 'boolean' } },
  positionals: [],
  prepare: (ctx) => {
    const afterText = stringFlag(ctx.args, 'after');
    const after = afterText === undefined ? 0 : Number(afterText);
    if (!Number.isSafeInteger(after) || after < 0) throw new UsageError(`--after must be a record number, got ${JSON.stringify(afterText)}`);
    const verify = boolFlag(ctx.args, 'verify');
    return async (client) => {
      const check = new ChainCheck(after);
      await new AuditClient(client).each((records, page) => {
        if (verify) {
          const broken = check.page(page);
          if (broken !== null) throw new VeraError('CONFLICT', `the audit log does not verify: record ${broken.seq} ${broken.problem}`);
        } else {
          for (const r of records) ctx.io.stdout(`${ctx.json ? JSON.stringify(r) : `${r.seq}  ${new Date(r.at).toISOString()}  ${r.kind}  ${r.principal ?? '-'}  ${r.remote}  ${r.what}`}\n`);
        }
      }, after);
      if (verify) ctx.io.stdout(ctx.json ? `${JSON.stringify({ verified: check.checked })}\n` : `the audit log verifies: ${check.checked} records, each chained to the one before, from the oldest kept to the head\n`);
    };
  },
};

export async function run(argv: readonly string[], io: CliIO): Promise<number> {
  const args = parseArgs(argv, command.flags, 'vera audit');
  if (boolFlag(args, 'help')) {
    io.stdout(`${USAGE}\n`);
    return EXIT.ok;
  }
  return runClientCommand('audit', command, args, io);
}
