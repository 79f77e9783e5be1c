// Passwords are kept only as scrypt hashes (RFC 7914), computed by the member
// that proposes the change and checked by the member a client logs in to, in
// libuv's thread pool: never in apply, never on the event loop. A correct
// check is remembered per (user, credential revision, password digest), so a
// client that reconnects often does not pay the slow hash each time, and a
// password change (a new revision) forgets it.
import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const N = 16384;
const R = 8;
const P = 1;
const KEY_BYTES = 32;
const SALT_BYTES = 16;
const FORMAT = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]{16,64})\$([A-Za-z0-9_-]{32,128})$/;

export { MAX_PASSWORD_BYTES } from './wire.js';

export function isHash(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const m = FORMAT.exec(value);
  return m !== null && Number(m[1]) === N && Number(m[2]) === R && Number(m[3]) === P;
}

function derive(password: string, salt: Buffer, keyBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password, salt, keyBytes, { N, r: R, p: P, maxmem: 64 * 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key))));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, KEY_BYTES);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export async function passwordMatches(password: string, hash: string): Promise<boolean> {
  const m = FORMAT.exec(hash);
  if (m === null) return false;
  const expected = Buffer.from(m[5]!, 'base64url');
  const key = await derive(password, Buffer.from(m[4]!, 'base64url'), expected.length);
  return timingSafeEqual(key, expected);
}

let dummy: Promise<string> | null = null;

/** A hash of a random password no one knows, made once: what an unknown user's password is checked against. */
function dummyHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(24).toString('base64url'));
  return dummy;
}

/** Correct checks remembered, bounded; the oldest is forgotten first. */
export class VerifiedPasswords {
  private readonly known = new Map<string, true>();
  /** Checks computing a hash now, by key: the same credentials checked twice at once share one hash. */
  private readonly pending = new Map<string, Promise<boolean>>();

  constructor(private readonly capacity = 4096) {}

  /** Hashes being computed now. */
  get busy(): number {
    return this.pending.size;
  }

  /** Whether these credentials were found correct before, or are being checked now (no new hash needed). */
  cheap(user: string, revision: number, password: string): boolean {
    const key = credentialKey(user, revision, password);
    return this.known.has(key) || this.pending.has(key);
  }

  /**
   * For a user that does not exist (or has no password): the same work as a wrong
   * password, against a hash of the same parameters, so the time taken tells no name.
   * Always false; shares `busy` with real checks.
   */
  async checkUnknown(user: string, password: string): Promise<false> {
    const key = `\u0001${credentialKey(user, 0, password)}`;
    let check = this.pending.get(key);
    if (check === undefined) {
      check = dummyHash()
        .then((hash) => passwordMatches(password, hash))
        .then(() => false)
        .finally(() => this.pending.delete(key));
      this.pending.set(key, check);
    }
    await check;
    return false;
  }

  async check(user: string, revision: number, password: string, hash: string): Promise<boolean> {
    const key = credentialKey(user, revision, password);
    if (this.known.has(key)) return true;
    let check = this.pending.get(key);
    if (check === undefined) {
      check = passwordMatches(password, hash).finally(() => this.pending.delete(key));
      this.pending.set(key, check);
    }
    if (!(await check)) return false;
    if (this.known.size >= this.capacity) this.known.delete(this.known.keys().next().value!);
    this.known.set(key, true);
    return true;
  }
}

function credentialKey(user: string, revision: number, password: string): string {
  return `${user}\u0000${revision}\u0000${createHash('sha256').update(password, 'utf8').digest('base64url')}`;
}
