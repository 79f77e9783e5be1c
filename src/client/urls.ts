// Server addresses: what users pass to connect(), and the leader hints servers
// send back in NOT_LEADER errors.
import { VeraError } from '../protocol/index.js';

export const CONNECT_PATH = '/v1/connect';

/**
 * The WebSocket URL of a server's session endpoint. Accepts `ws://host:port`,
 * `wss://...`, `http(s)://...` (mapped to ws(s)), or a bare `host:port`; adds
 * `/v1/connect` when the URL has no path of its own.
 */
export function sessionUrl(address: string): string {
  const text = address.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `ws://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new VeraError('BAD_REQUEST', `invalid server address ${JSON.stringify(address)}`);
  }
  if (url.protocol === 'http:') url.protocol = 'ws:';
  else if (url.protocol === 'https:') url.protocol = 'wss:';
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
    throw new VeraError('BAD_REQUEST', `server address ${JSON.stringify(address)} must use ws:// or wss://`);
  }
  if (url.pathname === '' || url.pathname === '/') url.pathname = CONNECT_PATH;
  return url.toString();
}

/** Where to reconnect after NOT_LEADER: the hint is the leader's `ws://host:port`. */
export function leaderSessionUrl(leader: string): string {
  return `${leader.replace(/\/+$/, '')}${CONNECT_PATH}`;
}

/** The HTTP base of a server address, for /v1/status and friends. */
export function httpBaseUrl(address: string): string {
  const url = new URL(sessionUrl(address));
  url.protocol = url.protocol === 'wss:' ? 'https:' : 'http:';
  url.pathname = '/';
  return url.toString().replace(/\/$/, '');
}

/** The known servers, tried in turn; the one that worked last is tried first. */
export class ServerRing {
  private readonly urls: string[] = [];
  private cursor = 0;

  constructor(addresses: readonly string[]) {
    if (addresses.length === 0) throw new VeraError('BAD_REQUEST', 'at least one server address is needed');
    for (const address of addresses) this.add(sessionUrl(address));
  }

  add(url: string): void {
    if (!this.urls.includes(url)) this.urls.push(url);
  }

  /** The current candidate; call advance() when it failed. */
  current(): string {
    return this.urls[this.cursor % this.urls.length]!;
  }

  advance(): void {
    this.cursor = (this.cursor + 1) % this.urls.length;
  }

  /** Makes `url` the current candidate (adding it if new). */
  prefer(url: string): void {
    this.add(url);
    this.cursor = this.urls.indexOf(url);
  }

  all(): readonly string[] {
    return this.urls;
  }
}
