// Checks on decoded values: that a frame is not nested too deeply and has no
// `__proto__` key (what the MessagePack scan guarantees for binary frames, done
// here for JSON ones), and that `data` is a value both encodings carry the same
// way, so a push from a JSON session reads back identically from a MessagePack
// one and the other way round.
import type { ScanProblem } from './msgpack.js';

// With the `u` flag a surrogate pair is one code point: this matches lone
// surrogates only, which UTF-8 (MessagePack strings) cannot represent.
const LONE_SURROGATE = /\p{Cs}/u;
const MAX_LABEL_CHARS = 200;

interface WalkRules {
  /** Containers nested deeper than this are rejected (the outermost container is level 1). */
  readonly maxDepth: number;
  /** Also require JSON-compatible scalars, well-formed strings and plain objects. */
  readonly strictValues: boolean;
}

/** Depth and `__proto__` check of a decoded JSON frame; `maxDepth` counts the frame's own object as 1. */
export function findStructureProblem(frame: unknown, maxDepth: number): ScanProblem | null {
  return walk(frame, 'frame', 1, { maxDepth, strictValues: false });
}

/** Null when `data` is a JSON-compatible value nested at most `maxDepth` levels, else what is wrong and where. */
export function findDataProblem(data: unknown, where: string, maxDepth: number): ScanProblem | null {
  return walk(data, where, 1, { maxDepth, strictValues: true });
}

// Recursion is bounded by rules.maxDepth, never by the input.
function walk(value: unknown, where: string, depth: number, rules: WalkRules): ScanProblem | null {
  if (value === null || typeof value === 'boolean') return null;
  if (typeof value === 'number') {
    if (rules.strictValues && !Number.isFinite(value)) return { where, message: `${value} is not a JSON number` };
    return null;
  }
  if (typeof value === 'string') {
    if (rules.strictValues && LONE_SURROGATE.test(value)) return { where, message: 'string contains a lone surrogate (not valid UTF-8)' };
    return null;
  }
  if (typeof value === 'bigint') {
    // What a 64-bit MessagePack integer decodes to when a double cannot hold it (msgpack.ts).
    if (rules.strictValues && (value < -(2n ** 63n) || value >= 2n ** 64n)) return { where, message: `${value} is beyond a 64-bit integer` };
    return null;
  }
  if (typeof value !== 'object') {
    return rules.strictValues ? { where, message: `unsupported value of type ${typeof value}` } : null;
  }
  if (value instanceof Uint8Array) return null; // binary, carried as it is
  if (depth > rules.maxDepth) {
    // A frame's own object is not data nesting, so frame limits are one level more than they say.
    const levels = rules.strictValues ? rules.maxDepth : rules.maxDepth - 1;
    return { where, message: `nested deeper than ${levels} levels` };
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = walk(value[i], label(where, `[${i}]`), depth + 1, rules);
      if (problem !== null) return problem;
    }
    return null;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (rules.strictValues && proto !== Object.prototype && proto !== null) {
    return { where, message: `unsupported value (${(value as object).constructor?.name ?? 'object'})` };
  }
  for (const key of Object.keys(value)) {
    const at = label(where, where === 'frame' ? key : `.${key}`);
    if (key === '__proto__') return { where: at, message: "the key '__proto__' is not allowed" };
    if (rules.strictValues && LONE_SURROGATE.test(key)) return { where: at, message: 'key contains a lone surrogate (not valid UTF-8)' };
    const problem = walk((value as Record<string, unknown>)[key], at, depth + 1, rules);
    if (problem !== null) return problem;
  }
  return null;
}

function label(where: string, suffix: string): string {
  if (where.length > MAX_LABEL_CHARS) return where;
  return where === 'frame' ? suffix : where + suffix;
}
