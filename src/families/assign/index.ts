// The node-assignment family: Tokenserver's user-to-storage-node database
// (seeds 000 and 001) as replicated state. Services and their nodes live in
// memory on every member; user records and the seed's indexes in LevelDB. Every
// decision (an allocation with its load counters, a client-state change, a
// retirement, a purge) is one entry. See docs/assignment.md; the layout is in
// keys.ts and docs/storage.md.
import { CommandError, type Family } from '../../statemachine/family.js';
import { boolField, integerField } from '../fields.js';
import { planAssign } from './apply.js';
import {
  backoffField,
  capacityField,
  clientStateField,
  cursorField,
  emailField,
  eventIdField,
  generationField,
  importedUsersField,
  kindField,
  nodeChanges,
  nodeField,
  purgeJobSettingsField,
  serviceField,
  settingsField,
  uidsField,
  type AssignCommand,
} from './commands.js';
import { AssignBucket } from './keys.js';
import { AssignState } from './state.js';
import { MAX_BATCH } from './wire.js';

/** The command version that brought node assignment. */
export const ASSIGN_SINCE = 3;
/**
 * From this command version a login is checked by Tokenserver's first rule as upstream has it
 * (rules.ts), and a password event reaches a user whose record is replaced. Read from the
 * replicated active version at each entry; below it entries apply as they always did, so a
 * member still on an older build agrees while one remains. Shared with the journal's version 9.
 */
export const TOKENSERVER_CHECKS_SINCE = 9;

/** The operator tools of issue 36: place a user on a named node, account events applied once per id, import, the leader's purge job. */
export const OPERATOR_TOOLS_SINCE = 9;

export const assign: Family<AssignCommand, AssignState> = {
  name: 'assign',
  since: ASSIGN_SINCE,
  buckets: [
    { id: AssignBucket.service, name: 'assignment services' },
    { id: AssignBucket.node, name: 'assignment nodes by service' },
    { id: AssignBucket.user, name: 'assignment user records by uid' },
    { id: AssignBucket.lookup, name: 'assignment records by email, service and creation date' },
    { id: AssignBucket.replaced, name: 'assignment replaced records by service and replacement date' },
    { id: AssignBucket.byNode, name: 'assignment current records by node' },
    { id: AssignBucket.meta, name: 'assignment next uid, applied event ids and purge jobs' },
  ],
  ops: {
    service: { fields: ['service', 'settings'], since: ASSIGN_SINCE, decode: (c) => ({ op: 'service', service: serviceField(c.service), settings: settingsField(c.settings) }) },
    addNode: {
      fields: ['service', 'node', 'capacity', 'available', 'downed', 'backoff'],
      since: ASSIGN_SINCE,
      decode: (c) => ({
        op: 'addNode',
        service: serviceField(c.service),
        node: nodeField(c.node),
        capacity: capacityField(c.capacity, 'capacity'),
        available: capacityField(c.available, 'available'),
        downed: boolField(c.downed, 'downed'),
        backoff: backoffField(c.backoff),
      }),
    },
    updateNode: {
      fields: ['service', 'node', 'capacity', 'available', 'downed', 'backoff'],
      since: ASSIGN_SINCE,
      decode: (c) => ({ op: 'updateNode', service: serviceField(c.service), node: nodeField(c.node), ...nodeChanges(c) }),
    },
    removeNode: { fields: ['service', 'node'], since: ASSIGN_SINCE, decode: (c) => ({ op: 'removeNode', service: serviceField(c.service), node: nodeField(c.node) }) },
    login: {
      fields: ['service', 'email', 'generation', 'keysChangedAt', 'clientState', 'pick'],
      since: ASSIGN_SINCE,
      decode: (c) => ({
        op: 'login',
        service: serviceField(c.service),
        email: emailField(c.email),
        generation: generationField(c.generation, 'generation'),
        keysChangedAt: generationField(c.keysChangedAt, 'keysChangedAt'),
        clientState: clientStateField(c.clientState),
        pick: integerField(c.pick, 'pick', 0, 2 ** 32 - 1),
      }),
    },
    retire: {
      fields: ['email', 'service'],
      since: ASSIGN_SINCE,
      decode: (c) => ({ op: 'retire', email: emailField(c.email), ...(c.service === undefined ? {} : { service: serviceField(c.service) }) }),
    },
    decommission: {
      fields: ['service', 'node', 'uids', 'max'],
      since: ASSIGN_SINCE,
      decode: (c) => ({
        op: 'decommission',
        service: serviceField(c.service),
        node: nodeField(c.node),
        ...(c.uids === undefined ? {} : { uids: uidsField(c.uids, false) }),
        max: integerField(c.max, 'max', 1, MAX_BATCH),
      }),
    },
    event: {
      fields: ['kind', 'email', 'generation', 'eventId'],
      since: ASSIGN_SINCE,
      fieldsSince: { eventId: OPERATOR_TOOLS_SINCE },
      decode: (c) => {
        const kind = kindField(c.kind);
        if (kind !== 'delete' && c.generation === undefined) throw new CommandError(`a ${kind} event needs a generation`);
        return {
          op: 'event',
          kind,
          email: emailField(c.email),
          ...(c.generation === undefined ? {} : { generation: integerField(c.generation, 'generation', 1, Number.MAX_SAFE_INTEGER) }),
          ...(c.eventId === undefined ? {} : { eventId: eventIdField(c.eventId) }),
        };
      },
    },
    importUsers: {
      fields: ['service', 'users'],
      since: OPERATOR_TOOLS_SINCE,
      decode: (c) => {
        const service = serviceField(c.service);
        return { op: 'importUsers', service, users: importedUsersField(c.users, service) };
      },
    },
    place: {
      fields: ['service', 'email', 'node'],
      since: OPERATOR_TOOLS_SINCE,
      decode: (c) => ({ op: 'place', service: serviceField(c.service), email: emailField(c.email), node: nodeField(c.node) }),
    },
    purgeStart: {
      fields: ['service', 'settings'],
      since: OPERATOR_TOOLS_SINCE,
      decode: (c) => ({ op: 'purgeStart', service: serviceField(c.service), settings: purgeJobSettingsField(c.settings) }),
    },
    purgeStop: {
      fields: ['service', 'seq', 'error'],
      since: OPERATOR_TOOLS_SINCE,
      decode: (c) => {
        if (c.error !== undefined && (typeof c.error !== 'string' || c.error.length === 0 || c.error.length > 500)) throw new CommandError('error must be 1-500 characters');
        if (c.error !== undefined && c.seq === undefined) throw new CommandError('a failed purge job names its seq');
        return {
          op: 'purgeStop',
          service: serviceField(c.service),
          ...(c.seq === undefined ? {} : { seq: integerField(c.seq, 'seq', 1, Number.MAX_SAFE_INTEGER) }),
          ...(c.error === undefined ? {} : { error: c.error as string }),
        };
      },
    },
    purgeStep: {
      fields: ['service', 'seq', 'from', 'to', 'done', 'before', 'uids', 'skipped', 'overridden', 'activeData'],
      since: OPERATOR_TOOLS_SINCE,
      decode: (c) => ({
        op: 'purgeStep',
        service: serviceField(c.service),
        seq: integerField(c.seq, 'seq', 1, Number.MAX_SAFE_INTEGER),
        from: cursorField(c.from, 'from'),
        to: cursorField(c.to, 'to'),
        done: boolField(c.done, 'done'),
        before: integerField(c.before, 'before', 0, 2 ** 48),
        uids: uidsField(c.uids, true),
        skipped: integerField(c.skipped, 'skipped', 0, MAX_BATCH * 10),
        overridden: integerField(c.overridden, 'overridden', 0, MAX_BATCH),
        activeData: integerField(c.activeData, 'activeData', 0, MAX_BATCH),
      }),
    },
    purge: {
      fields: ['service', 'before', 'uids', 'force'],
      since: ASSIGN_SINCE,
      decode: (c) => ({ op: 'purge', service: serviceField(c.service), before: integerField(c.before, 'before', 0, 2 ** 48), uids: uidsField(c.uids, true), force: boolField(c.force, 'force') }),
    },
  },
  load: (db, snapshot) => AssignState.load(db, snapshot),
  plan: (command, ctx) => planAssign(command, ctx, ctx.states.of(assign)),
  // Every plan reads through ctx.reads and plans nodes from memory: none needs to go alone.
  goesAlone: () => false,
  plugin: async () => (await import('./server.js')).plugin,
};
