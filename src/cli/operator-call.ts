// The CLI's side of operator authentication (src/server/admin/operator-auth.ts): ask the
// member for a challenge, then answer it with the cluster secret, so the secret
// itself never crosses the network.
import type { TlsClientOptions } from '../client/connection.js';
import { operatorAuthorization } from '../server/admin/operator-auth.js';
import { cliFetch } from './tls-options.js';

/** The Authorization header for one operator request to `base` (an http(s) URL, https with `tls`) sending `body` (exactly these bytes), or none without a secret. */
export async function operatorHeaders(
  base: string,
  secret: string | null | undefined,
  method: string,
  path: string,
  signal?: AbortSignal,
  tls: TlsClientOptions = {},
  body: Uint8Array = new Uint8Array(0),
): Promise<Record<string, string>> {
  if (secret === null || secret === undefined) return {};
  const res = await cliFetch(`${base}/v1/challenge`, signal === undefined ? {} : { signal }, tls);
  if (!res.ok) {
    // A member refuses new challenges while too many are out (429): say when to come back.
    const retry = res.headers.get('retry-after');
    const detail = ((await res.json().catch(() => ({}))) as { error?: { message?: unknown } }).error?.message;
    throw new Error(`${base}/v1/challenge answered ${res.status}${typeof detail === 'string' ? `: ${detail}` : ''}${retry === null ? '' : ` (retry after ${retry} s)`}`);
  }
  const { nonce } = (await res.json()) as { nonce?: unknown };
  if (typeof nonce !== 'string') throw new Error(`${base}/v1/challenge gave no nonce`);
  // The MAC covers the body: signed over the very bytes that are sent.
  return { authorization: operatorAuthorization(secret, nonce, method, path, body) };
}
