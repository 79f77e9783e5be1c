// `vera auth`, `vera user`, `vera role` and `vera login` (see docs/security.md).
import { readFileSync } from 'node:fs';
import { boolFlag, parseArgs, stringFlag, type FlagSpecs } from '../../cli/args.js';
import { CLIENT_FLAGS, credentials, print, runClientCommand, type ClientCommand, type Context } from '../../cli/client-commands.js';
import { EXIT, UsageError } from '../../cli/errors.js';
import { parseCount, parseDuration, parseSize } from '../../cli/units.js';
import type { CliIO } from '../../cli/io.js';
import { AuthClient, type QuotaSetting } from './client.js';
import { nameProblem, isPermission } from './records.js';
import { prefixProblem, type Permission } from './rules.js';

const CREDENTIALS = `Who you act as: --token T (or $VERA_TOKEN), or --user NAME (or $VERA_USER) with
--password-file FILE (or $VERA_PASSWORD). While authentication is off, anyone on the
client port may do all of this.`;

export const USAGE = `Usage:
  vera auth enable | disable | status
  vera user add NAME [--new-password-file FILE | --no-password]
  vera user passwd NAME [--new-password-file FILE]
  vera user grant NAME ROLE | revoke NAME ROLE | rm NAME | ls
  vera role add NAME | rm NAME | ls
  vera role grant ROLE PREFIX PERMS [--deny]     PERMS: read,write,watch,admin
  vera role revoke ROLE PREFIX
  vera user quota NAME [--items N|none] [--bytes SIZE|none]
  vera role quota ROLE [--items N|none] [--bytes SIZE|none]
  vera login --user NAME [--ttl D]               prints a token for $VERA_TOKEN

A PREFIX is a path ('/app': the list and all below it; '/' every list), a family's
resources ('journal:', 'journal:orders', 'assign:', 'assign:sync'), 'auth' (users
and roles), 'cluster' (membership, backups) or '*' (everything). For each permission
the longest matching prefix decides; a deny wins over an allow of the same length.
The new password is read from --new-password-file or $VERA_NEW_PASSWORD.
A quota bounds the list items a user stores and their bytes: the user's own, else
the largest of its roles', else the member's --items-per-user/--bytes-per-user;
'none' unsets one. 'vera user ls' shows what each user stores.

${CREDENTIALS}

Client flags: --server URL[,URL...], --json, --encoding E, --timeout MS, --ca FILE,
--token T or --user NAME (password: --password-file FILE or $VERA_PASSWORD), -h/--help`;

const FLAGS: FlagSpecs = { ...CLIENT_FLAGS, 'new-password-file': { kind: 'string' }, 'no-password': { kind: 'boolean' }, deny: { kind: 'boolean' }, ttl: { kind: 'string' }, items: { kind: 'string' }, bytes: { kind: 'string' } };

/** --items and --bytes of a quota verb: absent (unchanged), 'none' (null) or a limit. */
function quotaFlags(ctx: Context): Partial<QuotaSetting> {
  const read = (flag: 'items' | 'bytes', parse: (v: string, what: string) => number): Partial<QuotaSetting> => {
    const text = stringFlag(ctx.args, flag);
    if (text === undefined) return {};
    return { [flag]: text === 'none' ? null : parse(text, `--${flag}`) };
  };
  const quota = { ...read('items', parseCount), ...read('bytes', parseSize) };
  if (Object.keys(quota).length === 0) throw new UsageError('give --items N, --bytes SIZE or both (none unsets one)');
  return quota;
}

function showQuota(q: Partial<QuotaSetting> | undefined): string {
  if (q === undefined) return '';
  const part = (v: number | null | undefined, unit: string): string => (v === null || v === undefined ? 'default' : `${v}${unit}`);
  return `  quota: ${part(q.items, ' items')}, ${part(q.bytes, ' bytes')}`;
}

function named(value: string | undefined, what: string): string {
  const problem = nameProblem(value, what);
  if (problem !== null) throw new UsageError(problem);
  return value!;
}

function newPassword(ctx: Context, optional: boolean): string | undefined {
  if (optional && boolFlag(ctx.args, 'no-password')) return undefined;
  const file = stringFlag(ctx.args, 'new-password-file');
  if (file !== undefined) {
    try {
      return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (err) {
      throw new UsageError(`--new-password-file: cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const env = ctx.io.env.VERA_NEW_PASSWORD;
  if (env !== undefined && env !== '') return env;
  throw new UsageError(`the new password comes from --new-password-file FILE or $VERA_NEW_PASSWORD${optional ? ' (or --no-password for a certificate-only user)' : ''}`);
}

function perms(text: string | undefined): Permission[] {
  const list = (text ?? '').split(',').map((p) => p.trim()).filter((p) => p !== '');
  if (list.length === 0 || !list.every(isPermission)) throw new UsageError(`PERMS must be a comma-separated list of read, write, watch, admin, got ${JSON.stringify(text ?? '')}`);
  return [...new Set(list)];
}

function prefix(text: string | undefined): string {
  const problem = prefixProblem(text);
  if (problem !== null) throw new UsageError(problem);
  return text!;
}

function command(positionals: readonly string[], prepare: ClientCommand['prepare']): ClientCommand {
  return { flags: FLAGS, positionals, prepare };
}

const done = (ctx: Context, what: string): void => print(ctx, { ok: true }, () => what);

const VERBS: Readonly<Record<string, Readonly<Record<string, ClientCommand>>>> = {
  auth: {
    enable: command([], (ctx) => async (c) => {
      await new AuthClient(c).enable();
      done(ctx, 'authentication is on: every request now needs a user (vera login)');
    }),
    disable: command([], (ctx) => async (c) => {
      await new AuthClient(c).disable();
      done(ctx, 'authentication is off: every client may do everything');
    }),
    status: command([], (ctx) => async (c) => {
      const s = await new AuthClient(c).status();
      print(ctx, s, () => `authentication is ${s.enabled ? 'on' : 'off'}${s.user === undefined ? '' : `; you are ${s.user}`}`);
    }),
  },
  user: {
    add: command(['NAME'], (ctx) => {
      const name = named(ctx.args.positionals[0], 'NAME');
      const password = newPassword(ctx, true);
      return async (c) => {
        await new AuthClient(c).addUser(name, password);
        done(ctx, `added user ${name}`);
      };
    }),
    passwd: command(['NAME'], (ctx) => {
      const name = named(ctx.args.positionals[0], 'NAME');
      const password = newPassword(ctx, false)!;
      return async (c) => {
        await new AuthClient(c).setPassword(name, password);
        done(ctx, `changed the password of ${name}; its old tokens no longer work`);
      };
    }),
    grant: command(['NAME', 'ROLE'], (ctx) => {
      const [name, role] = [named(ctx.args.positionals[0], 'NAME'), named(ctx.args.positionals[1], 'ROLE')];
      return async (c) => {
        await new AuthClient(c).grantRole(name, role);
        done(ctx, `${name} has role ${role}`);
      };
    }),
    revoke: command(['NAME', 'ROLE'], (ctx) => {
      const [name, role] = [named(ctx.args.positionals[0], 'NAME'), named(ctx.args.positionals[1], 'ROLE')];
      return async (c) => {
        await new AuthClient(c).revokeRole(name, role);
        done(ctx, `${name} no longer has role ${role}`);
      };
    }),
    rm: command(['NAME'], (ctx) => {
      const name = named(ctx.args.positionals[0], 'NAME');
      return async (c) => {
        await new AuthClient(c).removeUser(name);
        done(ctx, `removed user ${name}`);
      };
    }),
    ls: command([], (ctx) => async (c) => {
      const { users, defaultQuota } = await new AuthClient(c).usersWithUsage();
      const line = (u: (typeof users)[number]): string =>
        `${u.name}  roles: ${u.roles.join(',') || '-'}${u.password ? '' : '  (certificate only)'}  stores: ${u.stored.items} items, ${u.stored.bytes} bytes${showQuota(u.quota)}`;
      print(ctx, { users, defaultQuota }, () =>
        users.length === 0 ? 'no users' : [...users.map(line), `(a user without a quota of its own or its roles': ${defaultQuota.items} items, ${defaultQuota.bytes} bytes)`].join('\n'),
      );
    }),
    quota: command(['NAME'], (ctx) => {
      const name = named(ctx.args.positionals[0], 'NAME');
      const quota = quotaFlags(ctx);
      return async (c) => {
        await new AuthClient(c).setUserQuota(name, quota);
        done(ctx, `user ${name}${showQuota(quota)}`);
      };
    }),
  },
  role: {
    add: command(['NAME'], (ctx) => {
      const name = named(ctx.args.positionals[0], 'NAME');
      return async (c) => {
        await new AuthClient(c).addRole(name);
        done(ctx, `added role ${name}`);
      };
    }),
    rm: command(['NAME'], (ctx) => {
      const name = named(ctx.args.positionals[0], 'NAME');
      return async (c) => {
        await new AuthClient(c).removeRole(name);
        done(ctx, `removed role ${name}`);
      };
    }),
    grant: command(['ROLE', 'PREFIX', 'PERMS'], (ctx) => {
      const role = named(ctx.args.positionals[0], 'ROLE');
      const p = prefix(ctx.args.positionals[1]);
      const list = perms(ctx.args.positionals[2]);
      const deny = boolFlag(ctx.args, 'deny');
      return async (c) => {
        await new AuthClient(c).grantPermission(role, p, list, deny);
        done(ctx, `role ${role} ${deny ? 'is denied' : 'may'} ${list.join(',')} on ${p}`);
      };
    }),
    quota: command(['ROLE'], (ctx) => {
      const role = named(ctx.args.positionals[0], 'ROLE');
      const quota = quotaFlags(ctx);
      return async (c) => {
        await new AuthClient(c).setRoleQuota(role, quota);
        done(ctx, `role ${role}${showQuota(quota)}`);
      };
    }),
    revoke: command(['ROLE', 'PREFIX'], (ctx) => {
      const role = named(ctx.args.positionals[0], 'ROLE');
      const p = prefix(ctx.args.positionals[1]);
      return async (c) => {
        await new AuthClient(c).revokePermission(role, p);
        done(ctx, `role ${role} has no rule on ${p}`);
      };
    }),
    ls: command([], (ctx) => async (c) => {
      const roles = await new AuthClient(c).roles();
      print(ctx, { roles }, () =>
        roles.map((r) => [`${r.name}${showQuota(r.quota)}`, ...r.rules.map((rule) => `  ${rule.deny ? 'deny ' : 'allow'} ${rule.perms.join(',')} on ${rule.prefix}`)].join('\n')).join('\n'),
      );
    }),
  },
};

const login: ClientCommand = command([], (ctx) => {
  const user = stringFlag(ctx.args, 'user') ?? ctx.io.env.VERA_USER;
  if (user === undefined) throw new UsageError('vera login needs --user NAME (and the password in --password-file FILE or $VERA_PASSWORD)');
  const ttlText = stringFlag(ctx.args, 'ttl');
  const ttlMs = ttlText === undefined ? undefined : parseDuration(ttlText, '--ttl');
  if (ttlMs !== undefined && ttlMs < 1000) throw new UsageError(`--ttl must be at least 1s, got ${JSON.stringify(ttlText)}`);
  const { password } = credentials(ctx.args, ctx.io);
  if (password === undefined) throw new UsageError('vera login reads the password from --password-file FILE or $VERA_PASSWORD');
  return async (c) => {
    // The hello already proved the password; the token is what later commands carry instead.
    const r = await new AuthClient(c).login(user, password, ttlMs);
    print(ctx, r, () => r.token);
  };
});

async function runVerb(group: string, argv: readonly string[], io: CliIO): Promise<number> {
  const [sub, ...rest] = argv;
  const verbs = VERBS[group]!;
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    (sub === undefined ? io.stderr : io.stdout)(`${USAGE}\n`);
    return sub === undefined ? EXIT.usage : EXIT.ok;
  }
  const verb = verbs[sub];
  if (verb === undefined) throw new UsageError(`'vera ${group} ${sub}' is not a command; try: ${Object.keys(verbs).join(', ')}`);
  const args = parseArgs(rest, verb.flags, `vera ${group} ${sub}`);
  if (boolFlag(args, 'help')) {
    io.stdout(`${USAGE}\n`);
    return EXIT.ok;
  }
  return runClientCommand(`${group} ${sub}`, verb, args, io);
}

export const authVerb = { run: (argv: readonly string[], io: CliIO): Promise<number> => runVerb('auth', argv, io) };
export const userVerb = { run: (argv: readonly string[], io: CliIO): Promise<number> => runVerb('user', argv, io) };
export const roleVerb = { run: (argv: readonly string[], io: CliIO): Promise<number> => runVerb('role', argv, io) };
export const loginVerb = {
  run: async (argv: readonly string[], io: CliIO): Promise<number> => {
    const args = parseArgs(argv, login.flags, 'vera login');
    if (boolFlag(args, 'help')) {
      io.stdout(`${USAGE}\n`);
      return EXIT.ok;
    }
    return runClientCommand('login', login, args, io);
  },
};
