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
  const url = serverUrl(address);
  if (url.pathname === '' || url.pathname === '/') url.pathname = CONNECT_PATH;
  return url.toString();
}

/**
 * Where to reconnect after NOT_LEADER: the hint is the leader's `ws://host:port`, and
 * `/v1/connect` is added to its path. Normalised as sessionUrl normalises (host in lower
 * case, no default port, IPv6 compressed), so a leader also named some other way
 * (in hello's `members`, say) is one server, not two. Throws BAD_REQUEST when malformed.
 */
export function leaderSessionUrl(leader: string): string {
  const url = serverUrl(leader);
  const path = url.pathname.replace(/\/+$/, '');
  url.pathname = path === CONNECT_PATH ? path : `${path}${CONNECT_PATH}`;
  return url.toString();
}

/** A server address as a ws:// or wss:// URL (http(s) mapped, a bare host:port taken as ws). */
function serverUrl(address: string): URL {
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
  return url;
}

/** The HTTP base of a server address, for /v1/status and friends. */
export function httpBaseUrl(address: string): string {
  const url = new URL(sessionUrl(address));
  url.protocol = url.protocol === 'wss:' ? 'https:' : 'http:';
  url.pathname = '/';
  return url.toString().replace(/\/$/, '');
}

/** The most members one hello may add to the ring; the rest of its list is ignored. */
export const MAX_LEARNT_MEMBERS = 64;

/**
 * The known servers, tried in turn; the one that worked last is tried first.
 * The order is shuffled, so clients given the same list spread over its members
 * instead of all dialling the first, and the clients of a member that goes spread
 * over the others instead of all moving to the one after it. The members a hello
 * names are added, shuffled too (the latest hello's list replaces the one before
 * it); the addresses the user gave are never dropped.
 */
export class ServerRing {
  private readonly urls: string[] = [];
  private readonly given: ReadonlySet<string>;
  /**
   * True when the user gave a wss:// address: learnt members and leader hints must then be
   * wss:// too, or one that names a ws:// URL (a member behind a TLS-terminating proxy,
   * say) would have the client send its session, resume token and credentials in cleartext.
   */
  private readonly secureOnly: boolean;
  /** URLs the last hello's `members` added (not given by the user). */
  private learnt = new Set<string>();
  private cursor = 0;

  /** `random` (in [0, 1), default Math.random) shuffles the order; one that always answers 0 keeps it. */
  constructor(
    addresses: readonly string[],
    private readonly random: () => number = Math.random,
  ) {
    if (addresses.length === 0) throw new VeraError('BAD_REQUEST', 'at least one server address is needed');
    const urls: string[] = [];
    for (const address of addresses) {
      const url = sessionUrl(address);
      if (!urls.includes(url)) urls.push(url);
    }
    this.urls.push(...shuffle(urls, random));
    this.given = new Set(this.urls);
    this.secureOnly = this.urls.some((url) => url.startsWith('wss:'));
  }

  /** Where a NOT_LEADER hint leads, or null when it is malformed or would lower the transport. */
  leaderUrl(leader: string): string | null {
    let url: string;
    try {
      url = leaderSessionUrl(leader);
    } catch {
      return null;
    }
    return this.keepsTransport(url) ? url : null;
  }

  /** Whether a URL the servers named (not the user) may be tried: never ws:// once wss:// was given. */
  private keepsTransport(url: string): boolean {
    return !this.secureOnly || url.startsWith('wss:');
  }

  add(url: string): void {
    if (!this.urls.includes(url)) this.urls.push(url);
  }

  /**
   * Adopts the members a hello named (`ws://host:port` each): at most MAX_LEARNT_MEMBERS
   * of them, skipping anything that is not a ws:// or wss:// URL, and ws:// ones when a
   * wss:// address was given. Members an earlier hello named and this one does not are
   * dropped, except the current server.
   */
  learn(members: readonly string[]): void {
    const named = new Set<string>();
    for (const member of members.slice(0, MAX_LEARNT_MEMBERS)) {
      const url = memberSessionUrl(member);
      if (url !== null && this.keepsTransport(url)) named.add(url);
    }
    const current = this.current();
    const kept = this.urls.filter((url) => !this.learnt.has(url) || named.has(url) || url === current);
    const learnt = new Set([...this.learnt].filter((url) => url === current && !named.has(url)));
    for (const url of named) if (!this.given.has(url)) learnt.add(url);
    kept.push(...shuffle([...named].filter((url) => !kept.includes(url)), this.random));
    this.urls.splice(0, this.urls.length, ...kept);
    this.learnt = learnt;
    this.cursor = this.urls.indexOf(current);
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

/**
 * The URLs in a random order (Fisher-Yates, taking each from the part not yet placed);
 * a source that answers 0 leaves the order as it was, and one outside [0, 1) cannot
 * lose or repeat a URL.
 */
function shuffle(urls: string[], random: () => number): string[] {
  for (let i = urls.length - 1; i > 0; i--) {
    const pick = Math.floor(random() * (i + 1));
    const j = i - (Number.isInteger(pick) ? Math.min(i, Math.max(0, pick)) : 0);
    [urls[i], urls[j]] = [urls[j]!, urls[i]!];
  }
  return urls;
}

/** The session URL of a member a hello named, or null when it is not a ws:// or wss:// URL. */
function memberSessionUrl(member: string): string | null {
  if (!/^wss?:\/\//i.test(member)) return null;
  try {
    return sessionUrl(member);
  } catch {
    return null;
  }
}
