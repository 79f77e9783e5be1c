// The verbs command families add to `vera`, each loaded only when used: one
// line per family that has a command line.
import type { CliIO } from './io.js';

export interface FamilyVerb {
  /** Runs `vera <verb> <argv...>`; resolves with the exit code. */
  run(argv: readonly string[], io: CliIO): Promise<number>;
}

export const FAMILY_VERBS: Readonly<Record<string, () => Promise<FamilyVerb>>> = {
  journal: () => import('../families/journal/cli.js'),
  assign: () => import('../families/assign/cli.js'),
  hibernate: () => import('../families/hibernate/cli.js'),
  thaw: async () => (await import('../families/hibernate/cli.js')).thaw,
  auth: async () => (await import('../families/auth/cli.js')).authVerb,
  user: async () => (await import('../families/auth/cli.js')).userVerb,
  role: async () => (await import('../families/auth/cli.js')).roleVerb,
  login: async () => (await import('../families/auth/cli.js')).loginVerb,
  audit: () => import('../families/audit/cli.js'),
  put: async () => (await import('../families/kv/cli.js')).putVerb,
  txn: async () => (await import('../families/kv/cli.js')).txnVerb,
  lease: () => import('../families/lease/cli.js'),
  paths: () => import('../families/range/cli.js'),
};

/**
 * A verb a registered family declares (Family.cli): how a family added later reaches the
 * command line without an edit here. The registry is loaded only for a verb not named above.
 */
export async function registeredVerb(verb: string): Promise<FamilyVerb | undefined> {
  const { FAMILIES } = await import('../families/registry.js');
  const family = FAMILIES.find((f) => f.cli?.verbs.includes(verb));
  if (family === undefined) return undefined;
  const cli = (await import(/* @vite-ignore */ `../families/${family.name}/cli.js`)) as Record<string, unknown>;
  const found = verb === family.name ? cli.run : cli[`${verb}Verb`];
  if (typeof found !== 'function') throw new Error(`the ${family.name} family names the verb ${verb}, and its cli.ts exports no ${verb === family.name ? 'run' : `${verb}Verb`}`);
  return { run: found as FamilyVerb['run'] };
}

/** Every verb the registered families declare (for the list of commands in an error). */
export async function registeredVerbs(): Promise<string[]> {
  const { FAMILIES } = await import('../families/registry.js');
  return FAMILIES.flatMap((f) => f.cli?.verbs ?? []);
}
