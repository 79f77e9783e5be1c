// Field checks shared by the families' command decoders. A leader validates a
// command before proposing it, and every member checks it again when it
// decodes the entry, with the same rules, so all reach the same verdict.
import { MAX_INDEX } from '../keys/index.js';
import { MEMBER_ID_PATTERN } from '../raft/config.js';
import { validatePath, validateSessionId } from '../protocol/index.js';
import { CommandError } from '../statemachine/family.js';

/** Largest limit a quota field may carry. */
export const MAX_QUOTA = 2 ** 48;

export function sessionField(value: unknown): string {
  const problem = validateSessionId(value);
  if (problem !== null) throw new CommandError(problem);
  return value as string;
}

/** A member id, as the cluster's configuration spells them. */
export function memberField(value: unknown, name: string): string {
  if (typeof value !== 'string' || !MEMBER_ID_PATTERN.test(value)) throw new CommandError(`${name} must be a member id (1-64 letters, digits, '.', '_' or '-')`);
  return value;
}

export function pathField(value: unknown, allowRoot: boolean): string {
  const problem = validatePath(value, { allowRoot });
  if (problem !== null) throw new CommandError(problem);
  return value as string;
}

export function integerField(value: unknown, name: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new CommandError(`${name} must be an integer in [${min}, ${max}]`);
  }
  return value;
}

export function indexField(value: unknown, name: string): number {
  return integerField(value, name, 0, MAX_INDEX);
}

export function boolField(value: unknown, name: string): boolean {
  if (typeof value !== 'boolean') throw new CommandError(`${name} must be a boolean`);
  return value;
}

/** A quota map with exactly `fields`, each a positive integer, in that order. */
export function quotaField<F extends string>(value: unknown, fields: readonly F[]): Record<F, number> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new CommandError('quota must be a map');
  const v = value as Record<string, unknown>;
  for (const key of Object.keys(v)) if (!(fields as readonly string[]).includes(key)) throw new CommandError(`quota has an unexpected field '${key}'`);
  const out = {} as Record<F, number>;
  for (const f of fields) out[f] = integerField(v[f], `quota.${f}`, 1, MAX_QUOTA);
  return out;
}
