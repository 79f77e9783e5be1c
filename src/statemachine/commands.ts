// State-machine commands: what the leader proposes as the data of a 'command'
// entry. Anything time-dependent or random (session ids, expiry) is decided by
// the leader before proposing, so applying a command needs no clock.
import { MAX_INDEX, validateSessionId } from '../keys/index.js';
import { validatePath } from '../protocol/index.js';
import { pack, unpack } from './codec.js';

export const MAX_TIMEOUT_MS = 2 ** 31 - 1; // the largest delay a Node timer accepts
export const MAX_REMOTE_LENGTH = 256;

/**
 * Limits the leader was configured with when it proposed a command, carried in
 * the command so that every member judges them the same way in apply: checked
 * before proposing, two concurrent requests could both pass and together go over
 * (1,240 watches of 1,000 were once seen that way). Entries written before these
 * fields existed carry none and are applied without limits, as they were.
 */
export interface SessionQuota {
  /** Sessions opened from one client address (the `remote` without its port). */
  readonly sessionsPerAddress: number;
}

export interface PushQuota {
  /** Watches one session may hold (a push also watches its list unless `watch: false`). */
  readonly watches: number;
  /** Ephemeral items one session may own. */
  readonly items: number;
  /** Bytes of ephemeral items (their stored values) one session may own. */
  readonly bytes: number;
  /** Items one list may hold. */
  readonly listItems: number;
}

export interface WatchQuota {
  readonly watches: number;
}

export interface OpenSessionCommand {
  readonly op: 'openSession';
  readonly session: string;
  readonly timeoutMs: number;
  /** The client's address and port as the leader saw it (`host:port`); the host counts against sessionsPerAddress. */
  readonly remote: string;
  readonly quota?: SessionQuota;
}

export interface CloseSessionCommand {
  readonly op: 'closeSession';
  readonly session: string;
  readonly reason: 'bye' | 'expired';
}

export interface PushCommand {
  readonly op: 'push';
  readonly session: string;
  readonly path: string;
  readonly data: unknown;
  readonly persistent: boolean;
  readonly watch: boolean;
  /** Compare-and-set: the list's newest index must equal this (0 = empty list). */
  readonly ifLastIndex?: number;
  readonly quota?: PushQuota;
}

export interface DeleteCommand {
  readonly op: 'delete';
  readonly session: string;
  readonly path: string;
  readonly index: number;
}

export interface WatchCommand {
  readonly op: 'watch' | 'unwatch';
  readonly session: string;
  /** '/' is allowed only when `prefix` is true. */
  readonly path: string;
  readonly prefix: boolean;
  /** Only on 'watch'. */
  readonly quota?: WatchQuota;
}

export interface AckCommand {
  readonly op: 'ack';
  /** [session, highest notification index it has processed]. */
  readonly acks: ReadonlyArray<readonly [string, number]>;
}

export type Command = OpenSessionCommand | CloseSessionCommand | PushCommand | DeleteCommand | WatchCommand | AckCommand;
export type CommandOp = Command['op'];

/** The bytes are not a well-formed command. */
export class CommandError extends Error {
  override readonly name = 'CommandError';
}

export function encodeCommand(command: Command): Uint8Array {
  // Validating on the way out keeps a buggy leader from proposing what every
  // peer would then reject; the canonical copy fixes the key order of the bytes.
  return pack(canonical(command));
}

export function decodeCommand(bytes: Uint8Array): Command {
  let raw: unknown;
  try {
    raw = unpack(bytes);
  } catch (err) {
    throw new CommandError(`command is not valid MessagePack: ${(err as Error).message}`);
  }
  return canonical(raw);
}

// Field names each op allows; anything else is rejected so typos cannot pass silently.
const FIELDS: Record<CommandOp, readonly string[]> = {
  openSession: ['op', 'session', 'timeoutMs', 'remote', 'quota'],
  closeSession: ['op', 'session', 'reason'],
  push: ['op', 'session', 'path', 'data', 'persistent', 'watch', 'ifLastIndex', 'quota'],
  delete: ['op', 'session', 'path', 'index'],
  watch: ['op', 'session', 'path', 'prefix', 'quota'],
  unwatch: ['op', 'session', 'path', 'prefix'],
  ack: ['op', 'acks'],
};

/** Checks an untrusted value and returns a fresh command with a fixed field order. */
function canonical(raw: unknown): Command {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new CommandError('command must be a map');
  const c = raw as Record<string, unknown>;
  const op = c.op;
  if (typeof op !== 'string' || !Object.hasOwn(FIELDS, op)) throw new CommandError(`unknown command op ${JSON.stringify(op)}`);
  const allowed = FIELDS[op as CommandOp];
  for (const field of Object.keys(c)) {
    if (!allowed.includes(field)) throw new CommandError(`${op} has an unexpected field '${field}'`);
  }
  switch (op as CommandOp) {
    case 'openSession': {
      const open: OpenSessionCommand = {
        op: 'openSession',
        session: session(c.session),
        timeoutMs: integer(c.timeoutMs, 'timeoutMs', 1, MAX_TIMEOUT_MS),
        remote: remote(c.remote),
      };
      return c.quota === undefined ? open : { ...open, quota: quota(c.quota, ['sessionsPerAddress']) };
    }
    case 'closeSession':
      if (c.reason !== 'bye' && c.reason !== 'expired') throw new CommandError("reason must be 'bye' or 'expired'");
      return { op: 'closeSession', session: session(c.session), reason: c.reason };
    case 'push': {
      if (c.data === undefined) throw new CommandError('push needs data');
      const push: PushCommand = {
        op: 'push',
        session: session(c.session),
        path: path(c.path, false),
        data: c.data,
        persistent: bool(c.persistent, 'persistent'),
        watch: bool(c.watch, 'watch'),
      };
      const withIf = c.ifLastIndex === undefined ? push : { ...push, ifLastIndex: integer(c.ifLastIndex, 'ifLastIndex', 0, MAX_INDEX) };
      return c.quota === undefined ? withIf : { ...withIf, quota: quota(c.quota, ['watches', 'items', 'bytes', 'listItems']) };
    }
    case 'delete':
      return {
        op: 'delete',
        session: session(c.session),
        path: path(c.path, false),
        index: integer(c.index, 'index', 0, MAX_INDEX),
      };
    case 'watch':
    case 'unwatch': {
      const prefix = bool(c.prefix, 'prefix');
      const w: WatchCommand = { op: op as 'watch' | 'unwatch', session: session(c.session), path: path(c.path, prefix), prefix };
      return c.quota === undefined ? w : { ...w, quota: quota(c.quota, ['watches']) };
    }
    case 'ack':
      return { op: 'ack', acks: acks(c.acks) };
  }
}

function session(value: unknown): string {
  const problem = validateSessionId(value);
  if (problem !== null) throw new CommandError(problem);
  return value as string;
}

function path(value: unknown, allowRoot: boolean): string {
  const problem = validatePath(value, { allowRoot });
  if (problem !== null) throw new CommandError(problem);
  return value as string;
}

function integer(value: unknown, name: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new CommandError(`${name} must be an integer in [${min}, ${max}]`);
  }
  return value;
}

/** Largest limit a quota field may carry. */
export const MAX_QUOTA = 2 ** 48;

/** A quota map with exactly `fields`, each a positive integer, in that order. */
function quota<F extends string>(value: unknown, fields: readonly F[]): Record<F, number> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new CommandError('quota must be a map');
  const v = value as Record<string, unknown>;
  for (const key of Object.keys(v)) if (!(fields as readonly string[]).includes(key)) throw new CommandError(`quota has an unexpected field '${key}'`);
  const out = {} as Record<F, number>;
  for (const f of fields) out[f] = integer(v[f], `quota.${f}`, 1, MAX_QUOTA);
  return out;
}

function bool(value: unknown, name: string): boolean {
  if (typeof value !== 'boolean') throw new CommandError(`${name} must be a boolean`);
  return value;
}

function remote(value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_REMOTE_LENGTH) {
    throw new CommandError(`remote must be a string of at most ${MAX_REMOTE_LENGTH} characters`);
  }
  return value;
}

function acks(value: unknown): Array<readonly [string, number]> {
  if (!Array.isArray(value)) throw new CommandError('acks must be an array');
  return value.map((pair: unknown) => {
    if (!Array.isArray(pair) || pair.length !== 2) throw new CommandError('each ack must be [session, index]');
    return [session(pair[0]), integer(pair[1], 'ack index', 0, MAX_INDEX)] as const;
  });
}
