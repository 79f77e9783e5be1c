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
