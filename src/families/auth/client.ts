// Authentication in the client library: log in for a token, and manage users
// and roles (which needs admin on 'auth', or authentication off).
import type { VeraClient } from '../../client/client.js';
import { familyCaller, type FamilyCall } from '../../client/family-caller.js';
import { AUTH_OPS, type Permission, type Rule } from './wire.js';

export type { Permission, Rule } from './wire.js';

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

/** Ops that change nothing: sent again after a lost connection, as a get is. */
const READS: ReadonlySet<string> = new Set(['auth.status', 'auth.users', 'auth.roles']);

export interface LoginResult {
  readonly token: string;
  /** Milliseconds since the epoch when the token stops working. */
  readonly expiresAt: number;
  readonly user: string;
}

export class AuthClient {
  private readonly call: FamilyCall;

  constructor(client: VeraClient) {
    this.call = familyCaller(client, AUTH_OPS, READS);
  }

  async status(): Promise<{ enabled: boolean; user?: string }> {
    return (await this.call('auth.status', {})) as { enabled: boolean; user?: string };
  }

  /** A token for `user`, good on every member until it expires (default one hour) or the password changes. */
  async login(user: string, password: string, ttlMs?: number): Promise<LoginResult> {
    return (await this.call('auth.login', { user, password, ...(ttlMs === undefined ? {} : { ttlMs }) })) as unknown as LoginResult;
  }

  /** Revokes `token` on every member (a logout); a token revoked already is no error. */
  async logout(token: string): Promise<void> {
    await this.call('auth.logout', { token });
  }

  async enable(): Promise<void> {
    await this.call('auth.enable', {});
  }

  async disable(): Promise<void> {
    await this.call('auth.disable', {});
  }

  /** Adds a user; without a password it can authenticate only by client certificate. */
  async addUser(name: string, password?: string): Promise<void> {
    await this.call('auth.userAdd', { name, ...(password === undefined ? {} : { password }) });
  }

  async setPassword(name: string, password: string): Promise<void> {
    await this.call('auth.userPasswd', { name, password });
  }

  async removeUser(name: string): Promise<void> {
    await this.call('auth.userRm', { name });
  }

  async grantRole(user: string, role: string): Promise<void> {
    await this.call('auth.userGrant', { name: user, role });
  }

  async revokeRole(user: string, role: string): Promise<void> {
    await this.call('auth.userRevoke', { name: user, role });
  }

  async users(): Promise<Array<{ name: string; roles: string[]; password: boolean }>> {
    return (await this.call('auth.users', {})).users as Array<{ name: string; roles: string[]; password: boolean }>;
  }

  async addRole(name: string): Promise<void> {
    await this.call('auth.roleAdd', { name });
  }

  async removeRole(name: string): Promise<void> {
    await this.call('auth.roleRm', { name });
  }

  /** Grants (or with `deny`, denies) `perms` on `prefix` and everything below it. */
  async grantPermission(role: string, prefix: string, perms: readonly Permission[], deny = false): Promise<void> {
    await this.call('auth.roleGrant', { name: role, prefix, perms: [...perms], deny });
  }

  async revokePermission(role: string, prefix: string): Promise<void> {
    await this.call('auth.roleRevoke', { name: role, prefix });
  }

  async roles(): Promise<Array<{ name: string; rules: Rule[]; quota?: QuotaSetting }>> {
    return (await this.call('auth.roles', {})).roles as Array<{ name: string; rules: Rule[]; quota?: QuotaSetting }>;
  }

  /** Users with what each stores and its own quota, and the default quota a user without one is held to. */
  async usersWithUsage(): Promise<{ users: UserView[]; defaultQuota: { items: number; bytes: number } }> {
    return (await this.call('auth.users', {})) as unknown as { users: UserView[]; defaultQuota: { items: number; bytes: number } };
  }

  /** Sets how many list items and bytes `user` may store: a field left out is unchanged, null unsets it (its roles or the default decide). */
  async setUserQuota(user: string, quota: Partial<QuotaSetting>): Promise<void> {
    await this.call('auth.userQuota', { name: user, ...quota });
  }

  /** The same for a role: a user without its own quota gets the largest of its roles'. */
  async setRoleQuota(role: string, quota: Partial<QuotaSetting>): Promise<void> {
    await this.call('auth.roleQuota', { name: role, ...quota });
  }
}
