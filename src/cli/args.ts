// A small strict argument parser: `--flag value`, `--flag=value`, boolean
// `--flag`, `--` to end flags. Unknown or repeated flags are usage errors, so a
// typo never silently falls back to a default.
import { UsageError } from './errors.js';

export interface FlagSpec {
  /** 'boolean' flags take no value; 'string' flags take exactly one. */
  readonly kind: 'string' | 'boolean';
  /** One-letter alias, e.g. 'h' for -h. */
  readonly short?: string;
}

export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

export interface ParsedArgs {
  readonly flags: ReadonlyMap<string, string | true>;
  readonly positionals: readonly string[];
}

export function parseArgs(argv: readonly string[], specs: FlagSpecs, command: string): ParsedArgs {
  const flags = new Map<string, string | true>();
  const positionals: string[] = [];
  const byShort = new Map(Object.entries(specs).flatMap(([name, spec]) => (spec.short ? [[spec.short, name] as const] : [])));
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    let name: string;
    let inline: string | undefined;
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      inline = eq < 0 ? undefined : arg.slice(eq + 1);
    } else if (/^-[a-zA-Z]$/.test(arg)) {
      const long = byShort.get(arg.slice(1));
      if (long === undefined) throw new UsageError(`unknown flag ${arg} for '${command}'`);
      name = long;
    } else {
      positionals.push(arg);
      continue;
    }
    const spec = specs[name];
    if (spec === undefined) throw new UsageError(`unknown flag --${name} for '${command}'`);
    if (flags.has(name)) throw new UsageError(`--${name} is given more than once`);
    if (spec.kind === 'boolean') {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value`);
      flags.set(name, true);
      continue;
    }
    let value = inline;
    if (value === undefined) {
      const following = argv[i + 1];
      if (following === undefined || following.startsWith('--')) throw new UsageError(`--${name} needs a value`);
      value = following;
      i++;
    }
    flags.set(name, value);
  }
  return { flags, positionals };
}

/** The string value of a flag, if given. */
export function stringFlag(args: ParsedArgs, name: string): string | undefined {
  const value = args.flags.get(name);
  return typeof value === 'string' ? value : undefined;
}

export function boolFlag(args: ParsedArgs, name: string): boolean {
  return args.flags.get(name) === true;
}
