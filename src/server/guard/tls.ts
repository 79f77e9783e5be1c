// TLS for both ports: the certificate files are read at start and watched (their
// size, mtime and inode, stat'ed every second), and a change is loaded into a new
// secure context without a restart. A reload that fails (a key that does not match
// the certificate, say, because only one of the two files was replaced so far)
// keeps the old context and logs an error; the next change is tried again.
//
// The client port: an https server behind a plain TCP listener that peeks at the
// first byte of each connection. A TLS handshake (0x16) goes on to https; a plain
// HTTP request (a ws:// or http:// client) is answered 400 "this port speaks TLS"
// instead of the silence Node's https server gives it. With a client CA,
// certificates are asked of clients and verified when presented (a presented one
// that does not verify is refused); --client-cert-required refuses clients without
// one. certificateUser() names the verified client (its certificate's CN).
//
// The peer port: PeerTls (src/raft/transport/shared.ts) hands the transport the
// options of its https server and of every dial, and tells it of reloads.

import type { IncomingMessage, RequestListener, ServerOptions } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { readFileSync, statSync } from 'node:fs';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { X509Certificate } from 'node:crypto';
import { createSecureContext, type ConnectionOptions, type TLSSocket, type TlsOptions } from 'node:tls';
import { RateLimitedLog } from '../../log/rate-limited-log.js';
import type { PeerTls } from '../../raft/transport/shared.js';
import type { ClientTlsConfig, ServerConfig, TlsFilesConfig } from '../config.js';

/** What TLS logs through: pino's logger fits. */
export interface TlsLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** How often the certificate files are stat'ed for a change. */
export const DEFAULT_RELOAD_CHECK_MS = 1000;

/** The first byte of a TLS connection: a handshake record. */
const TLS_HANDSHAKE_RECORD = 0x16;

/** What a port presents and verifies with, as read from its files. */
export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca?: Buffer;
}

/** A certificate problem found while loading the files: says which file and why. */
export class TlsLoadError extends Error {
  override readonly name = 'TlsLoadError';
}

/**
 * Reads and checks a port's files: the certificate and the CA parse, and the key
 * belongs to the certificate. An expired certificate loads (the other side refuses
 * it, and the log says so); a broken one throws TlsLoadError.
 */
export function loadTlsMaterial(files: TlsFilesConfig, what: string): TlsMaterial {
  const read = (path: string, kind: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new TlsLoadError(`cannot read the ${what} ${kind} file ${path}: ${(err as Error).message}`);
    }
  };
  const cert = read(files.certFile, 'certificate');
  const key = read(files.keyFile, 'key');
  const ca = files.caFile === undefined ? undefined : read(files.caFile, 'CA');
  try {
    new X509Certificate(cert);
  } catch (err) {
    throw new TlsLoadError(`the ${what} certificate file ${files.certFile} holds no PEM certificate: ${(err as Error).message}`);
  }
  if (ca !== undefined) {
    try {
      new X509Certificate(ca);
    } catch (err) {
      throw new TlsLoadError(`the ${what} CA file ${files.caFile} holds no PEM certificate: ${(err as Error).message}`);
    }
  }
  try {
    // Parses the key and checks it against the certificate, as the server will.
    createSecureContext({ cert, key, ...(ca === undefined ? {} : { ca }), minVersion: files.minVersion });
  } catch (err) {
    throw new TlsLoadError(`the ${what} certificate ${files.certFile} and key ${files.keyFile} cannot be used together: ${(err as Error).message}`);
  }
  return { cert, key, ...(ca === undefined ? {} : { ca }) };
}

/** Subject, serial and validity of a PEM certificate, for the log. */
export function describeCertificate(cert: Buffer): { subject: string; serial: string; validTo: string; expired: boolean } {
  const x = new X509Certificate(cert);
  return { subject: x.subject.replace(/\n/g, ', '), serial: x.serialNumber, validTo: x.validTo, expired: Date.parse(x.validTo) < Date.now() };
}

/**
 * One port's certificate files, kept loaded: `material` is what was last read
 * successfully. Listeners hear of every successful reload.
 */
export class TlsFiles {
  private current: TlsMaterial;
  private signature: string;
  private timer: NodeJS.Timeout | null = null;
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly config: TlsFilesConfig,
    /** Names the port in errors and the log ('client port', 'peer port'). */
    readonly what: string,
    private readonly logger: TlsLogger,
    private readonly checkEveryMs = DEFAULT_RELOAD_CHECK_MS,
  ) {
    this.signature = this.stat();
    this.current = loadTlsMaterial(config, what);
    const cert = describeCertificate(this.current.cert);
    logger.info({ event: 'tls-loaded', port: what, ...cert }, `${what} TLS certificate ${cert.subject} (serial ${cert.serial}, valid to ${cert.validTo})`);
    if (cert.expired) logger.warn({ event: 'tls-certificate-expired', port: what, ...cert }, `the ${what} certificate expired on ${cert.validTo}: the other side will refuse it`);
  }

  get material(): TlsMaterial {
    return this.current;
  }

  /** Calls `listener` after each successful reload; watching starts with the first listener. Returns a function that stops it. */
  onReload(listener: () => void): () => void {
    this.listeners.add(listener);
    if (this.timer === null) {
      this.timer = setInterval(() => this.check(), this.checkEveryMs);
      this.timer.unref();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  }

  /** Reloads when a file changed since the last look; returns whether it loaded something new. */
  check(): boolean {
    const now = this.stat();
    if (now === this.signature) return false;
    this.signature = now;
    let loaded: TlsMaterial;
    try {
      loaded = loadTlsMaterial(this.config, this.what);
    } catch (err) {
      // Often a rotation half done (the certificate replaced, the key not yet): the next change is tried again.
      this.logger.error({ event: 'tls-reload-failed', port: this.what, err: (err as Error).message }, `${(err as Error).message}; the ${this.what} keeps its current certificate`);
      return false;
    }
    this.current = loaded;
    const cert = describeCertificate(loaded.cert);
    this.logger.info({ event: 'tls-reloaded', port: this.what, ...cert }, `${this.what} TLS certificate reloaded: ${cert.subject} (serial ${cert.serial}, valid to ${cert.validTo})`);
    if (cert.expired) this.logger.warn({ event: 'tls-certificate-expired', port: this.what, ...cert }, `the ${this.what} certificate expired on ${cert.validTo}: the other side will refuse it`);
    for (const listener of this.listeners) listener();
    return true;
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** Size, mtime and inode of each file: replacing one by rename or rewriting it in place both change this. */
  private stat(): string {
    const files = [this.config.certFile, this.config.keyFile, ...(this.config.caFile === undefined ? [] : [this.config.caFile])];
    return files
      .map((f) => {
        try {
          const s = statSync(f);
          return `${s.ino}:${s.size}:${s.mtimeMs}`;
        } catch {
          return 'missing';
        }
      })
      .join('|');
  }
}

// ---------------------------------------------------------------- the client port

/**
 * TLS on the client port. Build the https server with createServer(), listen on
 * front(), and find the socket admission counted with admittedSocket().
 */
export class ClientPortTls {
  readonly files: TlsFiles;
  private readonly refusals: RateLimitedLog;
  /** Each live raw socket by `address|port`: a request's TLS socket has the same remote end. */
  private readonly raw = new Map<string, Socket>();
  private stopReload: (() => void) | null = null;

  constructor(
    private readonly config: ClientTlsConfig,
    private readonly logger: TlsLogger,
    checkEveryMs = DEFAULT_RELOAD_CHECK_MS,
  ) {
    this.files = new TlsFiles(config, 'client port', logger, checkEveryMs);
    this.refusals = new RateLimitedLog(logger, 10_000);
  }

  /** Options of the https server (and of each reload): certificate, key, and with a CA, client certificates asked for. */
  secureOptions(): TlsOptions {
    const { cert, key, ca } = this.files.material;
    return {
      cert,
      key,
      minVersion: this.config.minVersion,
      ...(ca === undefined ? {} : { ca }),
      requestCert: ca !== undefined,
      // Without --client-cert-required an anonymous client gets in; a presented certificate is still checked (see createServer).
      rejectUnauthorized: ca !== undefined && this.config.clientCertRequired,
    };
  }

  /** The https server requests and upgrades arrive on; it follows certificate reloads. It does not listen itself: front() does. */
  createServer(options: ServerOptions & { handshakeTimeout?: number }, listener: RequestListener): HttpsServer {
    const server = createHttpsServer({ ...options, ...this.secureOptions() }, listener);
    this.stopReload = this.files.onReload(() => server.setSecureContext(this.secureOptions()));
    server.on('secureConnection', (socket: TLSSocket) => {
      // requestCert without rejectUnauthorized lets every handshake finish; a certificate presented must still verify.
      if (socket.authorized || !hasPeerCertificate(socket)) return;
      this.refusals.warn(
        'tls-client-refused',
        { remote: socket.remoteAddress, reason: socket.authorizationError },
        `refused a client whose certificate does not verify against --client-ca: ${String(socket.authorizationError)}`,
      );
      socket.destroy();
    });
    server.on('tlsClientError', (err: Error, socket: TLSSocket) => {
      this.refusals.warn('tls-handshake-failed', { remote: socket.remoteAddress, err: err.message }, `TLS handshake with a client failed: ${err.message}`);
    });
    return server;
  }

  /**
   * The socket that listens: each connection is offered to `admit` (which may
   * destroy it), then its first byte decides: a TLS handshake goes to `server`; a
   * plain HTTP request is answered 400 saying this port speaks TLS; anything else is dropped.
   */
  front(server: NodeJS.EventEmitter, admit: (raw: Socket) => void): NetServer {
    const front = createNetServer((raw) => {
      raw.on('error', () => undefined); // a reset before the handoff is nobody's business
      admit(raw);
      if (raw.destroyed) return;
      const key = remoteKey(raw);
      this.raw.set(key, raw);
      raw.once('close', () => {
        if (this.raw.get(key) === raw) this.raw.delete(key);
      });
      raw.once('data', (first: Buffer) => {
        raw.pause();
        if (first[0] === TLS_HANDSHAKE_RECORD) {
          raw.unshift(first);
          server.emit('connection', raw);
          return;
        }
        if (/^[A-Z]{3,8} /.test(first.subarray(0, 9).toString('latin1'))) answerPlaintext(raw, first);
        else raw.destroy();
      });
    });
    return front;
  }

  /** The raw socket admission counted for `socket` (a request's TLS socket), or `socket` itself. */
  admittedSocket(socket: Socket): Socket {
    return this.raw.get(remoteKey(socket)) ?? socket;
  }

  /** Cuts every connection the front listener accepted (at shutdown, once the grace period is over). */
  destroyAll(): void {
    for (const raw of this.raw.values()) raw.destroy();
    this.raw.clear();
  }

  close(): void {
    this.stopReload?.();
    this.stopReload = null;
    this.files.stop();
  }
}

/** Whether the other side sent a certificate at all. */
function hasPeerCertificate(socket: TLSSocket): boolean {
  const cert = socket.getPeerCertificate();
  return cert !== null && typeof cert === 'object' && Object.keys(cert).length > 0;
}

function remoteKey(socket: Socket): string {
  return `${socket.remoteAddress ?? '?'}|${socket.remotePort ?? 0}`;
}

/** Longest a plaintext request is read before the 400 goes out anyway. */
const PLAINTEXT_HEADER_BYTES = 16 * 1024;
/** How long a plaintext client may take to close after the 400. */
const PLAINTEXT_LINGER_MS = 2000;

/**
 * Answers a plain HTTP request on the TLS port, once its headers are read (closing
 * with unread bytes would reset the connection before the client reads the answer).
 */
function answerPlaintext(raw: Socket, first: Buffer): void {
  let head = first.toString('latin1');
  const reply = (): void => {
    const host = /\r\nhost:[ \t]*([A-Za-z0-9.:[\]-]{1,300})\r\n/i.exec(head)?.[1];
    const where = host === undefined ? '' : ` (wss://${host} or https://${host})`;
    const body = `this port speaks TLS; use https:// or wss://${where}\n`;
    raw.end(`HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    // Keep reading (and dropping) until the client closes, so it gets the answer.
    raw.removeAllListeners('data');
    raw.on('data', () => undefined);
    raw.on('end', () => raw.destroy());
    setTimeout(() => raw.destroy(), PLAINTEXT_LINGER_MS).unref();
  };
  if (head.includes('\r\n\r\n') || head.length >= PLAINTEXT_HEADER_BYTES) {
    raw.resume();
    reply();
    return;
  }
  const onData = (chunk: Buffer): void => {
    head += chunk.toString('latin1');
    if (head.includes('\r\n\r\n') || head.length >= PLAINTEXT_HEADER_BYTES) {
      raw.off('data', onData);
      reply();
    }
  };
  raw.on('data', onData);
  raw.resume();
}

/**
 * The user a request's client certificate names: the subject's CN, when the
 * connection is TLS and the certificate verified against --client-ca; else null.
 */
export function certificateUser(req: IncomingMessage): string | null {
  const socket = req.socket as Partial<TLSSocket>;
  if (socket.encrypted !== true || socket.authorized !== true || typeof socket.getPeerCertificate !== 'function') return null;
  const cn = socket.getPeerCertificate().subject?.CN as unknown;
  // A subject with several CNs names no one user.
  return typeof cn === 'string' && cn !== '' ? cn : null;
}

// ---------------------------------------------------------------- the peer port

/**
 * The peer transport's TLS from a member's files: its certificate and key both
 * ways; with a CA, mutual TLS (the listener demands a certificate that chains to
 * it, and dials verify the listener's against it alone).
 */
export function peerTls(files: TlsFiles): PeerTls {
  const { minVersion, caFile } = files.config;
  const mutual = caFile !== undefined;
  return {
    verifyPeers: mutual,
    serverOptions: () => {
      const { cert, key, ca } = files.material;
      // The transport refuses a dialer whose certificate does not verify (verifyPeers), logging why; Node would only hang up.
      return { cert, key, minVersion, ...(ca === undefined ? {} : { ca }), requestCert: mutual, rejectUnauthorized: false };
    },
    dialOptions: (): ConnectionOptions => {
      const { cert, key, ca } = files.material;
      return { cert, key, minVersion, ...(ca === undefined ? {} : { ca }) };
    },
    onReload: (listener) => files.onReload(listener),
  };
}

/** Both ports' certificates, as one member's start reads them. */
export interface PortTls {
  /** The client port's TLS, or null for plain WebSocket and HTTP. */
  readonly client: ClientPortTls | null;
  /** The peer port's certificate files, or null for plain peer links. */
  readonly peer: TlsFiles | null;
  /** Stops watching the files. */
  close(): void;
}

/**
 * Reads both ports' certificates first, before the store opens: a member that cannot
 * serve them should not open its store. Nothing is left watching when one fails.
 */
export function openPortTls(config: Pick<ServerConfig, 'clientTls' | 'peerTls'>, logger: TlsLogger, reloadCheckMs?: number): PortTls {
  const client = config.clientTls === undefined ? null : new ClientPortTls(config.clientTls, logger, reloadCheckMs);
  let peer: TlsFiles | null = null;
  try {
    peer = config.peerTls === undefined ? null : new TlsFiles(config.peerTls, 'peer port', logger, reloadCheckMs);
  } catch (err) {
    client?.close();
    throw err;
  }
  return {
    client,
    peer,
    close: () => {
      client?.close();
      peer?.stop();
    },
  };
}
