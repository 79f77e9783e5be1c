// Authentication in the client library: log in for a token, and manage users
// and roles (which needs admin on 'auth', or authentication off).
import type { VeraClient } from '../../client/client.js';
import { typedCaller, type TypedCall } from '../../client/typed-ops.js';
import { AUTH_SCHEMAS, type LoginResult, type Permission, type QuotaSetting, type Rule, type UserView } from './wire.js';

export type { LoginResult, Permission, QuotaSetting, Rule, UserView } from './wire.js';

export class AuthClient {
  private readonly call: TypedCall<typeof AUTH_SCHEMAS>;

  constructor(client: VeraClient) {
    this.call = typedCaller(client, AUTH_SCHEMAS);
  }

  async status(): Promise<{ enabled: boolean; user?: string }> {
    return this.call('status', {});
  }

  /** A token for `user`, good on every member until it expires (default one hour) or the password changes. */
  async login(user: string, password: string, ttlMs?: number): Promise<LoginResult> {
    return this.call('login', { user, password, ...(ttlMs === undefined ? {} : { ttlMs }) });
  }

  /** Revokes `token` on every member (a logout); a token revoked already is no error. */
  async logout(token: string): Promise<void> {
    await this.call('logout', { token });
  }

  async enable(): Promise<void> {
    await this.call('enable', {});
  }

  async disable(): Promise<void> {
    await this.call('disable', {});
  }

  /** Adds a user; without a password it can authenticate only by client certificate. */
  async addUser(name: string, password?: string): Promise<void> {
    await this.call('userAdd', { name, ...(password === undefined ? {} : { password }) });
  }

  async setPassword(name: string, password: string): Promise<void> {
    await this.call('userPasswd', { name, password });
  }

  async removeUser(name: string): Promise<void> {
    await this.call('userRm', { name });
  }

  async grantRole(user: string, role: string): Promise<void> {
    await this.call('userGrant', { name: user, role });
  }

  async revokeRole(user: string, role: string): Promise<void> {
    await this.call('userRevoke', { name: user, role });
  }

  async users(): Promise<Array<{ name: string; roles: string[]; password: boolean }>> {
    return (await this.call('users', {})).users;
  }

  async addRole(name: string): Promise<void> {
    await this.call('roleAdd', { name });
  }

  async removeRole(name: string): Promise<void> {
    await this.call('roleRm', { name });
  }

  /** Grants (or with `deny`, denies) `perms` on `prefix` and everything below it. */
  async grantPermission(role: string, prefix: string, perms: readonly Permission[], deny = false): Promise<void> {
    await this.call('roleGrant', { name: role, prefix, perms: [...perms], deny });
  }

  async revokePermission(role: string, prefix: string): Promise<void> {
    await this.call('roleRevoke', { name: role, prefix });
  }

  async roles(): Promise<Array<{ name: string; rules: Rule[]; quota?: QuotaSetting }>> {
    return (await this.call('roles', {})).roles;
  }

  /** Users with what each stores and its own quota, and the default quota a user without one is held to. */
  async usersWithUsage(): Promise<{ users: UserView[]; defaultQuota: { items: number; bytes: number } }> {
    return this.call('users', {});
  }

  /** Sets how many list items and bytes `user` may store: a field left out is unchanged, null unsets it (its roles or the default decide). */
  async setUserQuota(user: string, quota: Partial<QuotaSetting>): Promise<void> {
    await this.call('userQuota', { name: user, ...quota });
  }

  /** The same for a role: a user without its own quota gets the largest of its roles'. */
  async setRoleQuota(role: string, quota: Partial<QuotaSetting>): Promise<void> {
    await this.call('roleQuota', { name: role, ...quota });
  }
}
