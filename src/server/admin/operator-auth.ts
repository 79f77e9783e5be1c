// Proving knowledge of the cluster secret to an operator endpoint without
// putting it on the wire (the peer handshake never sends it either). The caller
// asks the member for a challenge (GET /v1/challenge: a fresh nonce), then sends
//   Authorization: Vera-HMAC nonce=<nonce>, mac=<hex HMAC-SHA256(secret, nonce \n METHOD \n path \n hex SHA-256(body))>
// The MAC covers the body, so a sniffed request cannot be sent again with
// another body (a leader transfer to another member), and the member takes each
// nonce once, whether the MAC is right or not, so it cannot be sent again at
// all. Nonces live 30 s and are bounded per address and in all (see
// operator-challenges.ts). Shared by the server (which checks) and the CLI
// (which signs); not part of the client protocol package (it uses node:crypto,
// and browsers never call these endpoints).
import { createHash, createHmac } from 'node:crypto';

export const OPERATOR_AUTH_SCHEME = 'Vera-HMAC';

const NO_BODY = new Uint8Array(0);

/** The MAC a caller sends for `method` on `path` (the URL path, without the query) with `body` (empty without one) under `nonce`. */
export function operatorMac(secret: string, nonce: string, method: string, path: string, body: Uint8Array = NO_BODY): string {
  const bodyHash = createHash('sha256').update(body).digest('hex');
  return createHmac('sha256', secret).update(`${nonce}\n${method.toUpperCase()}\n${path}\n${bodyHash}`).digest('hex');
}

/** The Authorization header value for one request (`body`: the exact bytes sent). */
export function operatorAuthorization(secret: string, nonce: string, method: string, path: string, body: Uint8Array = NO_BODY): string {
  return `${OPERATOR_AUTH_SCHEME} nonce=${nonce}, mac=${operatorMac(secret, nonce, method, path, body)}`;
}

/** The nonce and MAC of a `Vera-HMAC` Authorization header, or null when it is not one. */
export function parseOperatorAuthorization(header: string | undefined): { readonly nonce: string; readonly mac: string } | null {
  const m = /^Vera-HMAC\s+nonce=([A-Za-z0-9_-]{16,64}),\s*mac=([0-9a-f]{64})$/.exec(header ?? '');
  return m === null ? null : { nonce: m[1]!, mac: m[2]! };
}
