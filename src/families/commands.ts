// The data of a 'command' entry: an envelope naming the command's family, its
// op, the command version it needs and the leader's clock when it proposed,
// then the op's own fields:
//
//   { v: 1, family: 'lists', op: 'push', t: 1764000000000, session, path, ... }
//
// Entries written before the envelope carry only `op` and the fields; their ops
// are those of the four families Vera had then (LEGACY_OPS) and they keep
// applying as they did.
// A member that meets a family, op or version it does not know stops with an
// UnknownCommandError before writing anything of that entry: applying it as a
// no-op while newer members apply it would silently split the replicas.
//
// From command version REQUEST_ID_SINCE the envelope may also carry `r`, the
// request id of a write a member forwarded to the leader (docs/scale-out.md,
// "Writes: forwarding to the leader"): the kernel takes it out before the op's
// fields are checked and hands it back with the entry's ApplyOutcome, which is
// how the forwarding member finds its answer. An entry with `r` names at least
// that version, so a member that does not know `r` stops before applying it
// rather than refusing the field and diverging from the others.
import { CommandError, UnknownCommandError, type AnyFamily, type DecodedCommand } from '../statemachine/family.js';
import { MAX_INDEX } from '../keys/index.js';
import { COMMAND_VERSION, FAMILY_BY_NAME, LEGACY_OPS } from './registry.js';
import { indexField, integerField } from './fields.js';
import { pack, unpack } from '../statemachine/codec.js';
import { ByteSlabs } from '../statemachine/byte-slabs.js';

export { CommandError, UnknownCommandError, type DecodedCommand } from '../statemachine/family.js';

/** A command of any other family, which names it. */
export interface FamilyCommand {
  readonly family: string;
  readonly op: string;
  readonly [field: string]: unknown;
}

/**
 * What the entry codec needs of a command: its op and, unless the op is one of the
 * first four families' (LEGACY_OPS), its family's name. The typed union of the
 * commands is AnyCommand in src/families/core-commands.ts.
 */
export interface CommandLike {
  readonly op: string;
  readonly family?: string;
}

/** A decoded command entry. */
const ENVELOPE = ['v', 'family', 'op', 't'] as const;
/** The envelope of an entry that names REQUEST_ID_SINCE or later. */
const ENVELOPE_WITH_REQUEST_ID = [...ENVELOPE, 'r'] as const;

/**
 * The command version that introduced the envelope's request id `r` (the unreleased V1 of
 * docs/scale-out.md); at most COMMAND_VERSION (test/statemachine/request-id.test.ts checks:
 * not here, where the registry is still loading).
 */
export const REQUEST_ID_SINCE = 9;
/** A request id is the forwarding member's id, its process tag and a counter: a member id is at most 255 bytes. */
export const MAX_REQUEST_ID_BYTES = 320;

/** A request id as the envelope carries it; throws CommandError. */
export function requestIdField(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || Buffer.byteLength(value, 'utf8') > MAX_REQUEST_ID_BYTES) {
    throw new CommandError(`r must be a non-empty string of at most ${MAX_REQUEST_ID_BYTES} bytes`);
  }
  return value;
}

/**
 * Validates `command` and encodes it in an envelope with the proposer's clock
 * `t` (ms). Validating on the way out keeps a buggy leader from proposing what
 * every member would then reject; the canonical copy fixes the bytes' key order.
 */
export function encodeCommand<C extends CommandLike>(command: C, t = 0): Uint8Array {
  return encodeEntryCommand(command, t).bytes;
}

/**
 * `encodeCommand`, also saying which command version the entry needs (its `v`). With a
 * request id `r` the envelope carries it and names at least REQUEST_ID_SINCE; without,
 * the bytes are exactly those of before `r` existed.
 */
export function encodeEntryCommand<C extends CommandLike>(command: C, t: number, r?: string): { readonly bytes: Uint8Array; readonly version: number } {
  const family = familyOf(command);
  const decoded = decodeFields(family, command as unknown as Record<string, unknown>, ['family']);
  const at = indexField(t, 't');
  if (r !== undefined) {
    const rid = requestIdField(r);
    const version = Math.max(versionOf(family, decoded), REQUEST_ID_SINCE);
    const bytes = entrySlabs.copy(pack({ v: version, family: family.name, op: command.op, t: at, r: rid, ...withoutOp(decoded) }));
    proposed.set(bytes, { family, command: decoded, t: at, r: rid });
    return { bytes, version };
  }
  const version = versionOf(family, decoded);
  // Copied out of the packer's shared buffer: the Raft log keeps these bytes (byte-slabs.ts).
  const bytes = entrySlabs.copy(pack({ v: version, family: family.name, op: command.op, t: at, ...withoutOp(decoded) }));
  proposed.set(bytes, { family, command: decoded, t: at });
  return { bytes, version };
}

/**
 * The body a member forwards to the leader: the entry `encodeEntryCommand` would make
 * with a request id, but without `t` and `r`, which the leader adds (completeEnvelope).
 * Validated here like any proposal, so the leader need not re-check the fields.
 */
export function encodeForwardBody<C extends CommandLike>(command: C): { readonly bytes: Uint8Array; readonly version: number } {
  const family = familyOf(command);
  const decoded = decodeFields(family, command as unknown as Record<string, unknown>, ['family']);
  const version = Math.max(versionOf(family, decoded), REQUEST_ID_SINCE);
  return { bytes: new Uint8Array(pack({ v: version, family: family.name, op: command.op, ...withoutOp(decoded) })), version };
}

/** What the leader reads of a forwarded body before it proposes it (its proposal gate): the envelope, not the op's fields. */
export interface ForwardEnvelope {
  readonly v: number;
  readonly family: string;
  readonly op: string;
  /** The op's fields as its decoder checked them (what the desk judges a forward by, docs/scale-out.md "Relayed ops"). */
  readonly command: Readonly<Record<string, unknown>> & { readonly op: string };
}

/**
 * Checks a forwarded body whole before the leader proposes it: a map with `v`, `family`
 * and `op`, no `t` or `r` (the leader's to write), an op this leader knows with fields its
 * spec accepts, and `v` exactly the version that op with those fields needs (at least
 * REQUEST_ID_SINCE). A member cannot get an entry into the log that stops every member at
 * apply (an unknown op) or that members of different versions would judge differently (a
 * `v` below what its fields need). Throws CommandError.
 */
export function readForwardEnvelope(body: Uint8Array): ForwardEnvelope {
  let raw: unknown;
  try {
    raw = unpack(body);
  } catch (err) {
    throw new CommandError(`forwarded command is not valid MessagePack: ${(err as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new CommandError('forwarded command must be a map');
  const c = raw as Record<string, unknown>;
  if ('t' in c || 'r' in c) throw new CommandError('a forwarded command must not carry t or r');
  const v = integerField(c.v, 'v', REQUEST_ID_SINCE, MAX_INDEX);
  if (typeof c.family !== 'string' || typeof c.op !== 'string') throw new CommandError('a forwarded command names its family and op');
  const family = FAMILY_BY_NAME.get(c.family);
  if (family === undefined || !Object.hasOwn(family.ops, c.op)) throw new CommandError(`a forwarded command names an unknown op ${c.family}.${c.op}`);
  const command = decodeFields(family, c, FORWARD_ENVELOPE);
  const needs = Math.max(versionOf(family, command), REQUEST_ID_SINCE);
  if (v !== needs) throw new CommandError(`a forwarded ${c.family}.${c.op} says command version ${v}; with these fields it needs ${needs}`);
  return { v, family: c.family, op: c.op, command: command as ForwardEnvelope['command'] };
}

/**
 * The entry the leader proposes for a forwarded `body`: its own clock `t` and the request
 * id `r` added as the map's last two pairs. The body's bytes are copied, never decoded
 * and re-encoded, so what the member validated is what every member applies.
 */
export function completeEnvelope(body: Uint8Array, t: number, r: string): Uint8Array {
  const header = mapHeader(body);
  const tail = pack({ t: indexField(t, 't'), r: requestIdField(r) }).subarray(1); // the two pairs, without their fixmap header
  const count = header.count + 2;
  const head = count < 16 ? Buffer.from([0x80 | count]) : count < 0x10000 ? Buffer.from([0xde, count >> 8, count & 0xff]) : Buffer.from([0xdf, (count >>> 24) & 0xff, (count >> 16) & 0xff, (count >> 8) & 0xff, count & 0xff]);
  const out = new Uint8Array(head.byteLength + body.byteLength - header.bytes + tail.byteLength);
  out.set(head, 0);
  out.set(body.subarray(header.bytes), head.byteLength);
  out.set(tail, head.byteLength + body.byteLength - header.bytes);
  return out;
}

/** The pair count of a MessagePack map and the size of its header; throws CommandError for anything else. */
function mapHeader(bytes: Uint8Array): { readonly count: number; readonly bytes: number } {
  const first = bytes[0];
  if (first !== undefined && first >= 0x80 && first <= 0x8f) return { count: first & 0x0f, bytes: 1 };
  if (first === 0xde && bytes.byteLength >= 3) return { count: (bytes[1]! << 8) | bytes[2]!, bytes: 3 };
  if (first === 0xdf && bytes.byteLength >= 5) return { count: ((bytes[1]! << 24) >>> 0) + ((bytes[2]! << 16) | (bytes[3]! << 8) | bytes[4]!), bytes: 5 };
  throw new CommandError('forwarded command must be a map');
}
const entrySlabs = new ByteSlabs();

// The leader applies the entries it proposed from the very bytes it encoded (the
// Raft log hands the same object back), so it keeps what it encoded and skips
// decoding it again. A cached command is the canonical decode of its fields, the
// same one a follower's decode gives (a pushed value may be a PackedValue, which
// encodes to the same bytes as the plain value), so every member plans the same
// writes; test/statemachine/proposed-cache.test.ts checks this. Taken on first
// use: an entry re-read from disk, or applied a second time, is decoded.
const proposed = new WeakMap<Uint8Array, DecodedCommand>();

/** The command version `command` needs (its family's or its op's, whichever is newer); throws UnknownCommandError. */
export function requiredVersion<C extends CommandLike>(command: C): number {
  return versionOf(familyOf(command), command);
}

/** The family a command names (or, for the first four families' commands, whose op it is); throws UnknownCommandError. */
function familyOf(command: CommandLike): AnyFamily {
  const family = 'family' in command ? FAMILY_BY_NAME.get(command.family ?? '') : LEGACY_OPS.get(command.op);
  if (family === undefined || !Object.hasOwn(family.ops, command.op)) {
    throw new UnknownCommandError(`unknown command ${'family' in command ? `${command.family}.` : ''}${command.op}`);
  }
  return family;
}

/** The newest of the family's, the op's and every present field's version. */
export function versionOf(family: AnyFamily, command: object & { readonly op: string }): number {
  const spec = family.ops[command.op]!;
  let v = Math.max(family.since, spec.since);
  if (spec.fieldsSince !== undefined) {
    for (const [field, since] of Object.entries(spec.fieldsSince)) if ((command as Record<string, unknown>)[field] !== undefined) v = Math.max(v, since);
  }
  return v;
}

/**
 * Whether an entry may carry a command of the family named `name`, without
 * decoding it: false only when its bytes lack the envelope's `family: name`
 * pair, as `pack` writes it. A scan of a long log for one family's entries (the
 * audit head check at start) decodes only the entries this lets through.
 */
export function mayBeOfFamily(bytes: Uint8Array, name: string): boolean {
  if (proposed.has(bytes)) return proposed.get(bytes)!.family.name === name;
  const needle = familyNeedles.get(name) ?? pack({ family: name }).subarray(1); // the pair without the map header
  familyNeedles.set(name, needle);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).indexOf(needle) >= 0;
}
const familyNeedles = new Map<string, Buffer>();

/** An entry's command, its family and its proposer's clock; throws CommandError, or UnknownCommandError when this member cannot apply it. */
export function decodeEntryCommand(bytes: Uint8Array): DecodedCommand {
  const mine = proposed.get(bytes);
  if (mine !== undefined) {
    proposed.delete(bytes);
    return mine;
  }
  let raw: unknown;
  try {
    raw = unpack(bytes);
  } catch (err) {
    throw new CommandError(`command is not valid MessagePack: ${(err as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new CommandError('command must be a map');
  const c = raw as Record<string, unknown>;
  if (!('v' in c && 'family' in c)) {
    // Written before the envelope: an op of the four first families, no clock. Nothing writes this
    // form any more, so an op it does not name is garbage, refused as it always was.
    const family = typeof c.op === 'string' ? LEGACY_OPS.get(c.op) : undefined;
    if (family === undefined) throw new CommandError(`unknown command op ${JSON.stringify(c.op)}`);
    return { family, command: decodeFields(family, c, []), t: 0 };
  }
  const v = integerField(c.v, 'v', 1, MAX_INDEX);
  const family = typeof c.family === 'string' ? FAMILY_BY_NAME.get(c.family) : undefined;
  const known = family !== undefined && typeof c.op === 'string' && Object.hasOwn(family.ops, c.op);
  if (v > COMMAND_VERSION || !known) {
    throw new UnknownCommandError(
      `the entry needs command version ${v} (family ${JSON.stringify(c.family)}, op ${JSON.stringify(c.op)}); this member applies version ${COMMAND_VERSION}: upgrade it before it rejoins`,
    );
  }
  const t = indexField(c.t, 't');
  // Below REQUEST_ID_SINCE `r` is an unexpected field, refused by decodeFields as it always was.
  if (v >= REQUEST_ID_SINCE && c.r !== undefined) {
    const r = requestIdField(c.r);
    return { family, command: decodeFields(family, c, ENVELOPE_WITH_REQUEST_ID), t, r };
  }
  return { family, command: decodeFields(family, c, ENVELOPE), t };
}

/** Checks every field against the op's spec and returns the family's canonical command. */
function decodeFields(family: AnyFamily, c: Readonly<Record<string, unknown>>, envelope: readonly string[]): { readonly op: string } {
  const op = c.op;
  if (typeof op !== 'string' || !Object.hasOwn(family.ops, op)) throw new CommandError(`unknown command op ${JSON.stringify(op)}`);
  const spec = family.ops[op]!;
  for (const field of Object.keys(c)) {
    if (field !== 'op' && !envelope.includes(field) && !spec.fields.includes(field)) throw new CommandError(`${op} has an unexpected field '${field}'`);
  }
  return spec.decode(c);
}

/** The envelope fields of a forwarded body (no `t` or `r` yet). */
const FORWARD_ENVELOPE: readonly string[] = ['v', 'family'];

function withoutOp(command: { readonly op: string }): Record<string, unknown> {
  const { op: _op, ...fields } = command as { op: string } & Record<string, unknown>;
  return fields;
}
