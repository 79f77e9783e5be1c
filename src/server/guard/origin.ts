// A web page may open a WebSocket to any host and send any request to it; the
// browser says which page asked in the Origin header. Without a check, any page
// a user opens could drive the Vera on their machine (push, delete, defrag). A
// request that carries an Origin is served only if it is this member's own
// origin (a page it serves itself, such as the dashboard), another member's
// (the dashboard follows the leader), or one the operator allowed
// (--allowed-origins). Clients that are not browsers send no Origin and
// are not affected.

/** Why a request with this Origin is refused, or null when it is served. */
export function originRefusal(origin: string | undefined, host: string | undefined, allowed: readonly string[]): string | null {
  if (origin === undefined) return null;
  if (host !== undefined && (origin === `http://${host}` || origin === `https://${host}`)) return null;
  if (allowed.includes('*') || allowed.includes(origin)) return null;
  return `requests from web pages of ${JSON.stringify(origin)} are refused: the member serves only its own origin, its cluster's members' and those given to --allowed-origins`;
}

/** The web origin (`http://host:port`, or `https://`) of a member's client URL (`ws://host:port`, `wss://`). */
export function originOfClientUrl(url: string): string {
  return url.replace(/^ws(s?):\/\//, 'http$1://');
}
