// The one check every request on the client port passes before it is routed:
// HTTP requests (every /v1 route, /healthz, /metrics, /ui) and WebSocket
// upgrades alike. First the Host (host-check.ts: DNS rebinding), then the
// Origin (origin.ts: other pages driving the member). A refusal is 403 with a
// JSON error naming what was refused and the flag that would allow it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { hostOfClientUrl, hostRefusal } from './host-check.js';
import { originOfClientUrl, originRefusal } from './origin.js';

export interface GateSources {
  readonly listenHost: string;
  /** --allowed-hosts, as host names (or `*`). */
  readonly allowedHosts: readonly string[];
  /** --allowed-origins. */
  readonly allowedOrigins: readonly string[];
  /** Every member's client URL (`ws://host:port`), this one's included; the array changes identity when the book does. */
  readonly memberClientUrls: () => readonly string[];
}

export interface GateRefusal {
  readonly event: 'host-refused' | 'origin-refused';
  readonly message: string;
}

export class RequestGate {
  private seenUrls: readonly string[] | null = null;
  private hosts: ReadonlySet<string> = new Set();
  private origins: readonly string[] = [];

  constructor(private readonly sources: GateSources) {}

  /** Why `req` is refused, or null when it may be routed. */
  refusal(req: IncomingMessage): GateRefusal | null {
    this.refresh();
    const host = hostRefusal(req.headers.host, req.httpVersion, { listenHost: this.sources.listenHost, allowed: this.sources.allowedHosts, memberHosts: () => this.hosts });
    if (host !== null) return { event: 'host-refused', message: host };
    const origin = originRefusal(req.headers.origin, req.headers.host, this.origins);
    return origin === null ? null : { event: 'origin-refused', message: origin };
  }

  /** The member hosts and origins, worked out again only when the member list changed. */
  private refresh(): void {
    const urls = this.sources.memberClientUrls();
    if (urls === this.seenUrls) return;
    this.seenUrls = urls;
    this.hosts = new Set(urls.flatMap((u) => hostOfClientUrl(u) ?? []));
    // The operator's, and every member's own: a dashboard served by one member follows the leader to another.
    this.origins = [...this.sources.allowedOrigins, ...urls.map(originOfClientUrl)];
  }
}

/** The body of a refusal. */
function refusalBody(refusal: GateRefusal): string {
  return JSON.stringify({ error: { code: 'FORBIDDEN', message: refusal.message } });
}

/** Answers a refused HTTP request. */
export function refuseRequest(res: ServerResponse, refusal: GateRefusal): void {
  const body = refusalBody(refusal);
  res.writeHead(403, { 'content-type': 'application/json', 'x-content-type-options': 'nosniff', 'content-length': Buffer.byteLength(body) }).end(body);
}

/** Answers a refused WebSocket upgrade on its raw socket. */
export function refuseUpgrade(socket: Duplex, refusal: GateRefusal): void {
  const body = refusalBody(refusal);
  socket.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\nx-content-type-options: nosniff\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}
