// Small pieces both ends of a peer connection agree on.

import type { ConnectionOptions, TlsOptions } from 'node:tls';
import type { RawData } from 'ws';

/** The HTTP path peers upgrade on; anything else is refused at the HTTP level. */
export const PEER_PATH = '/vera/peer';

/** Handshake frames are tiny; a bigger frame before authentication is an attack or a bug. */
export const MAX_HANDSHAKE_FRAME_BYTES = 1024;

/** WebSocket close codes (4000-4999 is the application range). */
export const CloseCode = {
  authFailed: 4001,
  protocolError: 4002,
} as const;

/** What the transport logs through: pino's logger fits this shape. */
export interface PeerLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** ws hands over Buffer, ArrayBuffer or fragments depending on binaryType; we always want one Buffer. */
export function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A WebSocket close reason must fit in 123 bytes. */
export function closeReason(text: string): string {
  const b = Buffer.from(text, 'utf8');
  return b.byteLength <= 123 ? text : b.subarray(0, 120).toString('utf8').replace(/\uFFFD+$/, '') + '...';
}

/** ws://host:port (wss:// with TLS) with IPv6 literals bracketed. */
export function peerUrl(host: string, port: number, secure = false): string {
  const h = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `${secure ? 'wss' : 'ws'}://${h}:${port}${PEER_PATH}`;
}

/**
 * TLS for the peer port, from whoever loads the certificate files (the server's
 * tls.ts): the cluster-secret handshake still runs on top of it.
 */
export interface PeerTls {
  /**
   * Mutual TLS: the peer port asks every dialer for a certificate and refuses one
   * that does not verify (serverOptions asks for it; the transport refuses, so the log says why).
   */
  readonly verifyPeers: boolean;
  /** Options the peer port's https server starts with, and takes again after a reload. */
  serverOptions(): TlsOptions;
  /** Options of one dial (read at every dial, so a reloaded certificate is used from the next one). */
  dialOptions(): ConnectionOptions;
  /** Calls `listener` after each reload of the files; returns a function that stops it. */
  onReload(listener: () => void): () => void;
}
