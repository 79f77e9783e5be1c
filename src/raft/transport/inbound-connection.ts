// The receiving half of a link: a socket another member dialed, used only to
// receive. It must authenticate first (ListenerHandshake); after that every
// frame is decoded and validated whole, and every message in it must be from the
// authenticated member and addressed to us, before any of it is delivered.
// Whatever breaks these rules is logged and the connection closed: nothing a
// misbehaving peer sends ever reaches the Raft core. Service frames (opaque
// payloads for the server) are accepted only when a service handler is set.

import type WebSocket from 'ws';
import type { Message, NodeId } from '../types.js';
import type { RateLimitedLog } from '../../log/rate-limited-log.js';
import { ListenerHandshake, PeerAuthError, PeerIncarnationError, type PeerIdentityOptions } from './auth.js';
import { decodeFrame, PeerProtocolError } from './codec.js';
import { CloseCode, closeReason, errorText, MAX_HANDSHAKE_FRAME_BYTES, toBuffer, type PeerLogger } from './shared.js';

export interface InboundConnectionOptions {
  readonly selfId: NodeId;
  readonly secret: string | Uint8Array;
  /** null for a joining member, which takes the id the first authenticated peer proves. */
  readonly clusterId: string | null;
  /** What this node advertises in the challenge and checks of the peer (incarnation, command version). */
  readonly identity: PeerIdentityOptions;
  readonly logger: PeerLogger;
  /** Warnings a stranger can provoke at will (before authentication) go through this. */
  readonly strangerLog: RateLimitedLog;
  readonly handshakeTimeoutMs: number;
  readonly isKnownPeer: (id: NodeId) => boolean;
  /** The receiver's current term, for refusing absurd term jumps (see MAX_TERM_JUMP); absent: no bound. */
  readonly currentTerm?: () => number;
  /** Called once, when the peer has proven who it is. */
  readonly onAuthenticated: (conn: InboundConnection) => void;
  /** Validated messages from the authenticated peer, in arrival order. */
  readonly deliver: (messages: readonly Message[]) => void;
  /** Service payloads from the authenticated peer, in arrival order; absent: a service frame breaks the protocol. */
  readonly deliverService?: (payloads: readonly Uint8Array[]) => void;
  /**
   * Service frames are taken only from a dialer whose proven hello advertised at least this
   * command version (one that did not may not send them: the same rule the sending side keeps).
   */
  readonly serviceMinCommandVersion?: number;
  readonly onClosed: (conn: InboundConnection) => void;
}

export class InboundConnection {
  private readonly handshake: ListenerHandshake;
  private handshakeTimer: NodeJS.Timeout | null;
  /** Set once we decided to drop the connection: later frames are ignored. */
  private rejected = false;
  private authenticatedPeer: NodeId | null = null;
  /** Resolves when the socket has closed. */
  readonly closed: Promise<void>;

  constructor(
    private readonly ws: WebSocket,
    /** The remote address and port, for logs. */
    readonly remote: string,
    /** The remote IP alone, for the per-address slot limits. */
    readonly address: string,
    private readonly opts: InboundConnectionOptions,
  ) {
    this.handshake = new ListenerHandshake(
      {
        secret: opts.secret,
        clusterId: opts.clusterId,
        selfId: opts.selfId,
        ...opts.identity,
      },
      opts.isKnownPeer,
    );
    ws.binaryType = 'nodebuffer';
    this.handshakeTimer = setTimeout(() => {
      this.handshakeTimer = null;
      opts.strangerLog.warn(
        'peer.handshakeTimeout',
        { remote, direction: 'inbound' },
        `dropping peer connection from ${remote}: no authentication within ${opts.handshakeTimeoutMs} ms`,
      );
      // terminate, not close: a peer this slow would not finish a close handshake either.
      this.terminate();
    }, opts.handshakeTimeoutMs);
    this.closed = new Promise((resolve) => {
      ws.on('close', () => {
        this.clearHandshakeTimer();
        resolve();
        opts.onClosed(this);
      });
    });
    ws.on('error', (err) => opts.logger.debug({ event: 'peer.socketError', remote, err: err.message }, 'peer socket error'));
    ws.on('message', (data, isBinary) => this.onFrame(toBuffer(data), isBinary));
  }

  /** The authenticated member on the other end, or null while the handshake runs. */
  get peerId(): NodeId | null {
    return this.authenticatedPeer;
  }

  /** The cluster id the peer proved, once authenticated. */
  get clusterId(): string | null {
    return this.handshake.clusterId;
  }

  /** Still authenticating (and not already being dropped). */
  get pending(): boolean {
    return this.authenticatedPeer === null && !this.rejected;
  }

  /** It sent a hello naming a member, so it has got further than a socket that said nothing. */
  get progressed(): boolean {
    return this.handshake.heardHello;
  }

  /** Closes the connection with a reason the other side can log. */
  close(code: number, reason: string): void {
    this.rejected = true;
    this.clearHandshakeTimer();
    this.ws.close(code, closeReason(reason));
  }

  /** Drops the socket at once (shutdown). */
  terminate(): void {
    this.rejected = true;
    this.clearHandshakeTimer();
    this.ws.terminate();
  }

  private onFrame(frame: Buffer, isBinary: boolean): void {
    if (this.rejected) return;
    try {
      if (!isBinary) throw new PeerProtocolError('peer frames must be binary');
      if (this.authenticatedPeer === null) this.onHandshakeFrame(frame);
      else this.onMessageFrame(this.authenticatedPeer, frame);
    } catch (err) {
      const auth = err instanceof PeerAuthError;
      const event = err instanceof PeerIncarnationError ? 'peer.incarnationMismatch' : auth ? 'peer.authFailed' : 'peer.protocolError';
      this.reject(auth ? CloseCode.authFailed : CloseCode.protocolError, event, errorText(err));
    }
  }

  private onHandshakeFrame(frame: Buffer): void {
    if (frame.byteLength > MAX_HANDSHAKE_FRAME_BYTES) {
      throw new PeerProtocolError(`a ${frame.byteLength}-byte frame arrived before authentication`);
    }
    const reply = this.handshake.receive(frame);
    this.ws.send(reply);
    const peer = this.handshake.peerId;
    if (peer === null) return;
    this.authenticatedPeer = peer;
    this.clearHandshakeTimer();
    this.opts.logger.info({ event: 'peer.accepted', peer, remote: this.remote }, `accepted connection from peer ${peer}`);
    this.opts.onAuthenticated(this);
  }

  private onMessageFrame(peer: NodeId, frame: Buffer): void {
    const decoded = decodeFrame(frame, this.opts.currentTerm?.());
    if (decoded.kind === 'svc') {
      const deliverService = this.opts.deliverService;
      if (deliverService === undefined) throw new PeerProtocolError(`${peer} sent a service frame, which this member does not take`);
      const advertised = this.handshake.peerCommandVersion ?? 0;
      const minimum = this.opts.serviceMinCommandVersion ?? Number.POSITIVE_INFINITY;
      if (advertised < minimum) throw new PeerProtocolError(`${peer} sent a service frame, but advertised command version ${advertised} (service frames need ${minimum})`);
      deliverService(decoded.payloads);
      return;
    }
    const messages = decoded.messages;
    // Check the whole frame before delivering any of it.
    for (const m of messages) {
      if (m.from !== peer) throw new PeerAuthError(`${peer} sent a message claiming to be from ${m.from}`);
      if (m.to !== this.opts.selfId) throw new PeerProtocolError(`${peer} sent a message addressed to ${m.to}, not to ${this.opts.selfId}`);
    }
    this.opts.deliver(messages);
  }

  private reject(code: number, event: string, why: string): void {
    if (this.rejected) return;
    const text = `dropping peer connection from ${this.authenticatedPeer ?? this.remote}: ${why}`;
    if (event === 'peer.incarnationMismatch') {
      this.opts.logger.error({ event, peer: this.authenticatedPeer ?? undefined, remote: this.remote, direction: 'inbound', err: why }, text);
    } else if (this.authenticatedPeer === null) {
      this.opts.strangerLog.warn(event, { remote: this.remote, direction: 'inbound', err: why }, text);
    } else {
      this.opts.logger.warn({ event, peer: this.authenticatedPeer, remote: this.remote, direction: 'inbound', err: why }, text);
    }
    this.close(code, why);
  }

  private clearHandshakeTimer(): void {
    if (this.handshakeTimer) {
      clearTimeout(this.handshakeTimer);
      this.handshakeTimer = null;
    }
  }
}
