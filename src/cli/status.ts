// `vera status`: GET /v1/status over HTTP, printed readably (or raw with --json).
import { httpBaseUrl } from '../client/urls.js';
import { boolFlag, type ParsedArgs } from './args.js';
import { serverList, timeoutArg } from './client-commands.js';
import { EXIT, UsageError } from './errors.js';
import { formatRecord } from './format.js';
import type { CliIO } from './io.js';
import { cliFetch, tlsClientOptions } from './tls-options.js';

export async function runStatus(args: ParsedArgs, io: CliIO): Promise<number> {
  if (args.positionals.length > 0) throw new UsageError(`'vera status' takes no arguments, got ${args.positionals.join(' ')}`);
  const timeout = timeoutArg(args);
  const tls = tlsClientOptions(args, io);
  // Each server in turn, until one answers: the first may be the member that is down.
  let url = '';
  let response: Response | null = null;
  for (const server of serverList(args, io)) {
    url = `${httpBaseUrl(server)}/v1/status`;
    try {
      response = await cliFetch(url, { signal: AbortSignal.timeout(timeout) }, tls);
      break;
    } catch (error) {
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : error instanceof Error ? error.message : String(error);
      io.stderr(`vera: cannot reach ${url}: ${cause}\n`);
    }
  }
  if (response === null) return EXIT.cannotConnect;
  const body = await response.text();
  if (!response.ok) {
    io.stderr(`vera: ${url} answered ${response.status}: ${body.slice(0, 500)}\n`);
    return EXIT.serverError;
  }
  let status: unknown;
  try {
    status = JSON.parse(body);
  } catch {
    io.stderr(`vera: ${url} did not answer JSON\n`);
    return EXIT.serverError;
  }
  if (boolFlag(args, 'json')) io.stdout(`${JSON.stringify(status)}\n`);
  else if (typeof status === 'object' && status !== null && !Array.isArray(status)) io.stdout(`${formatRecord(status as Record<string, unknown>)}\n`);
  else io.stdout(`${JSON.stringify(status)}\n`);
  return EXIT.ok;
}
