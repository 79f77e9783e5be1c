// Turns a decoded frame object into a typed Request, or says exactly which field
// is wrong. Every rule of ../shared/PROTOCOL.md about request arguments lives
// here; docs/protocol.md lists the choices made where that page is silent.
import { utf8Length } from './platform.js';
import { validateSessionId } from './session-id.js';
import { validatePath } from './path.js';
import { packValue } from './msgpack.js';
import { PackedValue } from './packed.js';
import { findDataProblem } from './values.js';
import { VeraError, type ProtocolError } from './errors.js';
import type { FamilyRequest, ProtocolExtensions } from './extension.js';
import { OPS, type Consistency, type JsonValue, type Op, type ProtocolLimits, type PushRequest, type Request, type RequestOf } from './types.js';

export type Validation<R = Request> = { readonly ok: true; readonly request: R } | { readonly ok: false; readonly id?: number; readonly error: ProtocolError };

type Fields = Readonly<Record<string, unknown>>;

const OP_SET: ReadonlySet<string> = new Set(OPS);
const MAX_TOKEN_BYTES = 4096;

export interface ValidateOptions {
  /** Default true. A client checks everything but the size, since only the server knows its data limit. */
  readonly checkDataSize?: boolean;
  /** Ops that command families add (extension.ts); without them only the core ops are known. */
  readonly extensions?: ProtocolExtensions;
}

/** True for a request of a core op (the ones validate.ts knows), false for a family op. */
export function isCoreRequest(request: Request | FamilyRequest): request is Request {
  return OP_SET.has(request.op);
}

/** Validates a frame that decoded to a map/object. Unknown extra fields are ignored. */
export function validateRequest(frame: Fields, limits: ProtocolLimits, options?: ValidateOptions & { readonly extensions?: undefined }): Validation;
export function validateRequest(frame: Fields, limits: ProtocolLimits, options: ValidateOptions): Validation<Request | FamilyRequest>;
export function validateRequest(frame: Fields, limits: ProtocolLimits, options: ValidateOptions = {}): Validation<Request | FamilyRequest> {
  if (!('id' in frame)) return badRequest(undefined, 'id is missing');
  const id = frame.id;
  if (!isUint(id)) return badRequest(undefined, `id must be a non-negative safe integer, got ${describe(id)}`);
  const op = frame.op;
  if (op === undefined) return badRequest(id, 'op is missing');
  if (typeof op !== 'string') return badRequest(id, `op must be a string, got ${describe(op)}`);
  if (!OP_SET.has(op)) return familyRequest(frame, op, id, limits, options.extensions);
  try {
    const request = BUILDERS[op as Op](frame, id, limits);
    // Size last: TOO_LARGE is for an otherwise valid push.
    if (request.op === 'push' && options.checkDataSize !== false) measured.set(request, packData(request.data, limits));
    return { ok: true, request };
  } catch (error) {
    if (error instanceof VeraError) return { ok: false, id, error };
    throw error;
  }
}

function familyRequest(frame: Fields, op: string, id: number, limits: ProtocolLimits, extensions: ProtocolExtensions | undefined): Validation<FamilyRequest> {
  const build = extensions?.get(op);
  if (build === undefined) return badRequest(id, `unknown op ${describe(op)} (expected one of ${[...OPS, ...(extensions?.keys() ?? [])].join(', ')})`);
  try {
    const request = build(frame, id, limits);
    if (request.id !== id || request.op !== op) throw new VeraError('INTERNAL', `the builder of ${op} returned a request for ${describe(request.op)}`);
    return { ok: true, request };
  } catch (error) {
    if (error instanceof VeraError) return { ok: false, id, error };
    throw error;
  }
}

/** The error for a first frame that is not `hello` (PROTOCOL.md "Session"). */
export function helloFirstError(op: string): ProtocolError {
  return { code: 'BAD_REQUEST', message: `the first request on a connection must be hello, got ${describe(op)}` };
}

function badRequest(id: number | undefined, message: string): { readonly ok: false; readonly id?: number; readonly error: ProtocolError } {
  const error: ProtocolError = { code: 'BAD_REQUEST', message };
  return id === undefined ? { ok: false, error } : { ok: false, id, error };
}

// ---------------------------------------------------------------- per-op builders
// Each returns the request with only the fields that were present, so decoding
// what a client encoded gives back exactly what it encoded.

type Builder<O extends Op> = (f: Fields, id: number, limits: ProtocolLimits) => RequestOf<O>;

const BUILDERS: { readonly [O in Op]: Builder<O> } = {
  hello: (f, id) => ({
    id,
    op: 'hello',
    ...optional('timeoutMs', uintField(f, 'timeoutMs')),
    ...optional('session', sessionField(f)),
    ...optional('resume', resumeField(f)),
    ...optional('token', tokenField(f)),
    ...credentialFields(f),
  }),
  ping: (f, id) => ({ id, op: 'ping', ...optional('ack', uintField(f, 'ack')) }),
  bye: (_f, id) => ({ id, op: 'bye' }),
  push: (f, id, limits) => ({
    id,
    op: 'push',
    path: pathField(f, false, limits),
    data: dataField(f, limits),
    ...optional('persistent', boolField(f, 'persistent')),
    ...optional('watch', boolField(f, 'watch')),
    ...optional('ifLastIndex', uintField(f, 'ifLastIndex')),
  }),
  get: (f, id, limits) => ({
    id,
    op: 'get',
    path: pathField(f, false, limits),
    ...optional('consistency', consistencyField(f)),
    ...optional('stream', boolField(f, 'stream')),
  }),
  ls: (f, id, limits) => ({ id, op: 'ls', path: pathField(f, true, limits) }),
  delete: (f, id, limits) => {
    const path = pathField(f, false, limits);
    const index = uintField(f, 'index');
    if (index === undefined) throw invalid('index is missing (the index of the item to delete)');
    return { id, op: 'delete', path, index };
  },
  watch: (f, id, limits) => watchLike('watch', f, id, limits),
  unwatch: (f, id, limits) => watchLike('unwatch', f, id, limits),
};

function watchLike<O extends 'watch' | 'unwatch'>(op: O, f: Fields, id: number, limits: ProtocolLimits): RequestOf<O> {
  const prefix = boolField(f, 'prefix');
  const path = pathField(f, prefix === true, limits);
  // A watch may start from a past index: the events after it come with the reply (an extension of the shared contract).
  const since = op === 'watch' ? uintField(f, 'since') : undefined;
  return { id, op, path, ...optional('prefix', prefix), ...optional('since', since) } as RequestOf<O>;
}

// ---------------------------------------------------------------- fields

export function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

export function invalid(message: string): VeraError {
  return new VeraError('BAD_REQUEST', message);
}

/** Refuses a field other than `id`, `op` and `allowed` (a family op's builder checks its own); `where` prefixes the message. */
export function onlyFields(f: Fields, allowed: readonly string[], where = ''): void {
  for (const key of Object.keys(f)) if (key !== 'id' && key !== 'op' && !allowed.includes(key)) throw invalid(`${where}unexpected field '${key}'`);
}

function isUint(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

export function uintField(f: Fields, name: string): number | undefined {
  const value = f[name];
  if (value === undefined) return undefined;
  if (!isUint(value)) throw invalid(`${name} must be a non-negative safe integer, got ${describe(value)}`);
  return value;
}

export function boolField(f: Fields, name: string): boolean | undefined {
  const value = f[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw invalid(`${name} must be a boolean, got ${describe(value)}`);
  return value;
}

function consistencyField(f: Fields): Consistency | undefined {
  const value = f.consistency;
  if (value === undefined) return undefined;
  if (value !== 'linearizable' && value !== 'stale') {
    throw invalid(`consistency must be "linearizable" or "stale", got ${describe(value)}`);
  }
  return value;
}

function sessionField(f: Fields): string | undefined {
  const value = f.session;
  if (value === undefined) return undefined;
  const problem = validateSessionId(value);
  if (problem !== null) throw invalid(`session: ${problem}, got ${describe(value)}`);
  return value as string;
}

function resumeField(f: Fields): string | undefined {
  const value = f.resume;
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(value)) throw invalid(`resume must be the token a hello answered, got ${describe(value)}`);
  if (f.session === undefined) throw invalid('resume goes with session');
  return value;
}

function tokenField(f: Fields): string | undefined {
  const value = f.token;
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalid(`token must be a string, got ${describe(value)}`);
  if (utf8Length(value) > MAX_TOKEN_BYTES) throw invalid(`token is longer than ${MAX_TOKEN_BYTES} bytes`);
  return value;
}

/** `user` and `password` go together, and not with a token (extension; see docs/protocol.md). */
function credentialFields(f: Fields): { user?: string; password?: string } {
  if (f.user === undefined && f.password === undefined) return {};
  if (typeof f.user !== 'string' || f.user.length === 0 || f.user.length > 128) throw invalid(`user must be a user name of 1-128 characters, got ${describe(f.user)}`);
  if (typeof f.password !== 'string' || utf8Length(f.password) > 1024) throw invalid('password must be a string of at most 1024 bytes, given with user');
  if (f.token !== undefined) throw invalid('give a token or user and password, not both');
  return { user: f.user, password: f.password };
}

export function pathField(f: Fields, allowRoot: boolean, limits: ProtocolLimits): string {
  const value = f.path;
  if (value === undefined) throw invalid('path is missing');
  if (typeof value !== 'string') throw invalid(`path must be a string, got ${describe(value)}`);
  if (value === '/' && !allowRoot) throw invalid(`the root path '/' is only valid for ls and prefix watches, not here`);
  if (utf8Length(value) > limits.pathBytes) throw invalid(`path is longer than ${limits.pathBytes} UTF-8 bytes`);
  const problem = validatePath(value, { allowRoot });
  if (problem !== null) throw invalid(problem);
  return value;
}

export function dataField(f: Fields, limits: ProtocolLimits): JsonValue {
  if (!('data' in f) || f.data === undefined) throw invalid('data is missing (push needs a value; send null for none)');
  const problem = findDataProblem(f.data, 'data', limits.dataDepth);
  if (problem !== null) throw invalid(`${problem.where}: ${problem.message}`);
  return f.data as JsonValue;
}

export function checkDataSize(data: JsonValue, limits: ProtocolLimits): void {
  packData(data, limits);
}

/** `data` encoded as MessagePack, which is what its size limit is measured in; TOO_LARGE past the limit. */
export function packData(data: JsonValue, limits: ProtocolLimits): PackedValue {
  // Measured as MessagePack whatever the frame's encoding, so the limit means the
  // same for every client and matches what is stored and replicated.
  const packed = new PackedValue(data, packValue(data));
  if (packed.bytes.length > limits.dataBytes) {
    throw new VeraError('TOO_LARGE', `data is ${packed.bytes.length} bytes encoded as MessagePack; the limit is ${limits.dataBytes} bytes`);
  }
  return packed;
}

// The bytes a push's data was measured in when its request was checked, so the
// server carries them on instead of encoding the data again (packed.ts).
const measured = new WeakMap<PushRequest, PackedValue>();

/** A checked push's data with its MessagePack bytes: those it was measured in, or encoded now. */
export function packedData(request: PushRequest): PackedValue {
  return measured.get(request) ?? new PackedValue(request.data, packValue(request.data));
}

/** A short description of a bad value for error messages; never echoes a huge string. */
export function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    return value.length > 40 ? `${JSON.stringify(value.slice(0, 40))}... (${value.length} chars)` : JSON.stringify(value);
  }
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a value of type ${typeof value}`;
}
