// DNS rebinding: a page on evil.example whose name is made to resolve to
// 127.0.0.1 after it loaded is, to the browser, still evil.example, so its
// requests to this member pass as same-origin (Origin and Host both name
// evil.example). What gives it away is the Host header: the member answers only
// to names it knows it has. A request (HTTP or WebSocket upgrade) is served when
// its Host names
//   - a loopback name: localhost, 127.0.0.1, [::1], and names under .localhost
//     (browsers resolve those to loopback themselves, never asking DNS: RFC 6761);
//   - the host the client port listens on, or a member's advertised client host
//     (the dashboard follows the leader to another member's URL);
//   - any IP address literal: a rebinding needs a DNS name the attacker controls,
//     and a page whose origin is an IP address was served from that address;
//   - a name given to --allowed-hosts (`*` allows any).
// The port is not judged: the name is what a rebinding changes. HTTP/1.0
// clients may leave Host out (no browser does); HTTP/1.1 requires it.
// This is etcd's --host-whitelist (CVE-2018-1099).
import { isIP } from 'node:net';

const LOOPBACK_NAMES: readonly string[] = ['localhost', '127.0.0.1', '::1'];

/** The host name of a Host header (`name`, `name:port`, `[v6]:port`), lower case, without brackets or a final dot; null when malformed. */
export function hostNameOf(header: string): string | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+)(?::\d{1,5})?$/.exec(header.trim());
  if (m === null) return null;
  let name = m[1]!.toLowerCase();
  if (name.startsWith('[')) name = name.slice(1, -1);
  if (name.endsWith('.')) name = name.slice(0, -1);
  return name === '' ? null : name;
}

/** The names a member answers to besides IP literals and loopback: its listen host, its cluster's client hosts, --allowed-hosts. */
export interface KnownHosts {
  readonly listenHost: string;
  /** Names from --allowed-hosts (already host names), `*` for any. */
  readonly allowed: readonly string[];
  /** Every member's advertised client host (this member's own included). */
  readonly memberHosts: () => ReadonlySet<string>;
}

/** Why a request with this Host header is refused, or null when it is served. */
export function hostRefusal(header: string | undefined, httpVersion: string, known: KnownHosts): string | null {
  if (known.allowed.includes('*')) return null;
  if (header === undefined || header === '') {
    if (httpVersion === '1.0' || httpVersion === '0.9') return null;
    return `a request without a Host header is refused (HTTP/${httpVersion} requires one); this member answers to its own addresses, localhost and names given to --allowed-hosts`;
  }
  const name = hostNameOf(header);
  if (name !== null && answersTo(name, known)) return null;
  return (
    `requests for host ${JSON.stringify(header)} are refused (a page on another name pointed at this member, as in DNS rebinding, would send it): ` +
    'this member answers to its own addresses, localhost, its cluster members\' client hosts and names given to --allowed-hosts'
  );
}

function answersTo(name: string, known: KnownHosts): boolean {
  if (isIP(name) !== 0 || LOOPBACK_NAMES.includes(name) || name.endsWith('.localhost')) return true;
  if (name === known.listenHost.toLowerCase() || known.allowed.includes(name)) return true;
  return known.memberHosts().has(name);
}

/** The host name of a member's client URL (`ws://host:port`, `wss://[v6]:port`), lower case. */
export function hostOfClientUrl(url: string): string | null {
  try {
    return hostNameOf(new URL(url.replace(/^ws/, 'http')).host);
  } catch {
    return null;
  }
}
