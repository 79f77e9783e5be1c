// The permission matrix: every client op of every family, and every HTTP
// endpoint, tried as each kind of caller. The permission each op needs is
// written out here by hand (an oracle independent of the ops' own `needs`
// declarations), and for each op three users are given roles made from it:
//   - a role with every other permission on the op's resource but not this one,
//   - a role allowing everything above the resource with an explicit deny on it,
//   - a role granting exactly the permission on exactly the resource.
// The first two must be refused with FORBIDDEN and change nothing (root reads
// the same before and after); the third must get the op's own answer. A user
// with no role at all ("wrong user") is refused too. Callers without
// credentials, with a wrong password or with an expired token never get past
// hello (WebSocket) or are refused by every HTTP endpoint.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireClient, type Reply } from '../server/wire-client.js';
import type { VeraProcess } from '../support/vera-process.js';
import { securedServer } from './secured.js';
import { FAMILIES } from '../../src/families/registry.js';
import { loadPlugins } from '../../src/server/front/plugin-part.js';

type Perm = 'read' | 'write' | 'watch' | 'admin';
const PERMS: readonly Perm[] = ['read', 'write', 'watch', 'admin'];

/** Names an op's case uses, unique per op so the cases do not disturb each other. */
interface Names {
  readonly n: number;
  readonly base: string;
  readonly path: string;
  readonly journal: string;
  readonly service: string;
  readonly node: string;
  readonly email: string;
  readonly unit: string;
  readonly user: string;
  readonly role: string;
}

interface OpCase {
  readonly op: string;
  readonly perm: Perm;
  /** The resource the permission is needed on, and a prefix above it (for the deny-below-allow role). */
  readonly resource: (c: Names) => string;
  readonly parent: (c: Names) => string;
  /** What root prepares first; returns extra fields the request needs (a lease, an index). */
  readonly setup?: (root: WireClient, c: Names) => Promise<Record<string, unknown>>;
  readonly fields: (c: Names, extra: Record<string, unknown>) => Record<string, unknown>;
  /** The correct role's outcome: ok, or the op's own error once past the check. */
  readonly allowed?: string;
}

const onPath = (c: Names): string => c.path;
const above = (c: Names): string => c.base;
const onJournal = (c: Names): string => `journal:${c.journal}`;
const journals = (): string => 'journal:';
const onService = (c: Names): string => `assign:${c.service}`;
const services = (): string => 'assign:';
const everything = (): string => '*';
const onCounter = (c: Names): string => `counter:c${c.n}`;
const counters = (): string => 'counter:';

async function ok(w: WireClient, op: string, fields: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  return w.call(op, fields);
}

// A claim's lease must not time out while the file runs (minutes on a loaded machine): the timeout
// would change journal.list between a denied op's two reads of the state, a change nobody's op made.
const NO_TIMEOUT_WHILE_TESTING_MS = 24 * 3_600_000;
const journalWith = async (root: WireClient, c: Names, items = 0): Promise<Record<string, unknown>> => {
  await ok(root, 'journal.create', { name: c.journal, timeoutMs: NO_TIMEOUT_WHILE_TESTING_MS });
  if (items > 0) await ok(root, 'journal.add', { name: c.journal, items: [{ key: 'k', data: 'job' }] });
  return {};
};
const claimed = async (root: WireClient, c: Names): Promise<Record<string, unknown>> => {
  await journalWith(root, c, 1);
  const claim = await ok(root, 'journal.claim', { name: c.journal, max: 1 });
  return { lease: claim.lease };
};
const serviceWith = async (root: WireClient, c: Names, withNode = false): Promise<Record<string, unknown>> => {
  await ok(root, 'assign.service', { service: c.service });
  if (withNode) await ok(root, 'assign.addNode', { service: c.service, node: c.node, capacity: 10 });
  return {};
};
const serviceWithPurgeJob = async (root: WireClient, c: Names): Promise<Record<string, unknown>> => {
  await serviceWith(root, c);
  await ok(root, 'assign.purgeStart', { service: c.service, graceMs: 0 });
  // Ended (nothing to purge: one step), so the leader's steps do not change what a denied caller's check compares.
  await expect.poll(async () => (await ok(root, 'assign.purgeStatus', { service: c.service })).state, { timeout: 20_000, interval: 50 }).toBe('done');
  return {};
};
const persisted = async (root: WireClient, c: Names): Promise<Record<string, unknown>> => {
  const pushed = await ok(root, 'push', { path: c.path, data: 'v', persistent: true });
  return { index: (pushed.item as { index: number }).index };
};

const NO_LEASE = 'lease-AAAAAAAAAAAAAAAAAAAAAA';

/** Family ops the table leaves out, and why. */
const NOT_IN_TABLE: Readonly<Record<string, string>> = {
  'auth.login': 'needs no permission: it is how a caller gets one',
  'auth.status': 'needs no permission: it tells the caller who it is',
  'auth.logout': 'needs no permission: the token it revokes is the proof (test/security/ui-hardening.test.ts)',
  'auth.disable': 'it would switch the table off: checked by the last test of this file',
};

const OPS: readonly OpCase[] = [
  // lists and watches
  { op: 'push', perm: 'write', resource: onPath, parent: above, fields: (c) => ({ path: c.path, data: 1, persistent: true }) },
  { op: 'get', perm: 'read', resource: onPath, parent: above, setup: persisted, fields: (c) => ({ path: c.path }) },
  { op: 'ls', perm: 'read', resource: above, parent: () => '/m', setup: persisted, fields: (c) => ({ path: c.base }) },
  { op: 'delete', perm: 'write', resource: onPath, parent: above, setup: persisted, fields: (c, x) => ({ path: c.path, index: x.index }) },
  { op: 'watch', perm: 'watch', resource: onPath, parent: above, fields: (c) => ({ path: c.path }) },
  { op: 'watch', perm: 'watch', resource: above, parent: () => '/m', fields: (c) => ({ path: c.base, prefix: true }) },
  // put and transactions: a compare reads its list, a write writes it
  { op: 'put', perm: 'write', resource: onPath, parent: above, fields: (c) => ({ path: c.path, data: 1 }) },
  { op: 'txn', perm: 'write', resource: onPath, parent: above, fields: (c) => ({ success: [{ op: 'put', path: c.path, data: 1 }] }) },
  { op: 'txn', perm: 'read', resource: onPath, parent: above, setup: persisted, fields: (c) => ({ compare: [{ path: c.path, target: 'exists', value: true }] }) },
  // ranges
  { op: 'range.paths', perm: 'read', resource: above, parent: () => '/m', setup: persisted, fields: (c) => ({ prefix: c.base }) },
  { op: 'range.items', perm: 'read', resource: onPath, parent: above, setup: persisted, fields: (c) => ({ path: c.path }) },
  // leases (a lease no one holds: past the check, the op's own NOT_FOUND)
  { op: 'lease.grant', perm: 'write', resource: () => 'lease:', parent: everything, fields: () => ({ ttlMs: 60_000 }) },
  { op: 'lease.keepAlive', perm: 'write', resource: () => 'lease:', parent: everything, fields: () => ({ lease: NO_LEASE }), allowed: 'NOT_FOUND' },
  { op: 'lease.revoke', perm: 'write', resource: () => 'lease:', parent: everything, fields: () => ({ lease: NO_LEASE }), allowed: 'NOT_FOUND' },
  { op: 'lease.show', perm: 'read', resource: () => 'lease:', parent: everything, fields: () => ({ lease: NO_LEASE }), allowed: 'NOT_FOUND' },
  // journal
  { op: 'journal.create', perm: 'admin', resource: onJournal, parent: journals, fields: (c) => ({ name: c.journal }) },
  { op: 'journal.configure', perm: 'admin', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ name: c.journal, priority: 7 }) },
  { op: 'journal.drop', perm: 'admin', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c, 1), fields: (c) => ({ name: c.journal }) },
  { op: 'journal.list', perm: 'read', resource: journals, parent: everything, fields: () => ({}) },
  { op: 'journal.show', perm: 'read', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ name: c.journal }) },
  { op: 'journal.flagged', perm: 'read', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ name: c.journal }) },
  { op: 'journal.flags', perm: 'watch', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ name: c.journal }) },
  { op: 'journal.events', perm: 'watch', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ name: c.journal }) },
  { op: 'journal.add', perm: 'write', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ name: c.journal, items: [{ key: 'a', data: 1 }] }) },
  { op: 'journal.claim', perm: 'write', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c, 1), fields: (c) => ({ name: c.journal }) },
  { op: 'journal.extend', perm: 'write', resource: onJournal, parent: journals, setup: claimed, fields: (c, x) => ({ name: c.journal, key: 'k', lease: x.lease }) },
  { op: 'journal.done', perm: 'write', resource: onJournal, parent: journals, setup: claimed, fields: (c, x) => ({ name: c.journal, key: 'k', lease: x.lease }) },
  { op: 'journal.release', perm: 'write', resource: onJournal, parent: journals, setup: claimed, fields: (c, x) => ({ name: c.journal, key: 'k', lease: x.lease }) },
  { op: 'journal.cancelWait', perm: 'write', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ name: c.journal }) },
  { op: 'journal.doneMany', perm: 'write', resource: onJournal, parent: journals, setup: claimed, fields: (c, x) => ({ name: c.journal, items: [{ key: 'k', lease: x.lease }] }) },
  { op: 'journal.requeue', perm: 'admin', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ name: c.journal, key: 'k' }), allowed: 'NOT_FOUND' },
  { op: 'journal.forget', perm: 'admin', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ name: c.journal, key: 'k' }), allowed: 'NOT_FOUND' },
  { op: 'journal.limits', perm: 'admin', resource: journals, parent: everything, fields: () => ({ maxJournals: 500 }) },
  { op: 'journal.progress', perm: 'write', resource: onJournal, parent: journals, setup: claimed, fields: (c, x) => ({ name: c.journal, key: 'k', lease: x.lease, progress: 50 }) },
  { op: 'journal.remove', perm: 'write', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c, 1), fields: (c) => ({ name: c.journal, key: 'k' }) },
  { op: 'journal.get', perm: 'read', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c, 1), fields: (c) => ({ name: c.journal, key: 'k' }) },
  { op: 'journal.items', perm: 'read', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c, 1), fields: (c) => ({ name: c.journal, status: 'waiting' }) },
  { op: 'journal.result', perm: 'read', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ name: c.journal, key: 'k' }), allowed: 'NOT_FOUND' },
  { op: 'journal.pause', perm: 'admin', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ name: c.journal }) },
  { op: 'journal.resume', perm: 'admin', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ name: c.journal }) },
  { op: 'journal.drain', perm: 'admin', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c, 1), fields: (c) => ({ name: c.journal }) },
  { op: 'journal.schedule', perm: 'admin', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ name: c.journal, schedule: 's', everyMs: 3_600_000 }) },
  { op: 'journal.schedules', perm: 'read', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ name: c.journal }) },
  { op: 'journal.unschedule', perm: 'admin', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ name: c.journal, schedule: 's' }), allowed: 'NOT_FOUND' },
  // node assignment
  { op: 'assign.service', perm: 'admin', resource: onService, parent: services, fields: (c) => ({ service: c.service }) },
  { op: 'assign.services', perm: 'read', resource: services, parent: everything, fields: () => ({}) },
  { op: 'assign.addNode', perm: 'admin', resource: onService, parent: services, setup: (r, c) => serviceWith(r, c), fields: (c) => ({ service: c.service, node: c.node, capacity: 5 }) },
  { op: 'assign.updateNode', perm: 'admin', resource: onService, parent: services, setup: (r, c) => serviceWith(r, c, true), fields: (c) => ({ service: c.service, node: c.node, capacity: 20 }) },
  { op: 'assign.removeNode', perm: 'admin', resource: onService, parent: services, setup: (r, c) => serviceWith(r, c, true), fields: (c) => ({ service: c.service, node: c.node }) },
  { op: 'assign.decommission', perm: 'admin', resource: onService, parent: services, setup: (r, c) => serviceWith(r, c, true), fields: (c) => ({ service: c.service, node: c.node }) },
  { op: 'assign.purge', perm: 'admin', resource: onService, parent: services, setup: (r, c) => serviceWith(r, c), fields: (c) => ({ service: c.service }) },
  { op: 'assign.nodes', perm: 'read', resource: onService, parent: services, setup: (r, c) => serviceWith(r, c, true), fields: (c) => ({ service: c.service }) },
  { op: 'assign.count', perm: 'read', resource: onService, parent: services, setup: (r, c) => serviceWith(r, c), fields: (c) => ({ service: c.service }) },
  { op: 'assign.place', perm: 'admin', resource: onService, parent: services, setup: (r, c) => serviceWith(r, c, true), fields: (c) => ({ service: c.service, email: c.email, node: c.node }) },
  { op: 'assign.nodeUsers', perm: 'read', resource: onService, parent: services, setup: (r, c) => serviceWith(r, c, true), fields: (c) => ({ service: c.service, node: c.node }) },
  {
    op: 'assign.importUsers',
    perm: 'admin',
    resource: onService,
    parent: services,
    setup: (r, c) => serviceWith(r, c, true),
    fields: (c) => ({ service: c.service, users: [{ uid: 1_000_000 + c.n, email: c.email, generation: 1, createdAt: 1, node: c.node }] }),
  },
  { op: 'assign.enqueueEvent', perm: 'write', resource: onJournal, parent: journals, setup: (r, c) => journalWith(r, c), fields: (c) => ({ journal: c.journal, eventId: `e${c.n}`, kind: 'reset', email: c.email, generation: 5 }) },
  { op: 'assign.purgeStart', perm: 'admin', resource: onService, parent: services, setup: (r, c) => serviceWith(r, c), fields: (c) => ({ service: c.service, graceMs: 0 }) },
  { op: 'assign.purgeStop', perm: 'admin', resource: onService, parent: services, setup: (r, c) => serviceWithPurgeJob(r, c), fields: (c) => ({ service: c.service }) },
  { op: 'assign.purgeStatus', perm: 'read', resource: onService, parent: services, setup: (r, c) => serviceWithPurgeJob(r, c), fields: (c) => ({ service: c.service }) },
  { op: 'assign.purgeable', perm: 'read', resource: onService, parent: services, setup: (r, c) => serviceWith(r, c), fields: (c) => ({ service: c.service }) },
  { op: 'assign.user', perm: 'write', resource: onService, parent: services, setup: (r, c) => serviceWith(r, c, true), fields: (c) => ({ service: c.service, email: c.email }) },
  {
    op: 'assign.lookup',
    perm: 'read',
    resource: onService,
    parent: services,
    setup: async (r, c) => (await serviceWith(r, c, true), await ok(r, 'assign.user', { service: c.service, email: c.email }), {}),
    fields: (c) => ({ service: c.service, email: c.email }),
  },
  {
    op: 'assign.retire',
    perm: 'write',
    resource: onService,
    parent: services,
    setup: async (r, c) => (await serviceWith(r, c, true), await ok(r, 'assign.user', { service: c.service, email: c.email }), {}),
    fields: (c) => ({ service: c.service, email: c.email }),
  },
  { op: 'assign.event', perm: 'write', resource: services, parent: everything, fields: (c) => ({ kind: 'delete', email: c.email }) },
  // hibernation
  { op: 'hibernate.freeze', perm: 'admin', resource: (c) => c.unit, parent: () => '/h', setup: async (r, c) => (await ok(r, 'push', { path: c.unit, data: 1, persistent: true }), {}), fields: (c) => ({ path: c.unit }) },
  {
    op: 'hibernate.thaw',
    perm: 'admin',
    resource: (c) => c.unit,
    parent: () => '/h',
    setup: async (r, c) => (await ok(r, 'push', { path: c.unit, data: 1, persistent: true }), await ok(r, 'hibernate.freeze', { path: c.unit }), {}),
    fields: (c) => ({ path: c.unit }),
  },
  { op: 'hibernate.units', perm: 'read', resource: () => '/', parent: everything, fields: () => ({}) },
  // users and roles
  { op: 'auth.userAdd', perm: 'admin', resource: () => 'auth', parent: everything, fields: (c) => ({ name: c.user, password: 'pw' }) },
  { op: 'auth.userPasswd', perm: 'admin', resource: () => 'auth', parent: everything, setup: async (r, c) => (await ok(r, 'auth.userAdd', { name: c.user, password: 'pw' }), {}), fields: (c) => ({ name: c.user, password: 'pw2' }) },
  { op: 'auth.userRm', perm: 'admin', resource: () => 'auth', parent: everything, setup: async (r, c) => (await ok(r, 'auth.userAdd', { name: c.user, password: 'pw' }), {}), fields: (c) => ({ name: c.user }) },
  {
    op: 'auth.userGrant',
    perm: 'admin',
    resource: () => 'auth',
    parent: everything,
    setup: async (r, c) => (await ok(r, 'auth.userAdd', { name: c.user, password: 'pw' }), await ok(r, 'auth.roleAdd', { name: c.role }), {}),
    fields: (c) => ({ name: c.user, role: c.role }),
  },
  {
    op: 'auth.userRevoke',
    perm: 'admin',
    resource: () => 'auth',
    parent: everything,
    setup: async (r, c) => (await ok(r, 'auth.userAdd', { name: c.user, password: 'pw' }), await ok(r, 'auth.roleAdd', { name: c.role }), await ok(r, 'auth.userGrant', { name: c.user, role: c.role }), {}),
    fields: (c) => ({ name: c.user, role: c.role }),
  },
  { op: 'auth.users', perm: 'admin', resource: () => 'auth', parent: everything, fields: () => ({}) },
  { op: 'auth.roleAdd', perm: 'admin', resource: () => 'auth', parent: everything, fields: (c) => ({ name: c.role }) },
  { op: 'auth.roleRm', perm: 'admin', resource: () => 'auth', parent: everything, setup: async (r, c) => (await ok(r, 'auth.roleAdd', { name: c.role }), {}), fields: (c) => ({ name: c.role }) },
  { op: 'auth.roleGrant', perm: 'admin', resource: () => 'auth', parent: everything, setup: async (r, c) => (await ok(r, 'auth.roleAdd', { name: c.role }), {}), fields: (c) => ({ name: c.role, prefix: '/x', perms: ['read'] }) },
  {
    op: 'auth.roleRevoke',
    perm: 'admin',
    resource: () => 'auth',
    parent: everything,
    setup: async (r, c) => (await ok(r, 'auth.roleAdd', { name: c.role }), await ok(r, 'auth.roleGrant', { name: c.role, prefix: '/x', perms: ['read'] }), {}),
    fields: (c) => ({ name: c.role, prefix: '/x' }),
  },
  { op: 'auth.roles', perm: 'admin', resource: () => 'auth', parent: everything, fields: () => ({}) },
  { op: 'auth.userQuota', perm: 'admin', resource: () => 'auth', parent: everything, setup: async (r, c) => (await ok(r, 'auth.userAdd', { name: c.user, password: 'pw' }), {}), fields: (c) => ({ name: c.user, items: 5 }) },
  { op: 'auth.roleQuota', perm: 'admin', resource: () => 'auth', parent: everything, setup: async (r, c) => (await ok(r, 'auth.roleAdd', { name: c.role }), {}), fields: (c) => ({ name: c.role, bytes: 5 }) },
  { op: 'auth.enable', perm: 'admin', resource: () => 'auth', parent: everything, fields: () => ({}) },
  // the audit log, and views of the cluster
  { op: 'audit.list', perm: 'read', resource: () => 'audit', parent: everything, fields: () => ({}) },
  { op: 'observe.cluster', perm: 'read', resource: () => 'cluster', parent: everything, fields: () => ({}) },
  { op: 'observe.sessions', perm: 'read', resource: () => 'cluster', parent: everything, fields: () => ({}) },
  { op: 'observe.session', perm: 'read', resource: () => 'cluster', parent: everything, fields: () => ({ session: 'AAAAAAAAAAAAAAAAAAAAAA' }) },
  // counters (the kit's example family)
  { op: 'counter.add', perm: 'write', resource: onCounter, parent: counters, fields: (c) => ({ name: `c${c.n}`, delta: 1 }) },
  { op: 'counter.get', perm: 'read', resource: onCounter, parent: counters, fields: (c) => ({ name: `c${c.n}` }) },
  { op: 'counter.remove', perm: 'write', resource: onCounter, parent: counters, setup: async (r, c) => (await ok(r, 'counter.add', { name: `c${c.n}`, delta: 3 }), {}), fields: (c) => ({ name: `c${c.n}` }) },
];

/** HTTP endpoints and what each needs; `target` gets the op's names. */
interface HttpCase {
  readonly what: string;
  readonly perm: Perm;
  readonly resource: (c: Names) => string;
  readonly parent: (c: Names) => string;
  readonly target: (c: Names) => string;
  readonly setup?: (root: WireClient, c: Names) => Promise<unknown>;
}

const HTTP: readonly HttpCase[] = [
  { what: 'GET /v1/data', perm: 'read', resource: onPath, parent: above, target: (c) => `/v1/data${c.path}`, setup: persisted },
  { what: 'GET /v1/journals', perm: 'read', resource: journals, parent: everything, target: () => '/v1/journals' },
  { what: 'GET /v1/journals/NAME', perm: 'read', resource: onJournal, parent: journals, target: (c) => `/v1/journals/${c.journal}`, setup: (r, c) => journalWith(r, c) },
  { what: 'GET /v1/journals/NAME/items', perm: 'read', resource: onJournal, parent: journals, target: (c) => `/v1/journals/${c.journal}/items?status=waiting`, setup: (r, c) => journalWith(r, c, 1) },
  { what: 'GET /v1/journals/NAME/items/KEY', perm: 'read', resource: onJournal, parent: journals, target: (c) => `/v1/journals/${c.journal}/items/k`, setup: (r, c) => journalWith(r, c, 1) },
  { what: 'GET /v1/assign/services/S', perm: 'read', resource: onService, parent: services, target: (c) => `/v1/assign/services/${c.service}`, setup: (r, c) => serviceWith(r, c) },
  { what: 'GET /v1/assign/services/S/purge', perm: 'read', resource: onService, parent: services, target: (c) => `/v1/assign/services/${c.service}/purge`, setup: (r, c) => serviceWithPurgeJob(r, c) },
  { what: 'GET /v1/audit', perm: 'read', resource: () => 'audit', parent: everything, target: () => '/v1/audit' },
  { what: 'GET /v1/snapshot', perm: 'admin', resource: () => 'cluster', parent: everything, target: () => '/v1/snapshot' },
  { what: 'GET /v1/members', perm: 'admin', resource: () => 'cluster', parent: everything, target: () => '/v1/members' },
];

let vp: VeraProcess;
let root: WireClient;
/** The three users whose roles each case rewrites, and bob, who has no role. */
const callers: Record<'without' | 'denied' | 'granted' | 'bob', WireClient> = {} as never;
const tokens: Record<keyof typeof callers, string> = {} as never;
let counter = 0;

function names(): Names {
  const n = ++counter;
  return {
    n,
    base: `/m/c${n}`,
    path: `/m/c${n}/x`,
    journal: `j${n}`,
    service: `s${n}`,
    node: `https://node${n}`,
    email: `u${n}@example.com`,
    unit: `/h/u${n}`,
    user: `user${n}`,
    role: `role${n}`,
  };
}

async function connectAs(user: string, password: string): Promise<WireClient> {
  const w = await WireClient.connect(vp.url, 'json');
  await w.hello({ timeoutMs: 60_000, user, password });
  return w;
}

/** Gives the three matrix users exactly one role each, made for `perm` on `resource`. */
async function rolesFor(perm: Perm, resource: string, parent: string): Promise<void> {
  for (const role of ['m-without', 'm-denied', 'm-granted']) {
    await root.request('auth.roleRm', { name: role });
    await ok(root, 'auth.roleAdd', { name: role });
  }
  const others = PERMS.filter((p) => p !== perm);
  await ok(root, 'auth.roleGrant', { name: 'm-without', prefix: resource, perms: others });
  await ok(root, 'auth.roleGrant', { name: 'm-denied', prefix: parent, perms: [...PERMS] });
  await ok(root, 'auth.roleGrant', { name: 'm-denied', prefix: resource, perms: [perm], deny: true });
  await ok(root, 'auth.roleGrant', { name: 'm-granted', prefix: resource, perms: [perm] });
  for (const [user, role] of [['m-without', 'm-without'], ['m-denied', 'm-denied'], ['m-granted', 'm-granted']]) await ok(root, 'auth.userGrant', { name: user, role });
}

/** What root sees of everything an op could change, as one comparable string. */
async function stateSeen(c: Names): Promise<string> {
  const reads: Array<[string, Record<string, unknown>]> = [
    ['ls', { path: c.base }],
    ['journal.list', {}],
    ['journal.show', { name: c.journal }],
    ['journal.flagged', { name: c.journal }],
    ['assign.services', { consistency: 'linearizable' }],
    ['assign.nodes', { service: c.service, consistency: 'linearizable' }],
    ['assign.lookup', { service: c.service, email: c.email, consistency: 'linearizable' }],
    ['assign.purgeStatus', { service: c.service, consistency: 'linearizable' }],
    ['hibernate.units', {}],
    ['counter.get', { name: `c${c.n}` }],
    ['auth.users', {}],
    ['auth.roles', {}],
  ];
  const seen = [];
  // The list itself only when it is not a unit that a read would thaw.
  for (const [op, fields] of [['get', { path: c.path }] as [string, Record<string, unknown>], ...reads]) {
    // Not the index a read reflects: the denial itself is written to the audit log, which moves it.
    const { id: _id, index: _index, ...reply } = (await root.request(op, fields)) as Reply & { index?: number };
    seen.push([op, reply]);
  }
  return JSON.stringify(seen);
}

function code(reply: Reply): string {
  return reply.ok === true ? 'OK' : String(reply.error?.code);
}

let matrixCells = 0;

beforeAll(async () => {
  vp = await securedServer();
  root = await connectAs('root', 'root-pw');
  for (const user of ['m-without', 'm-denied', 'm-granted']) await ok(root, 'auth.userAdd', { name: user, password: `${user}-pw` });
  for (const role of ['m-without', 'm-denied', 'm-granted']) await ok(root, 'auth.roleAdd', { name: role });
  callers.without = await connectAs('m-without', 'm-without-pw');
  callers.denied = await connectAs('m-denied', 'm-denied-pw');
  callers.granted = await connectAs('m-granted', 'm-granted-pw');
  callers.bob = await connectAs('bob', 'bob-pw');
  for (const [key, user] of [['without', 'm-without'], ['denied', 'm-denied'], ['granted', 'm-granted'], ['bob', 'bob']] as const) {
    tokens[key] = String((await ok(root, 'auth.login', { user, password: user === 'bob' ? 'bob-pw' : `${user}-pw` })).token);
  }
}, 60_000);

afterAll(async () => {
  for (const w of [root, ...Object.values(callers)]) w?.terminate();
  await vp?.stop();
  vp?.removeData();
  console.log(`[matrix] ${matrixCells} cells checked`);
});

describe('the permission matrix', () => {
  it('refuses hello without credentials, with a wrong password and with an expired token', async () => {
    const attempt = async (hello: Record<string, unknown>): Promise<string> => {
      const w = await WireClient.connect(vp.url, 'json');
      try {
        return code(await w.request('hello', { timeoutMs: 10_000, ...hello }));
      } finally {
        w.terminate();
      }
    };
    expect(await attempt({})).toBe('UNAUTHORIZED');
    expect(await attempt({ user: 'm-granted', password: 'wrong' })).toBe('UNAUTHORIZED');
    const { token } = await ok(root, 'auth.login', { user: 'm-granted', password: 'm-granted-pw', ttlMs: 1000 });
    expect(await attempt({ token })).toBe('OK');
    // A token lives ttlMs by the member's clock: wait for that clock, not a guess.
    await expect.poll(() => attempt({ token }), { timeout: 10_000, interval: 100 }).toBe('UNAUTHORIZED');
    matrixCells += 3;
  });

  it('has a row for every op any family adds', async () => {
    const parts = await loadPlugins(FAMILIES);
    const rows = new Set(OPS.map((o) => o.op));
    const missing = [...parts.familyOps.keys()].filter((op) => !rows.has(op) && NOT_IN_TABLE[op] === undefined);
    expect(missing).toEqual([]);
  });

  for (const spec of OPS) {
    it(`${spec.op}${spec.op === 'watch' && spec.resource === above ? ' (prefix)' : ''}${spec.op === 'txn' ? ` (${spec.perm === 'read' ? 'compare' : 'write'})` : ''} needs ${spec.perm}`, async () => {
      // Each caller gets fresh names, roles made for them, and root's setup, so every attempt meets the op's precondition.
      const prepare = async (): Promise<{ c: Names; extra: Record<string, unknown> }> => {
        const c = names();
        await rolesFor(spec.perm, spec.resource(c), spec.parent(c));
        return { c, extra: (await spec.setup?.(root, c)) ?? {} };
      };
      for (const who of ['bob', 'without', 'denied'] as const) {
        const { c, extra } = await prepare();
        const before = await stateSeen(c);
        const reply = await callers[who].request(spec.op, spec.fields(c, extra));
        expect(code(reply), `${spec.op} as ${who}: ${JSON.stringify(reply.error)}`).toBe('FORBIDDEN');
        expect(reply.error?.message).toContain(`may not ${spec.perm} ${spec.resource(c)}`);
        expect(await stateSeen(c), `${spec.op} as ${who} changed something`).toBe(before);
        matrixCells++;
      }
      const { c, extra } = await prepare();
      const reply = await callers.granted.request(spec.op, spec.fields(c, extra));
      expect(code(reply), `${spec.op} with the right role: ${JSON.stringify(reply.error)}`).toBe(spec.allowed ?? 'OK');
      matrixCells++;
    });
  }

  for (const spec of HTTP) {
    it(`${spec.what} needs ${spec.perm}`, async () => {
      const get = async (c: Names, headers: Record<string, string>): Promise<number> => (await fetch(`${vp.httpUrl}${spec.target(c)}`, { headers, signal: AbortSignal.timeout(5000) })).status;
      const basic = (user: string, password: string): Record<string, string> => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
      const c = names();
      await rolesFor(spec.perm, spec.resource(c), spec.parent(c));
      await spec.setup?.(root, c);
      expect(await get(c, {})).toBe(401);
      expect(await get(c, basic('m-granted', 'wrong'))).toBe(401);
      expect(await get(c, { authorization: 'Bearer vt1.e30.forged' })).toBe(401);
      expect(await get(c, { authorization: `Bearer ${tokens.bob}` })).toBe(403);
      expect(await get(c, { authorization: `Bearer ${tokens.without}` })).toBe(403);
      expect(await get(c, { authorization: `Bearer ${tokens.denied}` })).toBe(403);
      expect(await get(c, { authorization: `Bearer ${tokens.granted}` })).toBe(200);
      expect(await get(c, basic('m-granted', 'm-granted-pw'))).toBe(200);
      matrixCells += 8;
    });
  }

  // Last: with the right role it switches authentication off, which ends what the table can check.
  it('auth.disable needs admin on auth', async () => {
    for (const who of ['bob', 'without'] as const) {
      const reply = await callers[who].request('auth.disable', {});
      expect(code(reply)).toBe('FORBIDDEN');
      expect(await ok(root, 'auth.status')).toMatchObject({ enabled: true });
      matrixCells++;
    }
    await rolesFor('admin', 'auth', '*');
    expect(code(await callers.granted.request('auth.disable', {}))).toBe('OK');
    expect(await ok(root, 'auth.status')).toMatchObject({ enabled: false });
    matrixCells++;
  });
});
