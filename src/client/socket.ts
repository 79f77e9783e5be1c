// What a Connection needs of a WebSocket, whichever platform provides it
// (transport.ts: `ws` on Node; transport.browser.ts: the browser's own). Types only.
import type { Bytes, EncodedFrame, RawFrame } from '../protocol/index.js';

/** Certificates for a wss:// server: the CA to trust (else the system's), and a client certificate for mutual TLS. Node only. */
export interface TlsClientOptions {
  /** PEM CA certificate(s) the server's certificate must chain to. */
  readonly ca?: string | Bytes | ReadonlyArray<string | Bytes>;
  /** PEM client certificate (chain), for servers that ask for one (--client-ca). */
  readonly cert?: string | Bytes;
  /** PEM private key of `cert`. */
  readonly key?: string | Bytes;
}

/** An open socket. */
export interface Socket {
  /** Sends one frame (a string as a text frame, bytes as a binary one); `onError` hears a failed send. */
  send(frame: EncodedFrame, onError: (error: Error) => void): void;
  /** Closes with a close handshake. */
  close(code: number, reason: string): void;
  /** Drops the socket at once (where the platform can; a browser can only close). */
  terminate(): void;
}

/** What a socket tells its owner once open. */
export interface SocketListener {
  message(data: RawFrame | string, isBinary: boolean): void;
  error(message: string): void;
  closed(code: number, reason: string): void;
}

/**
 * How a transport opens a socket to `url`: on open, `listen` makes its listener (called
 * at once, before any message can arrive) and the promise resolves with it; rejects with
 * an Error saying why when the socket does not open within `timeoutMs` (or a VeraError
 * when the options cannot work on this platform).
 */
export type OpenSocket = <L extends SocketListener>(url: string, timeoutMs: number, tls: TlsClientOptions, listen: (socket: Socket) => L) => Promise<L>;
