// The auth family's client protocol: the ops it adds and how each request is
// checked (docs/protocol.md "Extension: authentication ops", docs/security.md).
// Also the names and rules' shapes client and server share: this file and the
// protocol package are all a client loads of the family.
import { buildersOf, defineOp, invalid, type RequestBuilder, utf8Length } from '../../protocol/index.js';

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

/** The password field, or undefined when it is absent. */
function optionalPassword(f: Fields): string | undefined {
  return f.password === undefined ? undefined : password(f);
}

function password(f: Fields): string {
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
function limit(f: Fields, field: 'items' | 'bytes'): { items?: number | null; bytes?: number | null } {
  const v = f[field];
  if (v === undefined) return {};
  if (v !== null && (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > MAX_QUOTA_LIMIT)) throw invalid(`${field} must be null or an integer from 0 to ${MAX_QUOTA_LIMIT}`);
  return { [field]: v };
}

/** A storage quota set for a user or role; null: not set (roles or the default decide). */
export interface QuotaSetting {
  readonly items: number | null;
  readonly bytes: number | null;
}

export interface UserView {
  readonly name: string;
  readonly roles: string[];
  readonly password: boolean;
  /** What the user stores: list items and their stored bytes. */
  readonly stored: { readonly items: number; readonly bytes: number };
  readonly quota?: QuotaSetting;
}

export interface RoleView {
  readonly name: string;
  readonly rules: Rule[];
  readonly quota?: QuotaSetting;
}

export interface LoginResult {
  readonly token: string;
  /** Milliseconds since the epoch when the token stops working. */
  readonly expiresAt: number;
  readonly user: string;
}

/** The reply of an op that only changes something. */
export type Done = Readonly<Record<string, never>>;

interface QuotaRequest {
  name: string;
  items?: number | null;
  bytes?: number | null;
}

const quotaOp = (name: string) =>
  defineOp<QuotaRequest, Done>({
    name,
    fields: ['name', 'items', 'bytes'],
    parse: (f) => {
      if (f.items === undefined && f.bytes === undefined) throw invalid('give items, bytes or both (null unsets one)');
      return { name: named(f, 'name'), ...limit(f, 'items'), ...limit(f, 'bytes') };
    },
  });

const nameOnly = (name: string) => defineOp<{ name: string }, Done>({ name, fields: ['name'], parse: (f) => ({ name: named(f, 'name') }) });
const nameAndRole = (name: string) => defineOp<{ name: string; role: string }, Done>({ name, fields: ['name', 'role'], parse: (f) => ({ name: named(f, 'name'), role: named(f, 'role') }) });
const noFields = <Res extends object>(name: string, read = false) => defineOp<Record<string, never>, Res>({ name, read, fields: [], parse: () => ({}) });

/** The auth family's ops, as the client and the server both check them. */
export const AUTH_SCHEMAS = {
  status: noFields<{ enabled: boolean; user?: string }>('auth.status', true),
  login: defineOp<{ user: string; password: string; ttlMs?: number }, LoginResult>({
    name: 'auth.login',
    fields: ['user', 'password', 'ttlMs'],
    parse: (f) => {
      const ttl = f.ttlMs;
      if (ttl !== undefined && (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1000 || ttl > MAX_TOKEN_TTL_MS)) throw invalid(`ttlMs must be an integer from 1000 to ${MAX_TOKEN_TTL_MS}`);
      return { user: named(f, 'user'), password: password(f), ...(ttl === undefined ? {} : { ttlMs: ttl }) };
    },
  }),
  logout: defineOp<{ token: string }, Done>({
    name: 'auth.logout',
    fields: ['token'],
    parse: (f) => {
      if (typeof f.token !== 'string' || f.token.length === 0 || f.token.length > MAX_TOKEN_LENGTH) throw invalid(`token must be a non-empty string of at most ${MAX_TOKEN_LENGTH} characters`);
      return { token: f.token };
    },
  }),
  enable: noFields<Done>('auth.enable'),
  disable: noFields<Done>('auth.disable'),
  userAdd: defineOp<{ name: string; password?: string }, Done>({
    name: 'auth.userAdd',
    fields: ['name', 'password'],
    parse: (f) => {
      const pw = optionalPassword(f);
      return { name: named(f, 'name'), ...(pw === undefined ? {} : { password: pw }) };
    },
  }),
  userPasswd: defineOp<{ name: string; password: string }, Done>({ name: 'auth.userPasswd', fields: ['name', 'password'], parse: (f) => ({ name: named(f, 'name'), password: password(f) }) }),
  userRm: nameOnly('auth.userRm'),
  userGrant: nameAndRole('auth.userGrant'),
  userRevoke: nameAndRole('auth.userRevoke'),
  users: noFields<{ users: UserView[]; defaultQuota: { items: number; bytes: number } }>('auth.users', true),
  roleAdd: nameOnly('auth.roleAdd'),
  roleRm: nameOnly('auth.roleRm'),
  roleGrant: defineOp<{ name: string; prefix: string; perms: Permission[]; deny: boolean }, Done>({
    name: 'auth.roleGrant',
    fields: ['name', 'prefix', 'perms', 'deny'],
    parse: (f) => {
      const perms = f.perms;
      if (!Array.isArray(perms) || perms.length === 0 || perms.length > 4 || !perms.every(isPermission) || new Set(perms).size !== perms.length) {
        throw invalid('perms must be a non-empty list of distinct read, write, watch, admin');
      }
      if (f.deny !== undefined && typeof f.deny !== 'boolean') throw invalid('deny must be a boolean');
      return { name: named(f, 'name'), prefix: prefix(f), perms, deny: f.deny === true };
    },
  }),
  roleRevoke: defineOp<{ name: string; prefix: string }, Done>({ name: 'auth.roleRevoke', fields: ['name', 'prefix'], parse: (f) => ({ name: named(f, 'name'), prefix: prefix(f) }) }),
  roles: noFields<{ roles: RoleView[] }>('auth.roles', true),
  userQuota: quotaOp('auth.userQuota'),
  roleQuota: quotaOp('auth.roleQuota'),
};

/** The ops' request builders, by op name (the frame decoder's and a raw caller's view of the same schemas). */
export const AUTH_OPS: ReadonlyMap<string, RequestBuilder> = buildersOf(Object.values(AUTH_SCHEMAS));
