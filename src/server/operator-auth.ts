// Proving knowledge of the cluster secret to an operator endpoint without
// putting it on the wire (the peer handshake never sends it either). The caller
// asks the member for a challenge (GET /v1/challenge: a fresh single-use nonce),
// then sends
//   Authorization: Vera-HMAC nonce=<nonce>, mac=<hex HMAC-SHA256(secret, nonce \n METHOD \n path)>
// A sniffer learns one MAC, good only for that method and path, within the
// nonce's 30 s, and only as a repeat of the request it saw (a nonce serves one
// method and path). The MAC does not cover the body: keeping content from
// being changed on the way is TLS's job (docs/security.md). Shared by
// the server (which checks) and the CLI (which signs); not part of the client
// protocol package (it uses node:crypto, and browsers never call these endpoints).
import { createHmac } from 'node:crypto';

export const OPERATOR_AUTH_SCHEME = 'Vera-HMAC';

/** The MAC a caller sends for `method` on `path` (the URL path, without the query) under `nonce`. */
export function operatorMac(secret: string, nonce: string, method: string, path: string): string {
  return createHmac('sha256', secret).update(`${nonce}\n${method.toUpperCase()}\n${path}`).digest('hex');
}

/** The Authorization header value for one request. */
export function operatorAuthorization(secret: string, nonce: string, method: string, path: string): string {
  return `${OPERATOR_AUTH_SCHEME} nonce=${nonce}, mac=${operatorMac(secret, nonce, method, path)}`;
}

/** The nonce and MAC of a `Vera-HMAC` Authorization header, or null when it is not one. */
export function parseOperatorAuthorization(header: string | undefined): { readonly nonce: string; readonly mac: string } | null {
  const m = /^Vera-HMAC\s+nonce=([A-Za-z0-9_-]{16,64}),\s*mac=([0-9a-f]{64})$/.exec(header ?? '');
  return m === null ? null : { nonce: m[1]!, mac: m[2]! };
}
