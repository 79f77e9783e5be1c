// The auth family's client protocol: the ops it adds and how each request is
// checked (docs/protocol.md "Extension: authentication ops", docs/security.md).
// Also the names and rules' shapes client and server share: this file and the
// protocol package are all a client loads of the family.
import { invalid, type FamilyRequest, type RequestBuilder, utf8Length, onlyFields } from '../../protocol/index.js';

export const PERMISSIONS = ['read', 'write', 'watch', 'admin'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export interface Rule {
  readonly prefix: string;
  readonly perms: readonly Permission[];
  readonly deny: boolean;
}

export const MAX_RULE_PREFIX_BYTES = 1100;

/**
 * Resources that are one thing each: 'cluster' (membership, leader transfer, defrag,
 * backups), 'auth' (users and roles) and 'audit' (the audit log).
 */
export const WHOLE_RESOURCES = ['cluster', 'auth', 'audit'] as const;

/** A message naming what is wrong with `prefix` as a rule prefix, or null. */
export function prefixProblem(prefix: unknown): string | null {
  if (typeof prefix !== 'string' || prefix.length === 0) return 'a rule prefix must be a non-empty string';
  if (utf8Length(prefix) > MAX_RULE_PREFIX_BYTES) return `a rule prefix must be at most ${MAX_RULE_PREFIX_BYTES} bytes`;
  if (prefix.includes('\u0000')) return 'a rule prefix must not contain NUL';
  if (prefix === '*' || prefix.startsWith('/') || (WHOLE_RESOURCES as readonly string[]).includes(prefix)) return null;
  if (/^[a-z][a-z0-9-]*:/.test(prefix)) return null;
  const hint = /^[A-Za-z0-9]/.test(prefix) ? ` (a path starts with '/': did you mean /${prefix}?)` : '';
  return `a rule prefix is '*', a path ('/app'), a family's resources ('journal:', 'journal:orders') or one of ${WHOLE_RESOURCES.join(', ')}, not ${JSON.stringify(prefix)}${hint}`;
}

export const MAX_NAME_LENGTH = 128;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]*$/;

/** A message naming what is wrong with a user or role name, or null. */
export function nameProblem(value: unknown, what: string): string | null {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_NAME_LENGTH || !NAME.test(value)) {
    return `${what} must be 1-${MAX_NAME_LENGTH} characters of letters, digits and . _ @ - (starting with a letter or digit)`;
  }
  return null;
}

export const MAX_PASSWORD_BYTES = 1024;

export function isPermission(value: unknown): value is Permission {
  return typeof value === 'string' && (PERMISSIONS as readonly string[]).includes(value);
}


type Fields = Readonly<Record<string, unknown>>;

/** The longest a login's token may last, and how long it lasts unless asked. */
export const MAX_TOKEN_TTL_MS = 7 * 24 * 3600 * 1000;
export const DEFAULT_TOKEN_TTL_MS = 3600 * 1000;
/** Longer than any token a login issues. */
export const MAX_TOKEN_LENGTH = 2048;

function named(f: Fields, field: string): string {
  const problem = nameProblem(f[field], field);
  if (problem !== null) throw invalid(problem);
  return f[field] as string;
}

function password(f: Fields, required: boolean): string | undefined {
  if (f.password === undefined && !required) return undefined;
  if (typeof f.password !== 'string' || f.password.length === 0 || utf8Length(f.password) > MAX_PASSWORD_BYTES) {
    throw invalid(`password must be a non-empty string of at most ${MAX_PASSWORD_BYTES} bytes`);
  }
  return f.password;
}

function prefix(f: Fields): string {
  const problem = prefixProblem(f.prefix);
  if (problem !== null) throw invalid(problem);
  return f.prefix as string;
}

/** The largest storage limit a quota op may set. */
export const MAX_QUOTA_LIMIT = 2 ** 48;

/** A quota op's items and bytes: each absent (unchanged), null (not set: roles or the default decide) or a count. */
function limit(f: Fields, field: 'items' | 'bytes'): { [k: string]: number | null } {
  const v = f[field];
  if (v === undefined) return {};
  if (v !== null && (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > MAX_QUOTA_LIMIT)) throw invalid(`${field} must be null or an integer from 0 to ${MAX_QUOTA_LIMIT}`);
  return { [field]: v };
}

const quotaOp =
  (op: string): RequestBuilder =>
  (f, id) => {
    onlyFields(f, ['name', 'items', 'bytes']);
    if (f.items === undefined && f.bytes === undefined) throw invalid('give items, bytes or both (null unsets one)');
    return { id, op, name: named(f, 'name'), ...limit(f, 'items'), ...limit(f, 'bytes') } as FamilyRequest;
  };

const plain =
  (op: string, fields: readonly string[]): RequestBuilder =>
  (f, id) => {
    onlyFields(f, fields);
    const out: Record<string, unknown> = { id, op };
    for (const field of fields) out[field] = named(f, field);
    return out as FamilyRequest;
  };

export const AUTH_OPS: ReadonlyMap<string, RequestBuilder> = new Map<string, RequestBuilder>([
  ['auth.status', (f, id) => (onlyFields(f, []), { id, op: 'auth.status' })],
  [
    'auth.login',
    (f, id) => {
      onlyFields(f, ['user', 'password', 'ttlMs']);
      const ttl = f.ttlMs;
      if (ttl !== undefined && (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1000 || ttl > MAX_TOKEN_TTL_MS)) throw invalid(`ttlMs must be an integer from 1000 to ${MAX_TOKEN_TTL_MS}`);
      return { id, op: 'auth.login', user: named(f, 'user'), password: password(f, true), ...(ttl === undefined ? {} : { ttlMs: ttl }) };
    },
  ],
  [
    'auth.logout',
    (f, id) => {
      onlyFields(f, ['token']);
      if (typeof f.token !== 'string' || f.token.length === 0 || f.token.length > MAX_TOKEN_LENGTH) throw invalid(`token must be a non-empty string of at most ${MAX_TOKEN_LENGTH} characters`);
      return { id, op: 'auth.logout', token: f.token };
    },
  ],
  ['auth.enable', (f, id) => (onlyFields(f, []), { id, op: 'auth.enable' })],
  ['auth.disable', (f, id) => (onlyFields(f, []), { id, op: 'auth.disable' })],
  [
    'auth.userAdd',
    (f, id) => {
      onlyFields(f, ['name', 'password']);
      const pw = password(f, false);
      return { id, op: 'auth.userAdd', name: named(f, 'name'), ...(pw === undefined ? {} : { password: pw }) };
    },
  ],
  ['auth.userPasswd', (f, id) => (onlyFields(f, ['name', 'password']), { id, op: 'auth.userPasswd', name: named(f, 'name'), password: password(f, true) })],
  ['auth.userRm', plain('auth.userRm', ['name'])],
  ['auth.userGrant', plain('auth.userGrant', ['name', 'role'])],
  ['auth.userRevoke', plain('auth.userRevoke', ['name', 'role'])],
  ['auth.users', (f, id) => (onlyFields(f, []), { id, op: 'auth.users' })],
  ['auth.roleAdd', plain('auth.roleAdd', ['name'])],
  ['auth.roleRm', plain('auth.roleRm', ['name'])],
  [
    'auth.roleGrant',
    (f, id) => {
      onlyFields(f, ['name', 'prefix', 'perms', 'deny']);
      const perms = f.perms;
      if (!Array.isArray(perms) || perms.length === 0 || perms.length > 4 || !perms.every(isPermission) || new Set(perms).size !== perms.length) {
        throw invalid('perms must be a non-empty list of distinct read, write, watch, admin');
      }
      if (f.deny !== undefined && typeof f.deny !== 'boolean') throw invalid('deny must be a boolean');
      return { id, op: 'auth.roleGrant', name: named(f, 'name'), prefix: prefix(f), perms, deny: f.deny === true };
    },
  ],
  ['auth.roleRevoke', (f, id) => (onlyFields(f, ['name', 'prefix']), { id, op: 'auth.roleRevoke', name: named(f, 'name'), prefix: prefix(f) })],
  ['auth.roles', (f, id) => (onlyFields(f, []), { id, op: 'auth.roles' })],
  ['auth.userQuota', quotaOp('auth.userQuota')],
  ['auth.roleQuota', quotaOp('auth.roleQuota')],
]);
