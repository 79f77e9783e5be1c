// The CLI's side of TLS: --ca FILE (or $VERA_CA) names the CA a wss:// or
// https:// server's certificate must chain to, --cert FILE and --key FILE (or
// $VERA_CERT and $VERA_KEY) a client certificate for servers started with
// --client-ca. WebSocket verbs hand them to the client library; HTTP calls
// (status, member, leader, snapshot save) go through cliFetch, which uses them
// for https:// URLs (global fetch cannot be given a CA without undici's Agent).
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import type { TlsClientOptions } from '../client/connection.js';
import type { FlagSpecs, ParsedArgs } from './args.js';
import { stringFlag } from './args.js';
import { UsageError } from './errors.js';
import type { CliIO } from './io.js';

export const CA_ENV = 'VERA_CA';
export const CERT_ENV = 'VERA_CERT';
export const KEY_ENV = 'VERA_KEY';

/** Flags every command that talks to a server takes. */
export const TLS_FLAGS: FlagSpecs = {
  ca: { kind: 'string' },
  cert: { kind: 'string' },
  key: { kind: 'string' },
};

/** The CA and client certificate the flags (or the environment) name, read from their files. */
export function tlsClientOptions(args: ParsedArgs, io: Pick<CliIO, 'env' | 'cwd'>): TlsClientOptions {
  const named = (flag: string, env: string): string | undefined => {
    const value = stringFlag(args, flag) ?? io.env[env];
    return value === undefined || value === '' ? undefined : value;
  };
  const read = (flag: string, env: string): Buffer | undefined => {
    const file = named(flag, env);
    if (file === undefined) return undefined;
    try {
      return readFileSync(resolve(io.cwd, file));
    } catch (err) {
      throw new UsageError(`--${flag} (or $${env}): cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  const ca = read('ca', CA_ENV);
  const cert = read('cert', CERT_ENV);
  const key = read('key', KEY_ENV);
  if ((cert === undefined) !== (key === undefined)) throw new UsageError('--cert and --key go together: a client certificate and its private key (PEM)');
  return { ...(ca === undefined ? {} : { ca }), ...(cert === undefined ? {} : { cert }), ...(key === undefined ? {} : { key }) };
}

export interface CliFetchInit {
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly signal?: AbortSignal;
}

/**
 * fetch(), but an https:// URL is requested with `tls` (CA, client certificate)
 * when any is given. Fails as fetch does: a TypeError whose cause is the socket's
 * error (a certificate refused, a connection refused).
 */
export function cliFetch(url: string, init: CliFetchInit = {}, tls: TlsClientOptions = {}): Promise<Response> {
  const secure = url.startsWith('https:') && (tls.ca !== undefined || tls.cert !== undefined);
  // A request with a body goes through node:http(s) too: fetch sends a request again by itself when it
  // is answered 421 (a follower's NOT_LEADER), and a challenge response (operator-call.ts) serves once.
  if (!secure && init.body === undefined) {
    return fetch(url, {
      ...(init.method === undefined ? {} : { method: init.method }),
      ...(init.headers === undefined ? {} : { headers: { ...init.headers } }),
      ...(init.body === undefined ? {} : { body: init.body }),
      ...(init.signal === undefined ? {} : { signal: init.signal }),
    });
  }
  return new Promise((resolvePromise, reject) => {
    const req = (url.startsWith('https:') ? httpsRequest : httpRequest)(
      url,
      {
        method: init.method ?? 'GET',
        headers: { ...init.headers, ...(init.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(init.body)) }) },
        // One request per connection: nothing pooled keeps the command alive.
        agent: false,
        ...(tls.ca === undefined ? {} : { ca: tls.ca as string | Buffer | Array<string | Buffer> }),
        ...(tls.cert === undefined ? {} : { cert: tls.cert }),
        ...(tls.key === undefined ? {} : { key: tls.key }),
        ...(init.signal === undefined ? {} : { signal: init.signal }),
      },
      (res) => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (Array.isArray(value)) for (const v of value) headers.append(name, v);
          else if (value !== undefined) headers.set(name, value);
        }
        const status = res.statusCode ?? 500;
        const noBody = status === 204 || status === 205 || status === 304 || init.method === 'HEAD';
        if (noBody) res.resume();
        const body = noBody ? null : (Readable.toWeb(res) as unknown as ConstructorParameters<typeof Response>[0]);
        resolvePromise(new Response(body, { status, statusText: res.statusMessage ?? '', headers }));
      },
    );
    req.on('error', (err) => reject(new TypeError('fetch failed', { cause: err })));
    req.end(init.body);
  });
}
