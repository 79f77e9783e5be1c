// Session ids as the protocol and the store accept them: what keeps them usable
// inside LevelDB keys (no NUL, valid UTF-8, bounded length).
import { utf8Length } from './platform.js';

export const MAX_SESSION_ID_BYTES = 128;

// With the `u` flag a well-formed surrogate pair is one code point: this matches lone surrogates only.
const LONE_SURROGATE = /\p{Cs}/u;

/** Returns what is wrong with a session id, or null if it can be used in keys. */
export function validateSessionId(id: unknown): string | null {
  if (typeof id !== 'string' || id.length === 0) return 'session id must be a non-empty string';
  if (id.includes('\u0000')) return 'session id must not contain NUL';
  if (LONE_SURROGATE.test(id)) return 'session id must be valid UTF-8';
  if (utf8Length(id) > MAX_SESSION_ID_BYTES) {
    return `session id is longer than ${MAX_SESSION_ID_BYTES} bytes`;
  }
  return null;
}
