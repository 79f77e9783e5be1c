// The client verbs of `vera`: push, get, ls, delete, watch. Arguments are
// checked before connecting (usage errors exit 2 without touching the network).
import { readFileSync } from 'node:fs';
import { jsonText, parseJson } from '../protocol/json.js';
import { resolve } from 'node:path';
import { connect, type ConnectOptions, type VeraClient } from '../client/client.js';
import { httpBaseUrl, sessionUrl } from '../client/urls.js';
import { validatePath, VeraError, type Item, type JsonValue } from '../protocol/index.js';
import { boolFlag, stringFlag, type FlagSpecs, type ParsedArgs } from './args.js';
import { EXIT, UsageError } from './errors.js';
import { formatEvent, formatItem, formatResync } from './format.js';
import { stopped, type CliIO } from './io.js';
import { cliFetch, tlsClientOptions, TLS_FLAGS } from './tls-options.js';

export const DEFAULT_SERVER = 'ws://127.0.0.1:1919';
export const SERVER_ENV = 'VERA_SERVER';
const DEFAULT_TIMEOUT_MS = 5_000;

export const CLIENT_FLAGS: FlagSpecs = {
  server: { kind: 'string' },
  json: { kind: 'boolean' },
  encoding: { kind: 'string' },
  timeout: { kind: 'string' },
  token: { kind: 'string' },
  user: { kind: 'string' },
  'password-file': { kind: 'string' },
  ...TLS_FLAGS,
  help: { kind: 'boolean', short: 'h' },
};

export const TOKEN_ENV = 'VERA_TOKEN';
export const USER_ENV = 'VERA_USER';
export const PASSWORD_ENV = 'VERA_PASSWORD';

export interface Context {
  readonly args: ParsedArgs;
  readonly io: CliIO;
  readonly json: boolean;
}

export interface ClientCommand {
  readonly flags: FlagSpecs;
  /** Names of the positional arguments, for arity errors. */
  readonly positionals: readonly string[];
  /**
   * Checks the arguments and returns the action to run once connected. The action may
   * return an exit code: an answer that says the request did not happen (a unit that
   * could not be frozen) exits non-zero without being an error reply.
   */
  readonly prepare: (ctx: Context) => (client: VeraClient) => Promise<void | number>;
  /**
   * An action that needs no session, or null: it runs instead of connecting (a stale read
   * over HTTP, which any member answers even with no leader).
   */
  readonly withoutSession?: (ctx: Context, servers: readonly string[]) => (() => Promise<void>) | null;
}

export const CLIENT_COMMANDS: Readonly<Record<string, ClientCommand>> = {
  push: {
    flags: { ...CLIENT_FLAGS, persistent: { kind: 'boolean' }, hold: { kind: 'boolean' }, 'if-last-index': { kind: 'string' }, string: { kind: 'boolean' }, bytes: { kind: 'boolean' } },
    positionals: ['PATH', 'DATA'],
    prepare: (ctx) => {
      const path = pathArg(ctx, 0, false);
      const data = dataArg(ctx, ctx.args.positionals[1]!);
      const persistent = boolFlag(ctx.args, 'persistent');
      const hold = boolFlag(ctx.args, 'hold');
      const ifLast = stringFlag(ctx.args, 'if-last-index');
      const options = { persistent, ...(ifLast === undefined ? {} : { ifLastIndex: indexArg(ifLast, '--if-last-index') }) };
      return async (client) => {
        const item = await client.push(path, data, options);
        print(ctx, item, () => `pushed ${path} ${formatItem(item)}`);
        if (hold) {
          ctx.io.stderr(`holding session ${client.session} (and its ephemeral items) until Ctrl-C\n`);
          sayConnectionChanges(ctx, client);
          await stoppedOrLost(ctx, client);
        } else if (!persistent) {
          ctx.io.stderr('note: the item is ephemeral and is deleted as this command ends its session (use --persistent or --hold)\n');
        }
      };
    },
  },
  get: {
    flags: { ...CLIENT_FLAGS, stale: { kind: 'boolean' } },
    positionals: ['PATH'],
    // A stale read is answered by whichever member is reached, leader or not, quorum or not: over HTTP, without a session.
    withoutSession: (ctx, servers) => {
      if (!boolFlag(ctx.args, 'stale')) return null;
      const path = pathArg(ctx, 0, false);
      return async () => {
        const result = await staleRead(ctx, servers, path);
        print(ctx, result, () => [`${path} at index ${result.index} (stale: as the member that answered has it): ${result.items.length} item(s)`, ...result.items.map(formatItem)].join('\n'));
      };
    },
    prepare: (ctx) => {
      const path = pathArg(ctx, 0, false);
      const consistency = boolFlag(ctx.args, 'stale') ? ('stale' as const) : ('linearizable' as const);
      return async (client) => {
        const result = await client.get(path, { consistency });
        print(ctx, result, () => [`${path} at index ${result.index}: ${result.items.length} item(s)`, ...result.items.map(formatItem)].join('\n'));
      };
    },
  },
  ls: {
    flags: CLIENT_FLAGS,
    positionals: ['PATH'],
    prepare: (ctx) => {
      const path = pathArg(ctx, 0, true);
      return async (client) => {
        const result = await client.ls(path);
        if (ctx.json) print(ctx, result, () => '');
        else if (result.children.length > 0) ctx.io.stdout(`${result.children.join('\n')}\n`);
      };
    },
  },
  delete: {
    flags: CLIENT_FLAGS,
    positionals: ['PATH', 'INDEX'],
    prepare: (ctx) => {
      const path = pathArg(ctx, 0, false);
      const index = indexArg(ctx.args.positionals[1]!, 'INDEX');
      return async (client) => {
        await client.delete(path, index);
        print(ctx, { path, index, deleted: true }, () => `deleted ${path} #${index}`);
      };
    },
  },
  watch: {
    flags: { ...CLIENT_FLAGS, prefix: { kind: 'boolean' }, since: { kind: 'string' } },
    positionals: ['PATH'],
    prepare: (ctx) => {
      const prefix = boolFlag(ctx.args, 'prefix');
      const path = pathArg(ctx, 0, prefix);
      const sinceText = stringFlag(ctx.args, 'since');
      const since = sinceText === undefined ? undefined : indexArg(sinceText, '--since');
      return async (client) => {
        // Subscribe before watching: events may arrive in the same packet as the watch reply.
        const events = client.events();
        sayConnectionChanges(ctx, client);
        const result = await client.watch(path, { prefix, ...(since === undefined ? {} : { since }) });
        const { events: replayed, ...shown } = result;
        print(ctx, { type: 'watch', path, ...shown }, () =>
          [
            `watching ${path}${prefix ? ' and below' : ''} from index ${result.index}`,
            ...(result.missed === true ? [`(the events since ${since} are no longer held: start from the items below)`] : []),
            ...(result.items ?? []).map(formatItem),
          ].join('\n'),
        );
        // What happened since --since, before the live events (all of which come after the watch's index).
        for (const event of replayed ?? []) print(ctx, event, () => formatEvent(event));
        const stop = stopped(ctx.io.stop).then(() => null);
        for (;;) {
          const next = await Promise.race([events.next(), stop]);
          if (next === null || next.done === true) break;
          const event = next.value;
          if (event.type === 'resync') print(ctx, event, () => formatResync(event));
          else print(ctx, event, () => formatEvent(event));
        }
        await events.return?.();
      };
    },
  },
};

/** Runs a client verb: check arguments, connect, act, close. Returns the exit code. */
export async function runClientCommand(name: string, command: ClientCommand, args: ParsedArgs, io: CliIO): Promise<number> {
  const json = boolFlag(args, 'json');
  const ctx: Context = { args, io, json };
  if (args.positionals.length !== command.positionals.length) {
    throw new UsageError(`'vera ${name}' takes ${command.positionals.join(' ')}, got ${args.positionals.length} argument(s)`);
  }
  const servers = serverList(args, io);
  const direct = command.withoutSession?.(ctx, servers) ?? null;
  if (direct !== null) {
    try {
      await direct();
      return EXIT.ok;
    } catch (error) {
      if (!(error instanceof VeraError)) throw error;
      io.stderr(`vera: ${error.code}: ${error.message}\n`);
      return error.code === 'UNAVAILABLE' ? EXIT.cannotConnect : EXIT.serverError;
    }
  }
  const action = command.prepare(ctx);
  const options = { ...connectOptions(args), ...credentials(args, io), ...tlsClientOptions(args, io) };

  let client: VeraClient;
  try {
    client = await connect(servers, options);
  } catch (error) {
    const failure = error instanceof VeraError ? error : new VeraError('INTERNAL', String(error));
    io.stderr(`vera: ${failure.code}: ${failure.message}\n`);
    return failure.code === 'UNAVAILABLE' || failure.code === 'NO_LEADER' || failure.code === 'TIMEOUT' ? EXIT.cannotConnect : EXIT.serverError;
  }
  try {
    return (await action(client)) ?? EXIT.ok;
  } catch (error) {
    if (!(error instanceof VeraError)) throw error;
    io.stderr(`vera: ${error.code}: ${error.message}\n`);
    return EXIT.serverError;
  } finally {
    await client.close();
  }
}

export function serverList(args: ParsedArgs, io: CliIO): string[] {
  const text = stringFlag(args, 'server') ?? io.env[SERVER_ENV] ?? DEFAULT_SERVER;
  const servers = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (servers.length === 0) throw new UsageError('--server needs at least one URL');
  for (const server of servers) {
    try {
      sessionUrl(server);
    } catch (error) {
      throw new UsageError(error instanceof Error ? error.message : String(error));
    }
  }
  return servers;
}

export function timeoutArg(args: ParsedArgs): number {
  const text = stringFlag(args, 'timeout');
  if (text === undefined) return DEFAULT_TIMEOUT_MS;
  const ms = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(ms > 0 && Number.isSafeInteger(ms))) throw new UsageError(`--timeout must be a positive number of milliseconds, got ${JSON.stringify(text)}`);
  return ms;
}

function connectOptions(args: ParsedArgs): ConnectOptions {
  const encoding = stringFlag(args, 'encoding') ?? 'msgpack';
  if (encoding !== 'msgpack' && encoding !== 'json') throw new UsageError(`--encoding must be msgpack or json, got ${JSON.stringify(encoding)}`);
  const timeout = timeoutArg(args);
  return { encoding, connectTimeoutMs: timeout, requestTimeoutMs: timeout };
}

/**
 * Who the command acts as: --token (or $VERA_TOKEN), else --user (or $VERA_USER) with the
 * password from --password-file or $VERA_PASSWORD. Never a password flag: ps shows flags.
 */
export function credentials(args: ParsedArgs, io: CliIO): { token?: string; user?: string; password?: string } {
  const token = stringFlag(args, 'token') ?? io.env[TOKEN_ENV];
  if (token !== undefined && token !== '') return { token };
  const user = stringFlag(args, 'user') ?? io.env[USER_ENV];
  if (user === undefined || user === '') return {};
  const file = stringFlag(args, 'password-file');
  let password = io.env[PASSWORD_ENV];
  if (file !== undefined) {
    try {
      password = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (err) {
      throw new UsageError(`--password-file: cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (password === undefined) throw new UsageError(`--user ${user} needs a password: --password-file FILE or $${PASSWORD_ENV}`);
  return { user, password };
}

export function pathArg(ctx: Context, position: number, allowRoot: boolean): string {
  const path = ctx.args.positionals[position]!;
  const problem = validatePath(path, { allowRoot });
  if (problem !== null) throw new UsageError(problem);
  return path;
}

export function indexArg(text: string, what: string): number {
  const index = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(index)) throw new UsageError(`${what} must be a non-negative whole number, got ${JSON.stringify(text)}`);
  return index;
}

/**
 * The text as JSON; text that is not JSON is a usage error unless `asString`, which takes it
 * as a string (a typo in JSON must not quietly become a string item).
 */
export function parseData(text: string, asString = false): JsonValue {
  if (asString) return text;
  try {
    return parseJson(text) as JsonValue;
  } catch (err) {
    if (err instanceof VeraError) throw new UsageError(`DATA: ${err.message}`);
    throw new UsageError(`DATA is not valid JSON (${err instanceof Error ? err.message : String(err)}); pass --string to push it as text`);
  }
}

/** The most a DATA argument may read from stdin or a file: past it the server would refuse the item anyway. */
export const MAX_DATA_INPUT_BYTES = 64 * 1024 * 1024;

/**
 * DATA as given: `-` reads stdin, `@FILE` reads a file (`@@x` is the text `@x`), anything
 * else is the argument itself; then parsed as JSON, or taken as text with --string.
 */
export function dataArg(ctx: Context, arg: string): JsonValue {
  const asString = boolFlag(ctx.args, 'string');
  const asBytes = boolFlag(ctx.args, 'bytes');
  if (asString && asBytes) throw new UsageError('--string and --bytes cannot go together');
  let text = arg;
  if (arg === '-' || (arg.startsWith('@') && !arg.startsWith('@@'))) {
    const source = arg === '-' ? 'stdin' : arg.slice(1);
    let bytes: Buffer;
    try {
      bytes = arg === '-' ? ctx.io.readStdin(MAX_DATA_INPUT_BYTES + 1) : readFileSync(resolve(ctx.io.cwd, source));
    } catch (err) {
      throw new UsageError(`cannot read DATA from ${source}: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (bytes.length > MAX_DATA_INPUT_BYTES) throw new UsageError(`DATA from ${source} is larger than ${MAX_DATA_INPUT_BYTES} bytes`);
    // --bytes: a binary value, byte for byte (MessagePack bin; {"$binary": base64} in JSON).
    if (asBytes) return bytes as unknown as JsonValue;
    text = bytes.toString('utf8');
    // A file or a pipe usually ends with a newline that is not part of a text value.
    if (asString) text = text.replace(/\r?\n$/, '');
  } else if (arg.startsWith('@@')) text = arg.slice(1);
  if (asBytes) return Buffer.from(text, 'utf8') as unknown as JsonValue;
  return parseData(text, asString);
}

export function print(ctx: Context, value: unknown, readable: () => string): void {
  ctx.io.stdout(`${ctx.json ? jsonText(value) : readable()}\n`);
}

/** Tells stderr when the connection is lost and when it is back, so a long-running verb is never silently stuck. */
function sayConnectionChanges(ctx: Context, client: VeraClient): void {
  client.on('disconnected', (reason) => ctx.io.stderr(`vera: connection lost (${reason}); reconnecting...\n`));
  client.on('connected', (info) => {
    if (info.resumed) ctx.io.stderr(`vera: reconnected to ${info.url}, session ${info.session} resumed\n`);
  });
}

/** Resolves on Ctrl-C; rejects when the session is lost for good (expired, taken over, refused). */
function stoppedOrLost(ctx: Context, client: VeraClient): Promise<void> {
  return new Promise((resolve, reject) => {
    void stopped(ctx.io.stop).then(resolve);
    client.on('sessionExpired', (error) => reject(new VeraError('SESSION_EXPIRED', `the session ended, and its ephemeral items with it: ${error.message}`)));
    client.on('failed', (error) => reject(error));
  });
}

/** GET /v1/data/PATH?consistency=stale from the first server that answers. */
async function staleRead(ctx: Context, servers: readonly string[], path: string): Promise<{ index: number; items: Item[] }> {
  const tls = tlsClientOptions(ctx.args, ctx.io);
  const creds = credentials(ctx.args, ctx.io);
  const headers: Record<string, string> =
    creds.token !== undefined ? { authorization: `Bearer ${creds.token}` } : creds.user !== undefined ? { authorization: `Basic ${Buffer.from(`${creds.user}:${creds.password ?? ''}`).toString('base64')}` } : {};
  const target = `/v1/data${path.split('/').map(encodeURIComponent).join('/')}?consistency=stale`;
  let lastProblem = 'no server to ask';
  for (const server of servers) {
    let response: Response;
    try {
      response = await cliFetch(`${httpBaseUrl(server)}${target}`, { headers, signal: AbortSignal.timeout(timeoutArg(ctx.args)) }, tls);
    } catch (error) {
      lastProblem = `${server}: ${error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error)}`;
      continue;
    }
    const text = await response.text();
    if (response.ok) return JSON.parse(text) as { index: number; items: Item[] };
    const parsed = (() => {
      try {
        return (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
      } catch {
        return undefined;
      }
    })();
    // A member that cannot serve it (it sends readers to the leader, or knows none): the next server may.
    if (parsed?.code === 'NOT_LEADER' || parsed?.code === 'NO_LEADER') {
      lastProblem = `${server}: ${parsed.message ?? parsed.code}`;
      continue;
    }
    throw new VeraError((parsed?.code ?? 'INTERNAL') as never, parsed?.message ?? `${server} answered ${response.status}`);
  }
  throw new VeraError('UNAVAILABLE', `no server answered the stale read: ${lastProblem}`);
}
