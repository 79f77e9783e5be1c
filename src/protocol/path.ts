// The one path validator shared by the server (request checking) and the state
// machine (command checking), so both reject exactly the same paths.
// Rules: ../shared/PROTOCOL.md "Paths and data".
import { utf8Length } from './platform.js';

export const MAX_PATH_BYTES = 1024;

export interface PathRules {
  /** The root '/' is valid only for `ls` and prefix watches. */
  readonly allowRoot: boolean;
}

// With the `u` flag a well-formed surrogate pair is one code point, so this
// matches only lone surrogates, which UTF-8 cannot represent (they would turn
// into U+FFFD and the path would no longer round-trip through its key).
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Non-root paths found valid lately (validity of a non-root path does not depend on the
 * rules). The same few paths come back on every request of a busy client; checking
 * them again was a few percent of a leader's time. Bounded: cleared when full.
 */
const recentlyValid = new Set<string>();
const MAX_REMEMBERED = 1024;

/** Returns a message naming what is wrong with `path`, or null when it is valid. */
export function validatePath(path: unknown, rules: PathRules): string | null {
  if (typeof path === 'string' && recentlyValid.has(path)) return null;
  const problem = checkPath(path, rules);
  if (problem === null && path !== '/') {
    if (recentlyValid.size >= MAX_REMEMBERED) recentlyValid.clear();
    recentlyValid.add(path as string);
  }
  return problem;
}

function checkPath(path: unknown, rules: PathRules): string | null {
  if (typeof path !== 'string') return 'path must be a string';
  if (!path.startsWith('/')) return `path must start with '/': ${JSON.stringify(path)}`;
  if (path.includes('\u0000')) return 'path must not contain a NUL character';
  if (LONE_SURROGATE.test(path)) return 'path must be valid UTF-8 (it contains a lone surrogate)';
  if (utf8Length(path) > MAX_PATH_BYTES) {
    return `path is longer than ${MAX_PATH_BYTES} UTF-8 bytes`;
  }
  if (path === '/') return rules.allowRoot ? null : "the root path '/' is not valid here";
  if (path.endsWith('/')) return `path must not end with '/': ${JSON.stringify(path)}`;
  for (const segment of path.slice(1).split('/')) {
    if (segment === '') return `path has an empty segment: ${JSON.stringify(path)}`;
    if (segment === '.' || segment === '..') {
      return `path must not contain a '${segment}' segment: ${JSON.stringify(path)}`;
    }
  }
  return null;
}

/** The parent of a valid non-root path ('/a/b' -> '/a', '/a' -> '/'). */
export function parentPath(path: string): string {
  const cut = path.lastIndexOf('/');
  return cut <= 0 ? '/' : path.slice(0, cut);
}

/** A valid path followed by each of its ancestors up to and including '/'. */
export function pathAndAncestors(path: string): string[] {
  const out = [path];
  let current = path;
  while (current !== '/') {
    current = parentPath(current);
    out.push(current);
  }
  return out;
}
