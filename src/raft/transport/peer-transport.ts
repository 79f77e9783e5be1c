// The Raft peer transport of a multi-member cluster: what RaftDriver sends through
// and what feeds it messages from other members.
//
// Each member dials every other member once and uses that socket only to send
// (OutboundLink); sockets others dial to us are used only to receive
// (InboundConnection). Two one-way sockets per pair need no tie-breaking over who
// keeps which connection, and a send never waits on a receive. Every socket
// authenticates with the cluster secret before anything else crosses it.

import { lookup } from 'node:dns/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { isIP, type AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Transport } from '../driver.js';
import type { Message, NodeId } from '../types.js';
import { checkHandshakeOptions, type PeerIdentityOptions } from './auth.js';
import { checkBackoffOptions, DEFAULT_BACKOFF, type BackoffOptions } from './backoff.js';
import { MAX_NODE_ID_BYTES, PeerProtocolError } from './codec.js';
import { RateLimitedLog } from '../../log/rate-limited-log.js';
import { decideHandshakeSlot, remoteIp } from './handshake-slots.js';
import { InboundConnection } from './inbound-connection.js';
import { OutboundLink, type OutboundLinkStatus, type PeerAddress } from './outbound-link.js';
import { errorText, PEER_PATH, peerUrl, type PeerLogger, type PeerTls } from './shared.js';

export type { PeerAddress } from './outbound-link.js';
export type { PeerLogger, PeerTls } from './shared.js';

export type PeerTransportErrorCode = 'invalidOptions' | 'listen' | 'state';

/** Bad options, a peer port that cannot be bound, or a call in the wrong state. */
export class PeerTransportError extends Error {
  override readonly name = 'PeerTransportError';
  constructor(
    readonly code: PeerTransportErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface PeerLimits {
  /** Messages waiting for one peer; past this the oldest are dropped. */
  readonly maxQueueMessages: number;
  /** Estimated bytes waiting for one peer; past this the oldest are dropped. */
  readonly maxQueueBytes: number;
  /**
   * Largest frame sent or accepted. Must be the same on every member and above the
   * largest entry plus a few hundred bytes: a bigger single entry cannot be sent.
   */
  readonly maxFrameBytes: number;
  /** Bytes handed to one socket but not yet written before the link stops feeding it (default 2 x maxFrameBytes). */
  readonly maxBufferedBytes?: number;
  /** Service payloads waiting for one peer; past this sendService answers false (default 16,384). */
  readonly maxServiceQueuePayloads?: number;
  /** Estimated service bytes waiting for one peer; past this sendService answers false (default 64 MiB). */
  readonly maxServiceQueueBytes?: number;
  /**
   * A service payload not handed to a socket within this long comes back through onServiceUnsent
   * (default 1,000 ms, an election timeout): a peer that stopped reading keeps its socket open.
   */
  readonly maxServiceQueueMs?: number;
}

export const DEFAULT_PEER_LIMITS: Required<PeerLimits> = {
  maxQueueMessages: 10_000,
  maxQueueBytes: 64 * 1024 * 1024,
  maxFrameBytes: 4 * 1024 * 1024,
  maxBufferedBytes: 8 * 1024 * 1024,
  maxServiceQueuePayloads: 16_384,
  maxServiceQueueBytes: 64 * 1024 * 1024,
  maxServiceQueueMs: 1_000,
};

/** Room for a message's own fields (two 255-byte ids, a context) next to its entries. */
export const MIN_FRAME_BYTES = 4096;

export interface PeerTransportOptions {
  readonly selfId: NodeId;
  /** Where to accept peer connections (port 0: any free port, see `address`). */
  readonly listen: { readonly host: string; readonly port: number };
  /** Every other member; this node dials each of them. */
  readonly peers: readonly PeerAddress[];
  readonly secret: string | Uint8Array;
  /**
   * Identifies the cluster; see deriveClusterId. Members of different clusters never talk.
   * null for a member joining an existing cluster: it dials nobody until the first
   * member that proves the secret to it has told it the id (see onClusterIdLearned).
   */
  readonly clusterId: string | null;
  /** Called once when a joining member learns its cluster id; the caller persists it. */
  readonly onClusterIdLearned?: (clusterId: string) => void;
  /** This node's store incarnation, sent in every handshake. */
  readonly incarnation?: string;
  /** Refuses (by throwing) an authenticated peer whose incarnation is not the one first seen. */
  readonly checkPeerIncarnation?: (peer: NodeId, incarnation: string | null) => void;
  /** The command version this node applies, advertised in every handshake (opaque to the transport). */
  readonly commandVersion?: number;
  /** Told the command version each authenticated peer advertised. */
  readonly notePeerCommandVersion?: (peer: NodeId, version: number) => void;
  /** The node's current term: a message more than MAX_TERM_JUMP above it is refused (see codec.ts). */
  readonly currentTerm?: () => number;
  /** Each validated message from an authenticated peer (typically driver.step). */
  readonly onMessage: (message: Message) => void;
  /**
   * Each service payload from an authenticated peer, in the order it sent them. Absent:
   * this member takes no service frames, and a peer that sends one is dropped. Throwing a
   * PeerProtocolError (a payload it cannot read) drops the connection it came on too.
   */
  readonly onService?: (from: NodeId, payload: Uint8Array) => void;
  /** Service payloads sendService accepted for `to` but never handed to a socket (the link dropped or closed). */
  readonly onServiceUnsent?: (to: NodeId, payloads: Uint8Array[]) => void;
  /**
   * Service payloads go only to a peer whose handshake advertised at least this command
   * version, so an older member never gets a frame kind it would refuse, and are taken only
   * from a peer that advertised it. Absent: service frames are neither sent nor taken
   * (sendService answers false), so forgetting it cannot break an older member's links.
   */
  readonly serviceMinCommandVersion?: number;
  /** A dial to `peer` was refused: nothing listens on its port, its process is most likely gone. */
  readonly onPeerRefused?: (peer: NodeId) => void;
  readonly logger: PeerLogger;
  readonly limits?: PeerLimits;
  readonly reconnect?: BackoffOptions;
  /**
   * Connect plus authentication deadline for a dial (default 5000 ms). An inbound
   * connection gets at most INBOUND_HANDSHAKE_MS of it: the dialer speaks first and
   * needs one round trip, so a longer wait only helps a stranger hold a slot.
   */
  readonly handshakeTimeoutMs?: number;
  /** Unauthenticated inbound connections held at once (default 32); see handshake-slots.ts for who gets in when full. */
  readonly maxPendingHandshakes?: number;
  /** Unauthenticated inbound connections held at once from one address that is not a member's (default 4). */
  readonly maxPendingPerAddress?: number;
  /** [0, 1) source for backoff jitter (default Math.random). */
  readonly random?: () => number;
  /**
   * TLS on the peer port and every dial (wss://); absent: plain WebSocket. The
   * cluster-secret handshake runs inside it all the same.
   */
  readonly tls?: PeerTls;
}

export interface PeerTransportStatus {
  readonly listening: { readonly host: string; readonly port: number } | null;
  /** Outbound (sending) side, per peer. */
  readonly peers: Readonly<Record<NodeId, OutboundLinkStatus>>;
  /** Peers with an authenticated inbound (receiving) connection. */
  readonly inbound: readonly NodeId[];
  /** Inbound connections still authenticating. */
  readonly pendingHandshakes: number;
}

/** Longest an inbound connection may take to authenticate. */
export const INBOUND_HANDSHAKE_MS = 2000;

/** How often each kind of stranger-provoked warning may be written in full (see RateLimitedLog). */
const STRANGER_LOG_INTERVAL_MS = 10_000;

export class PeerTransport implements Transport {
  private readonly opts: PeerTransportOptions;
  private readonly limits: Required<PeerLimits>;
  private readonly handshakeTimeoutMs: number;
  private readonly maxPendingHandshakes: number;
  private readonly maxPendingPerAddress: number;
  /** IP addresses each member's host stands for (its literal IP, or what its name resolved to). */
  private readonly memberAddresses = new Map<NodeId, readonly string[]>();
  private readonly strangerLog: RateLimitedLog;
  private readonly backoff: BackoffOptions;
  private readonly links = new Map<NodeId, OutboundLink>();
  /** Every accepted socket, authenticated or not. */
  private readonly inbound = new Set<InboundConnection>();
  /** The one authenticated inbound connection per peer; a newer one replaces an older. */
  private readonly inboundByPeer = new Map<NodeId, InboundConnection>();
  private readonly unknownLogged = new Set<NodeId>();
  private http: Server | HttpsServer | null = null;
  private stopTlsReload: (() => void) | null = null;
  private wss: WebSocketServer | null = null;
  private bound: { host: string; port: number } | null = null;
  private state: 'new' | 'starting' | 'started' | 'closed' = 'new';
  private cluster: string | null;

  constructor(options: PeerTransportOptions) {
    this.opts = options;
    this.limits = resolveLimits(options.limits);
    this.handshakeTimeoutMs = options.handshakeTimeoutMs ?? 5000;
    this.maxPendingHandshakes = options.maxPendingHandshakes ?? 32;
    this.maxPendingPerAddress = options.maxPendingPerAddress ?? 4;
    this.backoff = options.reconnect ?? DEFAULT_BACKOFF;
    checkOptions(options, this.handshakeTimeoutMs, this.maxPendingHandshakes, this.maxPendingPerAddress, this.backoff);
    this.strangerLog = new RateLimitedLog(options.logger, STRANGER_LOG_INTERVAL_MS);
    this.cluster = options.clusterId;
    for (const peer of options.peers) {
      this.links.set(peer.id, this.makeLink(peer));
      this.learnAddresses(peer);
    }
  }

  /** The cluster id, or null while a joining member has not learned it. */
  get clusterId(): string | null {
    return this.cluster;
  }

  /** The bound peer address once started (the real port when `listen.port` was 0). */
  get address(): { host: string; port: number } {
    if (!this.bound) throw new PeerTransportError('state', 'the peer transport is not listening');
    return this.bound;
  }

  /** Binds the peer port, then starts dialing every peer. Rejects clearly when the port is taken. */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new PeerTransportError('state', `start() called on a ${this.state} peer transport`);
    this.state = 'starting';
    const { host, port } = this.opts.listen;
    const notPeer = (_req: IncomingMessage, res: ServerResponse): void => {
      res.writeHead(426, { 'content-type': 'text/plain', connection: 'close' });
      res.end('this is a Vera peer port; it speaks only the peer protocol over WebSocket\n');
    };
    const tls = this.opts.tls;
    // A stranger may not hold a TLS handshake open longer than an authentication.
    const http = tls === undefined ? createServer(notPeer) : createHttpsServer({ ...tls.serverOptions(), handshakeTimeout: Math.min(this.handshakeTimeoutMs, INBOUND_HANDSHAKE_MS) }, notPeer);
    try {
      await new Promise<void>((resolve, reject) => {
        http.once('error', reject);
        http.listen(port, host, () => {
          http.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      this.state = 'closed';
      const code = (err as NodeJS.ErrnoException).code;
      const why = code === 'EADDRINUSE' ? 'is already in use' : code === 'EADDRNOTAVAIL' ? 'is not an address of this machine' : `cannot be bound (${errorText(err)})`;
      throw new PeerTransportError('listen', `peer port ${host}:${port} ${why}`, { cause: err });
    }
    if (this.state !== 'starting') {
      // close() ran while we were binding.
      await new Promise<void>((r) => http.close(() => r()));
      throw new PeerTransportError('state', 'the peer transport was closed while starting');
    }
    http.on('error', (err) => this.opts.logger.error({ event: 'peer.serverError', err: errorText(err) }, 'peer port server error'));
    if (tls !== undefined) {
      const secure = http as HttpsServer;
      this.stopTlsReload = tls.onReload(() => secure.setSecureContext(tls.serverOptions()));
      // A dialer's certificate from another CA (or none) ends here, before any peer protocol.
      secure.on('secureConnection', (socket: TLSSocket) => {
        if (!tls.verifyPeers || socket.authorized) return;
        const remote = `${remoteIp(socket.remoteAddress)}:${socket.remotePort ?? '?'}`;
        const why = socket.authorizationError === undefined ? 'no certificate' : String(socket.authorizationError);
        this.strangerLog.warn('peer.tlsRefused', { remote, direction: 'inbound', err: why }, `refused a peer connection from ${remote}: its certificate does not verify against --peer-ca (${why})`);
        socket.destroy();
      });
      // A handshake that failed outright (the dialer refused our certificate, a plaintext dial): the socket is gone, so is its address.
      secure.on('tlsClientError', (err: Error) => {
        this.strangerLog.warn('peer.tlsRefused', { direction: 'inbound', err: errorText(err) }, `a peer connection failed its TLS handshake: ${errorText(err)}`);
      });
    }
    this.http = http;
    this.bound = { host, port: (http.address() as AddressInfo).port };
    this.wss = new WebSocketServer({
      server: http,
      path: PEER_PATH,
      perMessageDeflate: false,
      maxPayload: this.limits.maxFrameBytes,
      clientTracking: false,
    });
    this.wss.on('connection', (ws, req) => this.accept(ws, req));
    this.wss.on('error', (err) => this.opts.logger.error({ event: 'peer.serverError', err: errorText(err) }, 'peer port server error'));
    this.state = 'started';
    this.opts.logger.info({ event: 'peer.listening', host, port: this.bound.port, tls: tls !== undefined }, `peer port listening on ${host}:${this.bound.port}${tls === undefined ? '' : ' (TLS)'}`);
    if (this.cluster !== null) for (const link of this.links.values()) link.start();
    else this.opts.logger.info({ event: 'peer.awaitingCluster' }, 'joining: waiting for a member of the cluster to connect before dialing anyone');
  }

  /** Best effort: queues `message` for `message.to`; an unknown destination is dropped and logged. */
  send(message: Message): void {
    if (this.state === 'closed') return;
    const link = this.links.get(message.to);
    if (link) {
      link.enqueue(message);
      return;
    }
    // Once per destination: Raft resends every heartbeat, and one line says it all.
    if (!this.unknownLogged.has(message.to)) {
      this.unknownLogged.add(message.to);
      this.opts.logger.warn({ event: 'peer.unknownDestination', to: message.to, type: message.type }, `dropping messages to unknown peer ${message.to}`);
    }
  }

  /**
   * Queues an opaque service payload for `to`, in order after those sent before. False,
   * with nothing queued, when `to` is not reachable for service frames now (unknown, not
   * connected, or its command version is below serviceMinCommandVersion) or its service
   * queue is full: the caller backs off. A payload accepted is either handed to a socket
   * or returned through onServiceUnsent; the transport never drops one silently.
   */
  sendService(to: NodeId, payload: Uint8Array): boolean {
    if (this.state !== 'started') return false;
    return this.links.get(to)?.enqueueService(payload) ?? false;
  }

  /** Whether sendService to `to` can take a payload now (as far as the link goes; the queue may still be full). */
  serviceReady(to: NodeId): boolean {
    return this.state === 'started' && (this.links.get(to)?.serviceReady() ?? false);
  }

  /** Writes what is queued for every peer now, instead of at the end of this event-loop turn. */
  flush(): void {
    if (this.state !== 'started') return;
    for (const link of this.links.values()) link.flushNow();
  }

  /** Starts talking to a member added after construction (a membership change). */
  addPeer(peer: PeerAddress): void {
    if (this.state === 'closed') throw new PeerTransportError('state', 'addPeer() on a closed peer transport');
    checkPeer(peer, this.opts.selfId);
    if (this.links.has(peer.id)) throw new PeerTransportError('invalidOptions', `peer ${peer.id} is already known`);
    const link = this.makeLink(peer);
    this.links.set(peer.id, link);
    this.learnAddresses(peer);
    this.unknownLogged.delete(peer.id);
    if (this.state === 'started' && this.cluster !== null) link.start();
  }

  /** The address of every peer this node dials. */
  peers(): PeerAddress[] {
    return [...this.links.values()].map((link) => link.peer);
  }

  /** Stops talking to a removed member: its queue is dropped and its connections closed. */
  async removePeer(id: NodeId): Promise<void> {
    const link = this.links.get(id);
    if (!link) return;
    this.links.delete(id);
    this.memberAddresses.delete(id);
    const conn = this.inboundByPeer.get(id);
    // terminate, not close: a removed member need not answer a close handshake.
    conn?.terminate();
    await Promise.all([link.close(), conn?.closed]);
  }

  status(): PeerTransportStatus {
    const peers: Record<NodeId, OutboundLinkStatus> = {};
    for (const [id, link] of this.links) peers[id] = link.status();
    let pendingHandshakes = 0;
    for (const conn of this.inbound) if (conn.pending) pendingHandshakes++;
    return { listening: this.bound, peers, inbound: [...this.inboundByPeer.keys()], pendingHandshakes };
  }

  /** Bytes waiting to be sent to `to` (0 for an unknown peer). */
  queuedBytes(to: NodeId): number {
    return this.links.get(to)?.status().queuedBytes ?? 0;
  }

  /** Closes every socket and the peer port; resolves when all are gone and no timer is left. */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.stopTlsReload?.();
    this.stopTlsReload = null;
    const waits: Array<Promise<void>> = [];
    for (const link of this.links.values()) waits.push(link.close());
    for (const conn of this.inbound) {
      conn.terminate();
      waits.push(conn.closed);
    }
    this.wss?.close();
    const http = this.http;
    if (http) {
      waits.push(new Promise<void>((r) => http.close(() => r())));
      http.closeAllConnections();
    }
    await Promise.all(waits);
    this.inbound.clear();
    this.inboundByPeer.clear();
    this.opts.logger.info({ event: 'peer.closed' }, 'peer transport closed');
  }

  // ------------------------------------------------------------------ internals

  private makeLink(peer: PeerAddress): OutboundLink {
    return new OutboundLink({
      selfId: this.opts.selfId,
      peer,
      secret: this.opts.secret,
      clusterId: () => this.cluster,
      identity: this.identityOptions(),
      logger: this.opts.logger,
      maxQueueMessages: this.limits.maxQueueMessages,
      maxQueueBytes: this.limits.maxQueueBytes,
      maxFrameBytes: this.limits.maxFrameBytes,
      maxBufferedBytes: this.limits.maxBufferedBytes,
      backoff: this.backoff,
      handshakeTimeoutMs: this.handshakeTimeoutMs,
      random: this.opts.random ?? Math.random,
      onRefused: () => this.opts.onPeerRefused?.(peer.id),
      maxServiceQueuePayloads: this.limits.maxServiceQueuePayloads,
      maxServiceQueueBytes: this.limits.maxServiceQueueBytes,
      serviceMinCommandVersion: this.opts.serviceMinCommandVersion,
      maxServiceQueueMs: this.limits.maxServiceQueueMs,
      onServiceUnsent: (payloads) => this.opts.onServiceUnsent?.(peer.id, payloads),
      ...(this.opts.tls === undefined ? {} : { tls: this.opts.tls }),
    });
  }

  private accept(ws: WebSocket, req: IncomingMessage): void {
    const address = remoteIp(req.socket.remoteAddress);
    const remote = `${address}:${req.socket.remotePort ?? '?'}`;
    // Refused at 'secureConnection' already; checked again here, where the peer protocol would begin.
    if (this.state !== 'started' || (this.opts.tls?.verifyPeers === true && (req.socket as TLSSocket).authorized !== true)) {
      ws.terminate();
      return;
    }
    const pending = [...this.inbound].filter((c) => c.pending);
    const decision = decideHandshakeSlot(pending, address, (a) => this.isMemberAddress(a), {
      total: this.maxPendingHandshakes,
      perAddress: this.maxPendingPerAddress,
    });
    if (decision.kind === 'refuse') {
      this.strangerLog.warn('peer.tooManyHandshakes', { remote }, `refusing a peer connection from ${remote}: ${decision.why}`);
      // terminate, not close: this socket is not tracked, so it must not linger in a close handshake.
      ws.terminate();
      return;
    }
    if (decision.kind === 'evict') {
      this.strangerLog.warn(
        'peer.handshakeEvicted',
        { remote: decision.victim.remote, for: remote },
        `dropping unauthenticated peer connection from ${decision.victim.remote} to make room for ${remote}`,
      );
      decision.victim.terminate();
    }
    const conn = new InboundConnection(ws, remote, address, {
      selfId: this.opts.selfId,
      secret: this.opts.secret,
      clusterId: this.cluster,
      identity: this.identityOptions(),
      logger: this.opts.logger,
      strangerLog: this.strangerLog,
      handshakeTimeoutMs: Math.min(this.handshakeTimeoutMs, INBOUND_HANDSHAKE_MS),
      isKnownPeer: (id) => this.links.has(id),
      ...(this.opts.currentTerm === undefined ? {} : { currentTerm: this.opts.currentTerm }),
      onAuthenticated: (c) => this.onAuthenticated(c),
      deliver: (messages) => this.deliver(messages),
      ...(this.opts.onService === undefined ? {} : { deliverService: (payloads: readonly Uint8Array[]) => this.deliverService(conn, payloads) }),
      ...(this.opts.serviceMinCommandVersion === undefined ? {} : { serviceMinCommandVersion: this.opts.serviceMinCommandVersion }),
      onClosed: (c) => this.onInboundClosed(c),
    });
    this.inbound.add(conn);
  }

  private isMemberAddress(address: string): boolean {
    for (const addresses of this.memberAddresses.values()) if (addresses.includes(address)) return true;
    return false;
  }

  /** Records the IPs `peer.host` stands for; a host name is resolved in the background (until then it counts as a stranger's). */
  private learnAddresses(peer: PeerAddress): void {
    const host = peer.host.replace(/^\[(.*)\]$/, '$1');
    if (isIP(host) !== 0) {
      this.memberAddresses.set(peer.id, [remoteIp(host)]);
      return;
    }
    this.memberAddresses.set(peer.id, []);
    lookup(host, { all: true }).then(
      (found) => {
        // Only if the member is still the one we looked up for.
        if (this.memberAddresses.has(peer.id) && this.links.get(peer.id)?.peer === peer) {
          this.memberAddresses.set(peer.id, found.map((f) => remoteIp(f.address)));
        }
      },
      (err: unknown) => this.opts.logger.warn({ event: 'peer.resolveFailed', peer: peer.id, host, err: errorText(err) }, `cannot resolve ${host} (member ${peer.id})`),
    );
  }

  private identityOptions(): PeerIdentityOptions {
    const { incarnation, checkPeerIncarnation, commandVersion, notePeerCommandVersion } = this.opts;
    return {
      ...(incarnation === undefined ? {} : { incarnation }),
      ...(checkPeerIncarnation === undefined ? {} : { checkPeerIncarnation }),
      ...(commandVersion === undefined ? {} : { commandVersion }),
      ...(notePeerCommandVersion === undefined ? {} : { notePeerCommandVersion }),
    };
  }

  private onAuthenticated(conn: InboundConnection): void {
    const peer = conn.peerId!;
    const proven = conn.clusterId;
    if (this.cluster === null && proven !== null) {
      // A joining member's first authenticated peer tells it which cluster it is in.
      this.cluster = proven;
      this.opts.logger.info({ event: 'peer.clusterLearned', clusterId: proven, from: peer }, `joined cluster ${proven} (introduced by ${peer})`);
      this.opts.onClusterIdLearned?.(proven);
      if (this.state === 'started') for (const link of this.links.values()) link.start();
    } else if (proven !== this.cluster) {
      // Two clusters raced to introduce themselves; the first one won.
      this.opts.logger.warn({ event: 'peer.authFailed', peer, err: `cluster id ${String(proven)} is not ${String(this.cluster)}` }, `dropping ${peer}: another cluster`);
      conn.terminate();
      return;
    }
    const older = this.inboundByPeer.get(peer);
    this.inboundByPeer.set(peer, conn);
    // The peer redialed (e.g. it restarted), so its old socket is abandoned or half-open:
    // drop it now rather than wait for a close handshake that may never come.
    older?.terminate();
    // It is up: our own link to it need not wait out its backoff.
    this.links.get(peer)?.redialNow();
  }

  private onInboundClosed(conn: InboundConnection): void {
    this.inbound.delete(conn);
    const peer = conn.peerId;
    if (peer !== null && this.inboundByPeer.get(peer) === conn) this.inboundByPeer.delete(peer);
  }

  private deliverService(conn: InboundConnection, payloads: readonly Uint8Array[]): void {
    const from = conn.peerId;
    const onService = this.opts.onService;
    if (from === null || onService === undefined) return;
    let unreadable: PeerProtocolError | null = null;
    for (const payload of payloads) {
      if (this.state !== 'started') return;
      try {
        onService(from, payload);
      } catch (err) {
        // A payload the service cannot read drops the link, as a malformed Raft message does (the inbound
        // connection's rule), but only after the rest of its frame: those payloads were read, and their
        // requests would otherwise wait out their deadlines.
        if (err instanceof PeerProtocolError) unreadable ??= err;
        else this.opts.logger.error({ event: 'peer.onServiceFailed', from, err: errorText(err) }, 'onService threw');
      }
    }
    if (unreadable !== null) throw unreadable;
  }

  private deliver(messages: readonly Message[]): void {
    for (const m of messages) {
      if (this.state !== 'started') return;
      try {
        this.opts.onMessage(m);
      } catch (err) {
        // Our own consumer failed; the peer did nothing wrong, so its connection stays.
        this.opts.logger.error({ event: 'peer.onMessageFailed', from: m.from, type: m.type, err: errorText(err) }, 'onMessage threw');
      }
    }
  }
}

// ------------------------------------------------------------------ option checks

function resolveLimits(limits: PeerLimits | undefined): Required<PeerLimits> {
  const merged = { ...DEFAULT_PEER_LIMITS, ...limits };
  if (limits && limits.maxBufferedBytes === undefined) merged.maxBufferedBytes = 2 * merged.maxFrameBytes;
  for (const [name, value] of Object.entries(merged)) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new PeerTransportError('invalidOptions', `limits.${name} must be a positive integer, got ${String(value)}`);
    }
  }
  if (merged.maxFrameBytes < MIN_FRAME_BYTES) {
    throw new PeerTransportError('invalidOptions', `limits.maxFrameBytes must be at least ${MIN_FRAME_BYTES}, got ${merged.maxFrameBytes}`);
  }
  // Else a payload that fits a frame could be refused forever, indistinguishable from a full queue.
  if (merged.maxServiceQueueBytes < merged.maxFrameBytes) {
    throw new PeerTransportError('invalidOptions', `limits.maxServiceQueueBytes (${merged.maxServiceQueueBytes}) must be at least limits.maxFrameBytes (${merged.maxFrameBytes})`);
  }
  return merged;
}

function checkId(id: unknown, what: string): void {
  if (typeof id !== 'string' || id.length === 0 || Buffer.byteLength(id) > MAX_NODE_ID_BYTES) {
    throw new PeerTransportError('invalidOptions', `${what} must be a non-empty string of at most ${MAX_NODE_ID_BYTES} bytes`);
  }
}

function checkPort(port: unknown, what: string, allowZero: boolean): void {
  if (typeof port !== 'number' || !Number.isInteger(port) || port < (allowZero ? 0 : 1) || port > 65535) {
    throw new PeerTransportError('invalidOptions', `${what} must be an integer port in ${allowZero ? 0 : 1}..65535, got ${String(port)}`);
  }
}

function checkPeer(peer: PeerAddress, selfId: NodeId): void {
  checkId(peer.id, 'a peer id');
  if (peer.id === selfId) throw new PeerTransportError('invalidOptions', `peers must not include this node (${selfId})`);
  if (typeof peer.host !== 'string' || peer.host.length === 0) {
    throw new PeerTransportError('invalidOptions', `peer ${peer.id} needs a host`);
  }
  checkPort(peer.port, `peer ${peer.id}'s port`, false);
  // ws would throw on dial, inside a timer; refuse an address that cannot form a URL now.
  try {
    const url = new URL(peerUrl(peer.host, peer.port));
    if (url.port !== String(peer.port) && !(peer.port === 80 && url.port === '')) throw new Error('host contains a port or path');
  } catch {
    throw new PeerTransportError('invalidOptions', `peer ${peer.id} has an unusable host ${JSON.stringify(peer.host)}`);
  }
}

function checkOptions(o: PeerTransportOptions, handshakeTimeoutMs: number, maxPending: number, maxPerAddress: number, backoff: BackoffOptions): void {
  checkId(o.selfId, 'selfId');
  if (typeof o.listen?.host !== 'string' || o.listen.host.length === 0) {
    throw new PeerTransportError('invalidOptions', 'listen.host must be a non-empty string');
  }
  checkPort(o.listen.port, 'listen.port', true);
  const seen = new Set<NodeId>();
  for (const peer of o.peers) {
    checkPeer(peer, o.selfId);
    if (seen.has(peer.id)) throw new PeerTransportError('invalidOptions', `peer ${peer.id} is listed twice`);
    seen.add(peer.id);
  }
  if (typeof o.secret !== 'string' && !(o.secret instanceof Uint8Array)) {
    throw new PeerTransportError('invalidOptions', 'secret must be a string or bytes');
  }
  try {
    checkHandshakeOptions({ secret: o.secret, clusterId: o.clusterId, selfId: o.selfId, ...(o.incarnation === undefined ? {} : { incarnation: o.incarnation }) });
    checkBackoffOptions(backoff);
  } catch (err) {
    throw new PeerTransportError('invalidOptions', errorText(err), { cause: err });
  }
  if (typeof o.onMessage !== 'function') throw new PeerTransportError('invalidOptions', 'onMessage must be a function');
  const minCv = o.serviceMinCommandVersion;
  if (minCv !== undefined && (!Number.isSafeInteger(minCv) || minCv < 1)) {
    throw new PeerTransportError('invalidOptions', 'serviceMinCommandVersion must be a positive integer');
  }
  if (!Number.isFinite(handshakeTimeoutMs) || handshakeTimeoutMs < 1) {
    throw new PeerTransportError('invalidOptions', 'handshakeTimeoutMs must be a positive number');
  }
  if (!Number.isSafeInteger(maxPending) || maxPending < 1) {
    throw new PeerTransportError('invalidOptions', 'maxPendingHandshakes must be a positive integer');
  }
  if (!Number.isSafeInteger(maxPerAddress) || maxPerAddress < 1) {
    throw new PeerTransportError('invalidOptions', 'maxPendingPerAddress must be a positive integer');
  }
}
