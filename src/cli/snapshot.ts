// `vera snapshot save FILE` downloads a backup (GET /v1/snapshot) and writes it
// only once it is complete and verified; `vera snapshot restore FILE --data DIR`
// seeds a new single-member store from one, verifying the whole file before it
// writes anything. The file format is described in src/server/admin/backup.ts.

import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { httpBaseUrl } from '../client/urls.js';
import { fsyncDir } from '../raft/fsync.js';
import { BackupError, restoreBackup, verifyBackupFile, type VerifiedBackup } from '../server/admin/backup.js';
import { boolFlag, parseArgs, stringFlag, type FlagSpecs, type ParsedArgs } from './args.js';
import { serverList, timeoutArg } from './client-commands.js';
import { buildServerConfig, SECRET_ENV } from './config.js';
import { devClusterSecret } from './dev-secret.js';
import { operatorHeaders } from './operator-call.js';
import { EXIT, UsageError } from './errors.js';
import type { CliIO } from './io.js';
import { USAGE } from './usage.js';
import type { TlsClientOptions } from '../client/connection.js';
import { cliFetch, tlsClientOptions, TLS_FLAGS } from './tls-options.js';

/**
 * How long `save` waits on a silent server by default. The server reads the whole state
 * once (to size the header) before it sends a byte, seconds per 10^6 items, so
 * the client commands' 5 s would fail a large store on a slower machine.
 */
const SAVE_SILENCE_MS = 120_000;

export const SAVE_FLAGS: FlagSpecs = {
  server: { kind: 'string' },
  secret: { kind: 'string' },
  timeout: { kind: 'string' },
  json: { kind: 'boolean' },
  ...TLS_FLAGS,
  help: { kind: 'boolean', short: 'h' },
};

export const RESTORE_FLAGS: FlagSpecs = {
  data: { kind: 'string' },
  id: { kind: 'string' },
  client: { kind: 'string' },
  peer: { kind: 'string' },
  json: { kind: 'boolean' },
  help: { kind: 'boolean', short: 'h' },
};

/** `vera snapshot <save|restore> ...`; resolves with the exit code. */
export async function runSnapshot(argv: readonly string[], io: CliIO): Promise<number> {
  const [action, ...rest] = argv;
  if (action === undefined || action === '--help' || action === '-h') {
    (action === undefined ? io.stderr : io.stdout)(`${USAGE.snapshot}\n`);
    return action === undefined ? EXIT.usage : EXIT.ok;
  }
  if (action === 'save') {
    const args = parseArgs(rest, SAVE_FLAGS, 'vera snapshot save');
    if (boolFlag(args, 'help')) return help(io);
    return save(args, io);
  }
  if (action === 'restore') {
    const args = parseArgs(rest, RESTORE_FLAGS, 'vera snapshot restore');
    if (boolFlag(args, 'help')) return help(io);
    return restore(args, io);
  }
  throw new UsageError(`unknown action ${JSON.stringify(action)}: use 'vera snapshot save FILE' or 'vera snapshot restore FILE --data DIR'`);
}

function help(io: CliIO): number {
  io.stdout(`${USAGE.snapshot}\n`);
  return EXIT.ok;
}

function fileArg(args: ParsedArgs, command: string, io: CliIO): string {
  if (args.positionals.length !== 1) throw new UsageError(`'${command}' takes one FILE, got ${args.positionals.length} argument(s)`);
  return resolve(io.cwd, args.positionals[0]!);
}

// ---------------------------------------------------------------- save

async function save(args: ParsedArgs, io: CliIO): Promise<number> {
  const file = fileArg(args, 'vera snapshot save', io);
  const servers = serverList(args, io);
  const timeoutMs = stringFlag(args, 'timeout') === undefined ? SAVE_SILENCE_MS : timeoutArg(args);
  // A backup is the whole database: a member with a cluster secret hands it only to a caller who sends it.
  const secret = stringFlag(args, 'secret') ?? (io.env[SECRET_ENV] === undefined || io.env[SECRET_ENV] === '' ? undefined : io.env[SECRET_ENV]) ?? devClusterSecret(io) ?? undefined;
  const tls = tlsClientOptions(args, io);
  let lastFailure = '';
  for (const server of servers) {
    const url = `${httpBaseUrl(server)}/v1/snapshot`;
    const outcome = await download(url, file, timeoutMs, secret, tls);
    if (outcome.kind === 'saved') {
      const { header, sha256 } = outcome.backup;
      const summary = { file, index: header.index, term: header.term, bytes: header.bytes, node: header.node, created: header.created, sha256 };
      io.stdout(boolFlag(args, 'json') ? `${JSON.stringify(summary)}\n` : `saved ${file}: index ${header.index}, term ${header.term}, ${header.bytes} bytes of state from ${header.node} (sha256 ${sha256})\n`);
      return EXIT.ok;
    }
    if (outcome.kind === 'failed') {
      io.stderr(`vera: ${outcome.message}; ${file} was not written\n`);
      return EXIT.serverError;
    }
    lastFailure = outcome.message;
  }
  io.stderr(`vera: ${lastFailure}\n`);
  return EXIT.cannotConnect;
}

type DownloadOutcome = { kind: 'saved'; backup: VerifiedBackup } | { kind: 'unreachable'; message: string } | { kind: 'failed'; message: string };

/**
 * Streams the backup into a temporary file beside `file`, verifies it, then renames
 * it into place (after fsync), so `file` is either untouched or a complete, verified backup.
 */
async function download(url: string, file: string, timeoutMs: number, secret: string | undefined, tls: TlsClientOptions): Promise<DownloadOutcome> {
  // The timeout bounds waiting for the answer and each pause in the body, not a long download.
  const controller = new AbortController();
  let timer = setTimeout(() => controller.abort(), timeoutMs);
  const touch = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => controller.abort(), timeoutMs);
  };
  let response: Response;
  try {
    const headers = await operatorHeaders(new URL(url).origin, secret, 'GET', '/v1/snapshot', controller.signal, tls);
    response = await cliFetch(url, { signal: controller.signal, headers }, tls);
  } catch (error) {
    clearTimeout(timer);
    return { kind: 'unreachable', message: `cannot reach ${url}: ${causeOf(error)}` };
  }
  if (!response.ok || response.body === null) {
    clearTimeout(timer);
    const body = await response.text().catch(() => '');
    return { kind: 'failed', message: `${url} answered ${response.status}: ${body.trim().slice(0, 500)}` };
  }
  const temporary = join(dirname(file), `.${basename(file)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  let renamed = false;
  try {
    const handle = await open(temporary, 'wx');
    try {
      for await (const chunk of response.body) {
        touch();
        await handle.write(chunk);
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
    clearTimeout(timer);
    // Verified before it replaces FILE; the saved file is what was verified.
    const verified = await verifyBackupFile(temporary);
    await rename(temporary, file);
    const backup = { ...verified, path: file };
    renamed = true;
    await fsyncDir(dirname(file));
    return { kind: 'saved', backup };
  } catch (error) {
    const what = error instanceof BackupError ? `the backup from ${url} is invalid: ${error.message}` : `downloading ${url} failed: ${causeOf(error)}`;
    return { kind: 'failed', message: what };
  } finally {
    clearTimeout(timer);
    if (!renamed) await rm(temporary, { force: true });
  }
}

// ---------------------------------------------------------------- restore

async function restore(args: ParsedArgs, io: CliIO): Promise<number> {
  const file = fileArg(args, 'vera snapshot restore', io);
  const data = stringFlag(args, 'data');
  if (data === undefined) throw new UsageError('--data DIR is required: the new data directory to create');
  // The same rules as `vera start` for --id, --data, --client and --peer (the secret plays no part here).
  const flags = new Map<string, string>([['data', data]]);
  for (const name of ['id', 'client', 'peer']) {
    const value = stringFlag(args, name);
    if (value !== undefined) flags.set(name, value);
  }
  const config = buildServerConfig({ flags, env: {}, cwd: io.cwd });
  // The address is recorded in the replicated member list, so it must be one others can dial.
  if (config.client.port === 0 || config.peer.port === 0) throw new UsageError('--client and --peer need real ports (not 0): they are recorded as the member\'s address');

  let backup: VerifiedBackup;
  try {
    backup = await verifyBackupFile(file);
  } catch (error) {
    io.stderr(`vera: ${file} cannot be restored: ${causeOf(error)}; nothing was written\n`);
    return EXIT.serverError;
  }
  let restored: Awaited<ReturnType<typeof restoreBackup>>;
  try {
    restored = await restoreBackup(backup, config.dataDir, { id: config.id, host: config.peer.host, peerPort: config.peer.port, clientPort: config.client.port });
  } catch (error) {
    io.stderr(`vera: ${causeOf(error)}\n`);
    return EXIT.serverError;
  }
  const startArgs = ['--id', config.id, '--data', config.dataDir, '--client', hostPort(config.client), '--peer', hostPort(config.peer)];
  const summary = {
    file,
    dataDir: config.dataDir,
    id: config.id,
    index: backup.header.index,
    term: backup.header.term,
    records: backup.records,
    clusterId: restored.clusterId,
    start: `vera start ${startArgs.join(' ')}`,
  };
  io.stdout(
    boolFlag(args, 'json')
      ? `${JSON.stringify(summary)}\n`
      : `restored ${file} into ${config.dataDir}: member ${config.id} of a new single-member cluster, index ${backup.header.index} (term ${backup.header.term}), ${backup.records} records\nstart it with: ${summary.start}\n`,
  );
  return EXIT.ok;
}

function hostPort(address: { host: string; port: number }): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}

function causeOf(error: unknown): string {
  if (error instanceof Error && error.cause instanceof Error) return `${error.message} (${error.cause.message})`;
  return error instanceof Error ? error.message : String(error);
}
