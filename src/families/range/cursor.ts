// A range.paths page that stops on a path its caller may not read cannot name
// that path as its `next`: the name is what the caller may not see. It answers a
// sealed cursor instead: `~` and the path, encrypted and authenticated (AES-256-GCM)
// under a key derived from the cluster's token key, so any member can open it and
// no client can read or forge one. Only with authentication on (otherwise every
// path is visible and `next` is always a plain path).
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { VeraError } from '../../protocol/index.js';

export const SEALED_PREFIX = '~';
const IV_BYTES = 12;
const TAG_BYTES = 16;

function keyOf(tokenKey: string): Buffer {
  return createHash('sha256').update(`range.paths cursor\u0000${tokenKey}`, 'utf8').digest();
}

export function sealCursor(tokenKey: string, path: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyOf(tokenKey), iv);
  const sealed = Buffer.concat([cipher.update(path, 'utf8'), cipher.final()]);
  return SEALED_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
}

/** The path a sealed cursor stands for; BAD_REQUEST when it was not made under this key. */
export function openCursor(tokenKey: string | null, cursor: string): string {
  const raw = Buffer.from(cursor.slice(SEALED_PREFIX.length), 'base64url');
  if (tokenKey !== null && raw.length > IV_BYTES + TAG_BYTES) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', keyOf(tokenKey), raw.subarray(0, IV_BYTES));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      // falls through to the refusal
    }
  }
  throw new VeraError('BAD_REQUEST', 'after is not a cursor this cluster gave (or authentication was turned off or on since): start the listing again');
}
