// Generators shared by property tests. Each produces only what the server accepts, so a
// property failure is a real bug and never the generator wandering into rejected input.
import fc from 'fast-check';

/** True when `value` holds a `__proto__` key at any depth: the wire protocol refuses those. */
export function hasProtoKey(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  return Object.keys(value).includes('__proto__') || Object.values(value).some(hasProtoKey);
}

/**
 * Item data either encoding can carry: JSON values without `__proto__` keys, normalised
 * through JSON (which cannot carry -0).
 */
export function wireData(maxDepth: number): fc.Arbitrary<unknown> {
  return fc
    .jsonValue({ maxDepth, stringUnit: 'grapheme' })
    .map((v) => JSON.parse(JSON.stringify(v)) as unknown)
    .filter((v) => !hasProtoKey(v));
}
