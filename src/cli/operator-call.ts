// The CLI's side of operator authentication (src/server/operator-auth.ts): ask the
// member for a challenge, then answer it with the cluster secret, so the secret
// itself never crosses the network.
import { operatorAuthorization } from '../server/operator-auth.js';

/** The Authorization header for one operator request to `base` (an http(s) URL), or none without a secret. */
export async function operatorHeaders(base: string, secret: string | null | undefined, method: string, path: string, signal?: AbortSignal): Promise<Record<string, string>> {
  if (secret === null || secret === undefined) return {};
  const res = await fetch(`${base}/v1/challenge`, signal === undefined ? {} : { signal });
  if (!res.ok) throw new Error(`${base}/v1/challenge answered ${res.status}`);
  const { nonce } = (await res.json()) as { nonce?: unknown };
  if (typeof nonce !== 'string') throw new Error(`${base}/v1/challenge gave no nonce`);
  return { authorization: operatorAuthorization(secret, nonce, method, path) };
}
