// The sending half of the link to one peer: a WebSocket this node dials and
// uses only for sending, plus the queue of messages waiting for it.
//
// Lifecycle: dial -> authenticate (DialerHandshake) -> open, flushing the queue;
// on any close, redial after a capped, jittered exponential backoff. Messages
// queue while the link is down or the socket is backed up; the queue is bounded
// and drops its oldest messages, since Raft retransmits what still matters.
// Messages queued in the same tick go out together in as few frames as fit.
//
// Service payloads (opaque to the transport, for the server's peer service) have
// a queue of their own that never drops: it takes a payload only while the link
// is up to a peer that advertised at least `serviceMinCommandVersion`, and only
// while it has room (else sendService answers false and the sender backs off).
// Payloads still queued when the socket goes, or queued longer than
// maxServiceQueueMs (a peer that stopped reading keeps its socket open), are
// handed back through onServiceUnsent, so none is lost silently, none reaches a
// later socket, and none waits without bound. Raft messages go first in every
// flush, and service frames keep within half the socket's buffer budget, so a
// burst of service traffic cannot hold back heartbeats.

import WebSocket from 'ws';
import type { Message, NodeId } from '../types.js';
import { DialerHandshake, PeerAuthError, PeerIncarnationError, type PeerIdentityOptions } from './auth.js';
import { backoffDelay, type BackoffOptions } from './backoff.js';
import { BoundedQueue } from './bounded-queue.js';
import { encodeMessages, encodeServicePayloads, estimateMessageBytes, estimateServicePayloadBytes, frameOverheadBytes, MAX_SERVICE_PAYLOADS_PER_FRAME, PeerProtocolError } from './codec.js';
import { CloseCode, closeReason, errorText, MAX_HANDSHAKE_FRAME_BYTES, peerUrl, toBuffer, type PeerLogger, type PeerTls } from './shared.js';
import { splitAppend } from './split-append.js';

export interface PeerAddress {
  readonly id: NodeId;
  readonly host: string;
  readonly port: number;
}

export interface OutboundLinkOptions {
  readonly selfId: NodeId;
  readonly peer: PeerAddress;
  readonly secret: string | Uint8Array;
  /** Read at each dial: a joining member learns its cluster id after its links exist (they start only once it is known). */
  readonly clusterId: () => string | null;
  /** What this node advertises in hello and checks of the peer (incarnation, command version). */
  readonly identity: PeerIdentityOptions;
  readonly logger: PeerLogger;
  readonly maxQueueMessages: number;
  readonly maxQueueBytes: number;
  readonly maxFrameBytes: number;
  /** Stop handing frames to the socket while this many bytes are still unwritten. */
  readonly maxBufferedBytes: number;
  readonly backoff: BackoffOptions;
  /** Dial plus authentication must finish within this, or the attempt is abandoned. */
  readonly handshakeTimeoutMs: number;
  readonly random: () => number;
  /** A dial was refused (nothing listens on the peer's port): its process is most likely gone. */
  readonly onRefused?: () => void;
  /** Dial wss:// with these certificates; absent: ws://. */
  readonly tls?: PeerTls;
  /** Service payloads waiting for the socket; past either bound sendService refuses (never drops). */
  readonly maxServiceQueuePayloads: number;
  readonly maxServiceQueueBytes: number;
  /** Service payloads go only to a peer whose handshake advertised at least this command version; absent: to none. */
  readonly serviceMinCommandVersion: number | undefined;
  /** A payload not handed to a socket within this long is handed back (onServiceUnsent). */
  readonly maxServiceQueueMs: number;
  /** Payloads that were queued but never handed to a socket (it closed, or the link stopped). */
  readonly onServiceUnsent?: (payloads: Uint8Array[]) => void;
}

export interface OutboundLinkStatus {
  readonly connected: boolean;
  readonly queuedMessages: number;
  readonly queuedBytes: number;
  /** Messages dropped since the link was created: queue overflow or too big for a frame. */
  readonly droppedMessages: number;
  /** Frames handed to a socket since the link was created (both kinds). */
  readonly framesSent: number;
  /** Service payloads queued, and their estimated bytes. */
  readonly queuedServicePayloads: number;
  readonly queuedServiceBytes: number;
}

/** One dialed socket; its counters die with it, so a late callback can never touch its successor. */
interface Dial {
  readonly ws: WebSocket;
  readonly handshake: DialerHandshake;
  authenticated: boolean;
  /** Bytes handed to ws.send whose write callback has not fired yet. */
  unwritten: number;
  readonly closed: Promise<void>;
}

export class OutboundLink {
  private readonly queue: BoundedQueue<Message>;
  /** Never overflows: enqueueService checks `fits` first. Oldest first, so their ages ascend. */
  private readonly serviceQueue: BoundedQueue<{ readonly payload: Uint8Array; readonly queuedAt: number }>;
  /** Hands back the payloads queued too long; armed while the service queue holds any. */
  private serviceAgeTimer: NodeJS.Timeout | null = null;
  private dial: Dial | null = null;
  private started = false;
  private stopped = false;
  private attempt = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private handshakeTimer: NodeJS.Timeout | null = null;
  private flushImmediate: NodeJS.Immediate | null = null;
  private dropped = 0;
  private framesSent = 0;
  /** Log the first overflow and the first failed dial of an outage, not every one. */
  private overflowLogged = false;
  private unreachableLogged = false;
  private incarnationLogged = false;
  private tlsFailureLogged = false;

  constructor(private readonly opts: OutboundLinkOptions) {
    this.queue = new BoundedQueue({ maxItems: opts.maxQueueMessages, maxBytes: opts.maxQueueBytes });
    this.serviceQueue = new BoundedQueue({ maxItems: opts.maxServiceQueuePayloads, maxBytes: opts.maxServiceQueueBytes });
  }

  get peerId(): NodeId {
    return this.opts.peer.id;
  }

  get peer(): PeerAddress {
    return this.opts.peer;
  }

  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.connect();
  }

  /**
   * The peer has just shown it is up (it dialed us and proved who it is): if this link is
   * waiting out a backoff, dial now. A member that restarts would otherwise hear nothing
   * from the leader until the backoff, up to its 2 s cap, ran out: its rejoin waited on it.
   */
  redialNow(): void {
    if (this.stopped || !this.started || this.retryTimer === null) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.attempt = 0;
    this.connect();
  }

  /** Queues `m` (an oversized append is split first) and schedules a flush. */
  enqueue(m: Message): void {
    if (this.stopped) return;
    const pieces = m.type === 'app' ? splitAppend(m, this.opts.maxFrameBytes) : [m];
    for (const piece of pieces) {
      const dropped = this.queue.push(piece, estimateMessageBytes(piece));
      if (dropped.length > 0) this.noteOverflow(dropped.length);
    }
    this.scheduleFlush();
  }

  /** Up to a peer that may receive service frames (authenticated, advertising a high enough command version). */
  serviceReady(): boolean {
    const dial = this.dial;
    const minimum = this.opts.serviceMinCommandVersion;
    if (minimum === undefined || this.stopped || dial === null || !dial.authenticated || dial.ws.readyState !== WebSocket.OPEN) return false;
    return (dial.handshake.peerCommandVersion ?? 0) >= minimum;
  }

  /**
   * Queues a service payload for the current socket. False (nothing queued) when the
   * link is not serviceReady or the service queue has no room for it.
   */
  enqueueService(payload: Uint8Array): boolean {
    const bytes = estimateServicePayloadBytes(payload);
    if (frameOverheadBytes() + bytes > this.opts.maxFrameBytes) {
      throw new RangeError(`a ${payload.byteLength}-byte service payload cannot fit in a ${this.opts.maxFrameBytes}-byte frame`);
    }
    if (!this.serviceReady() || !this.serviceQueue.fits(bytes)) return false;
    this.serviceQueue.push({ payload, queuedAt: performance.now() }, bytes);
    this.armServiceAgeTimer();
    this.scheduleFlush();
    return true;
  }

  /** Writes what is queued now, if a flush at the end of the turn was waiting (the sender is done for now). */
  flushNow(): void {
    if (this.flushImmediate === null) return;
    clearImmediate(this.flushImmediate);
    this.flushImmediate = null;
    this.flush();
  }

  status(): OutboundLinkStatus {
    return {
      connected: this.dial?.authenticated ?? false,
      queuedMessages: this.queue.length,
      queuedBytes: this.queue.bytes,
      droppedMessages: this.dropped,
      framesSent: this.framesSent,
      queuedServicePayloads: this.serviceQueue.length,
      queuedServiceBytes: this.serviceQueue.bytes,
    };
  }

  /** Stops redialing, drops the queue and waits until the socket is really gone. */
  async close(): Promise<void> {
    this.stopped = true;
    this.clearTimers();
    this.queue.clear();
    this.returnUnsentService();
    const dial = this.dial;
    if (dial) {
      dial.ws.terminate();
      await dial.closed;
    }
  }

  // ------------------------------------------------------------------ dialing

  private connect(): void {
    const { peer, handshakeTimeoutMs } = this.opts;
    const clusterId = this.opts.clusterId();
    if (clusterId === null) throw new Error(`link to ${peer.id} started before the cluster id is known`);
    const tls = this.opts.tls;
    const ws = new WebSocket(peerUrl(peer.host, peer.port, tls !== undefined), {
      perMessageDeflate: false,
      // The listener only ever sends handshake frames on this socket.
      maxPayload: MAX_HANDSHAKE_FRAME_BYTES,
      handshakeTimeout: handshakeTimeoutMs,
      // Read at every dial: a certificate reloaded from disk is used from the next one.
      ...(tls === undefined ? {} : tls.dialOptions()),
    });
    ws.binaryType = 'nodebuffer';
    let closedResolve!: () => void;
    const closed = new Promise<void>((r) => (closedResolve = r));
    const handshake = new DialerHandshake(
      {
        secret: this.opts.secret,
        clusterId,
        selfId: this.opts.selfId,
        ...this.opts.identity,
      },
      peer.id,
    );
    const dial: Dial = { ws, handshake, authenticated: false, unwritten: 0, closed };
    this.dial = dial;
    // ws's own handshakeTimeout covers only the HTTP upgrade; this covers authentication too.
    this.handshakeTimer = setTimeout(() => {
      this.handshakeTimer = null;
      this.opts.logger.warn({ event: 'peer.handshakeTimeout', peer: peer.id }, `no authenticated connection to ${peer.id} within ${handshakeTimeoutMs} ms`);
      ws.terminate();
    }, handshakeTimeoutMs);

    ws.on('open', () => ws.send(handshake.hello()));
    ws.on('message', (data, isBinary) => this.onHandshakeFrame(dial, toBuffer(data), isBinary));
    ws.on('error', (err) => this.onDialError(err));
    ws.on('close', (code, reason) => {
      closedResolve();
      this.onClose(dial, code, reason.toString('utf8'));
    });
  }

  private onHandshakeFrame(dial: Dial, frame: Buffer, isBinary: boolean): void {
    const { peer, logger } = this.opts;
    if (dial !== this.dial || this.stopped) return;
    try {
      if (dial.authenticated) throw new PeerProtocolError('the listener sent a frame after authentication');
      if (!isBinary) throw new PeerProtocolError('handshake frames must be binary');
      const reply = dial.handshake.receive(frame);
      if (reply !== null) {
        dial.ws.send(reply);
        return;
      }
      dial.authenticated = true;
      this.clearHandshakeTimer();
      this.attempt = 0;
      this.unreachableLogged = false;
      this.overflowLogged = false;
      this.incarnationLogged = false;
      this.tlsFailureLogged = false;
      logger.info({ event: 'peer.connected', peer: peer.id, queued: this.queue.length }, `connected to peer ${peer.id}`);
      this.scheduleFlush();
    } catch (err) {
      const auth = err instanceof PeerAuthError;
      if (err instanceof PeerIncarnationError) {
        // Every redial meets the same refusal: say it once until the peer is accepted again.
        if (!this.incarnationLogged) {
          logger.error({ event: 'peer.incarnationMismatch', peer: peer.id, direction: 'outbound', err: errorText(err) }, errorText(err));
        }
        this.incarnationLogged = true;
      } else {
        logger.warn(
          { event: auth ? 'peer.authFailed' : 'peer.protocolError', peer: peer.id, direction: 'outbound', err: errorText(err) },
          auth ? `peer ${peer.id} failed authentication` : `peer ${peer.id} broke the peer protocol`,
        );
      }
      // The attempt is over; its deadline must not log a second, misleading failure.
      this.clearHandshakeTimer();
      dial.ws.close(auth ? CloseCode.authFailed : CloseCode.protocolError, closeReason(errorText(err)));
    }
  }

  private onDialError(err: Error): void {
    // A 'close' always follows; only the first failure of an outage is worth an info line.
    const { peer, logger } = this.opts;
    if ((err as NodeJS.ErrnoException).code === 'ECONNREFUSED' && !this.stopped) this.opts.onRefused?.();
    if (this.opts.tls !== undefined && isTlsFailure(err) && !this.stopped) {
      // The peer answered but its certificate (or ours, to it) was refused: a misconfiguration or a stranger, worth a warning once per outage.
      if (!this.tlsFailureLogged) {
        this.tlsFailureLogged = true;
        this.unreachableLogged = true;
        logger.warn({ event: 'peer.tlsRefused', peer: peer.id, direction: 'outbound', err: err.message }, `TLS handshake with peer ${peer.id} failed: ${err.message}; retrying`);
      } else {
        logger.debug({ event: 'peer.dialError', peer: peer.id, err: err.message }, `dial to ${peer.id} failed`);
      }
      return;
    }
    if (!this.unreachableLogged && !this.stopped) {
      this.unreachableLogged = true;
      logger.info({ event: 'peer.unreachable', peer: peer.id, err: err.message }, `cannot reach peer ${peer.id}; retrying`);
    } else {
      logger.debug({ event: 'peer.dialError', peer: peer.id, err: err.message }, `dial to ${peer.id} failed`);
    }
  }

  private onClose(dial: Dial, code: number, reason: string): void {
    if (dial !== this.dial) return;
    this.dial = null;
    this.clearHandshakeTimer();
    if (this.flushImmediate) {
      clearImmediate(this.flushImmediate);
      this.flushImmediate = null;
    }
    // Queued for the socket that is gone: the next one may reach another process of the peer.
    this.returnUnsentService();
    if (this.stopped) return;
    const { peer, logger } = this.opts;
    if (dial.authenticated) {
      logger.info({ event: 'peer.disconnected', peer: peer.id, code, reason }, `lost connection to peer ${peer.id}`);
    } else if (code >= 4000) {
      // The listener refused us and said why (wrong cluster, unknown member, ...).
      logger.warn({ event: 'peer.refused', peer: peer.id, code, reason }, `peer ${peer.id} refused the connection: ${reason}`);
    }
    const delay = backoffDelay(this.attempt++, this.opts.backoff, this.opts.random);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (!this.stopped) this.connect();
    }, delay);
  }

  // ------------------------------------------------------------------ sending

  private scheduleFlush(): void {
    if (this.flushImmediate || !this.dial?.authenticated || this.stopped) return;
    // setImmediate, not a direct flush: everything sent in this tick shares frames.
    this.flushImmediate = setImmediate(() => {
      this.flushImmediate = null;
      this.flush();
    });
  }

  private flush(): void {
    const dial = this.dial;
    if (!dial?.authenticated || dial.ws.readyState !== WebSocket.OPEN) return;
    const { maxFrameBytes, maxBufferedBytes, logger, peer } = this.opts;
    while (this.queue.length > 0 && dial.unwritten < maxBufferedBytes) {
      const batch: Message[] = [];
      let size = frameOverheadBytes();
      for (let next = this.queue.peek(); next !== undefined; next = this.queue.peek()) {
        if (batch.length > 0 && size + next.bytes > maxFrameBytes) break;
        batch.push(this.queue.shift()!);
        size += next.bytes;
      }
      const frame = encodeMessages(batch);
      if (frame.byteLength > maxFrameBytes) {
        // Only a lone message can get here (batches stop at the limit): the receiver would refuse it.
        this.dropped += batch.length;
        logger.error(
          { event: 'peer.oversizedMessage', peer: peer.id, type: batch[0]?.type, bytes: frame.byteLength, maxFrameBytes },
          `dropped a ${batch[0]?.type} message of ${frame.byteLength} bytes to ${peer.id}: above maxFrameBytes; raise it above the largest entry`,
        );
        continue;
      }
      dial.unwritten += frame.byteLength;
      this.framesSent++;
      dial.ws.send(frame, { binary: true }, (err) => {
        dial.unwritten -= frame.byteLength;
        // An error means the socket died; its close handler takes over.
        if (!err && dial === this.dial) this.scheduleFlush();
      });
    }
    this.flushService(dial);
  }

  /**
   * Service frames, after the Raft queue, within half the buffer budget so Raft keeps its
   * headroom: a frame is cut where it would take the unwritten bytes past that half. With
   * nothing unwritten one payload always goes, however large, so a big one cannot wait forever.
   */
  private flushService(dial: Dial): void {
    const { maxFrameBytes, maxBufferedBytes } = this.opts;
    const budget = Math.max(1, Math.floor(maxBufferedBytes / 2));
    while (this.serviceQueue.length > 0) {
      const room = Math.min(maxFrameBytes, budget - dial.unwritten);
      const batch: Uint8Array[] = [];
      let size = frameOverheadBytes();
      for (let next = this.serviceQueue.peek(); next !== undefined && batch.length < MAX_SERVICE_PAYLOADS_PER_FRAME; next = this.serviceQueue.peek()) {
        const alone = batch.length === 0 && dial.unwritten === 0;
        if (!alone && size + next.bytes > room) break;
        batch.push(this.serviceQueue.shift()!.payload);
        size += next.bytes;
      }
      if (batch.length === 0) break;
      const frame = encodeServicePayloads(batch);
      dial.unwritten += frame.byteLength;
      this.framesSent++;
      dial.ws.send(frame, { binary: true }, (err) => {
        dial.unwritten -= frame.byteLength;
        if (!err && dial === this.dial) this.scheduleFlush();
      });
    }
  }

  /** Hands back every payload still queued (the socket is gone, or the link stopped). */
  private returnUnsentService(): void {
    this.clearServiceAgeTimer();
    const unsent: Uint8Array[] = [];
    for (let p = this.serviceQueue.shift(); p !== undefined; p = this.serviceQueue.shift()) unsent.push(p.payload);
    this.handBack(unsent);
  }

  /** Hands back the payloads queued longer than maxServiceQueueMs, and re-arms for the next oldest. */
  private returnStaleService(): void {
    this.serviceAgeTimer = null;
    const cutoff = performance.now() - this.opts.maxServiceQueueMs;
    const stale: Uint8Array[] = [];
    for (let next = this.serviceQueue.peek(); next !== undefined && next.item.queuedAt <= cutoff; next = this.serviceQueue.peek()) {
      stale.push(this.serviceQueue.shift()!.payload);
    }
    this.armServiceAgeTimer();
    this.handBack(stale);
  }

  private armServiceAgeTimer(): void {
    const oldest = this.serviceQueue.peek();
    if (this.serviceAgeTimer !== null || oldest === undefined) return;
    const wait = Math.max(0, oldest.item.queuedAt + this.opts.maxServiceQueueMs - performance.now());
    this.serviceAgeTimer = setTimeout(() => this.returnStaleService(), wait);
  }

  private clearServiceAgeTimer(): void {
    if (this.serviceAgeTimer === null) return;
    clearTimeout(this.serviceAgeTimer);
    this.serviceAgeTimer = null;
  }

  private handBack(unsent: Uint8Array[]): void {
    if (unsent.length === 0) return;
    try {
      this.opts.onServiceUnsent?.(unsent);
    } catch (err) {
      this.opts.logger.error({ event: 'peer.onServiceUnsentFailed', peer: this.opts.peer.id, err: errorText(err) }, 'onServiceUnsent threw');
    }
  }

  private noteOverflow(count: number): void {
    this.dropped += count;
    const { peer, logger, maxQueueMessages, maxQueueBytes } = this.opts;
    if (!this.overflowLogged) {
      this.overflowLogged = true;
      logger.warn(
        { event: 'peer.queueOverflow', peer: peer.id, maxQueueMessages, maxQueueBytes },
        `send queue to ${peer.id} is full; dropping its oldest messages`,
      );
    }
  }

  private clearHandshakeTimer(): void {
    if (this.handshakeTimer) {
      clearTimeout(this.handshakeTimer);
      this.handshakeTimer = null;
    }
  }

  private clearTimers(): void {
    this.clearHandshakeTimer();
    this.clearServiceAgeTimer();
    if (this.retryTimer) {
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
    }
    if (this.flushImmediate) {
      clearImmediate(this.flushImmediate);
      this.flushImmediate = null;
    }
  }
}

/** A dial that failed in the TLS handshake (a certificate refused either way, a protocol mismatch), not for want of a listener. */
function isTlsFailure(err: Error): boolean {
  const code = String((err as NodeJS.ErrnoException).code ?? '');
  return /CERT|SSL|TLS|UNABLE_TO|SIGNATURE|ALTNAME|ISSUER/i.test(code) || /certificate|SSL routines|alert/i.test(err.message);
}
