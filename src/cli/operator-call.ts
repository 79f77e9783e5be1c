// The CLI's side of operator authentication (src/server/operator-auth.ts): ask the
// member for a challenge, then answer it with the cluster secret, so the secret
// itself never crosses the network.
import type { TlsClientOptions } from '../client/connection.js';
import { operatorAuthorization } from '../server/operator-auth.js';
import { cliFetch } from './tls-options.js';

/** The Authorization header for one operator request to `base` (an http(s) URL, https with `tls`), or none without a secret. */
export async function operatorHeaders(
  base: string,
  secret: string | null | undefined,
  method: string,
  path: string,
  signal?: AbortSignal,
  tls: TlsClientOptions = {},
): Promise<Record<string, string>> {
  if (secret === null || secret === undefined) return {};
  const res = await cliFetch(`${base}/v1/challenge`, signal === undefined ? {} : { signal }, tls);
  if (!res.ok) throw new Error(`${base}/v1/challenge answered ${res.status}`);
  const { nonce } = (await res.json()) as { nonce?: unknown };
  if (typeof nonce !== 'string') throw new Error(`${base}/v1/challenge gave no nonce`);
  return { authorization: operatorAuthorization(secret, nonce, method, path) };
}
