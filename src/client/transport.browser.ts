// The WebSocket under a Connection, in a browser: the browser's own WebSocket,
// with binary frames as ArrayBuffers. The browser bundle uses this module in
// place of transport.ts (scripts/build-ui.ts); the exports are the same. A
// browser trusts its own certificate store and says nothing about why a socket
// failed, so TLS options are refused and a failure is "cannot connect".
import { VeraError, type EncodedFrame, type RawFrame } from '../protocol/index.js';
import type { OpenSocket } from './socket.js';

/** The part of the browser's WebSocket used here (declared so this file needs no DOM typings). */
interface BrowserWebSocket {
  binaryType: string;
  readonly readyState: number;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { readonly data: unknown }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  onclose: ((event: { readonly code: number; readonly reason: string }) => void) | null;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
}

const OPEN = 1;

/** Opens a socket with the browser's WebSocket (see OpenSocket in socket.ts). */
export const openSocket: OpenSocket = (url, timeoutMs, tls, listen) => {
  if (tls.ca !== undefined || tls.cert !== undefined || tls.key !== undefined) {
    return Promise.reject(new VeraError('BAD_REQUEST', 'the TLS options ca, cert and key are for Node: a browser checks wss:// servers against its own certificate store'));
  }
  const WebSocketClass = (globalThis as unknown as { WebSocket?: new (url: string) => BrowserWebSocket }).WebSocket;
  if (WebSocketClass === undefined) return Promise.reject(new Error('this platform has no WebSocket'));
  return new Promise((resolve, reject) => {
    let ws: BrowserWebSocket;
    try {
      ws = new WebSocketClass(url);
    } catch (error) {
      reject(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    ws.binaryType = 'arraybuffer';
    const fail = (reason: string): void => {
      clearTimeout(timer);
      ws.onopen = ws.onmessage = ws.onerror = ws.onclose = null;
      ws.close();
      reject(new Error(reason));
    };
    const timer = setTimeout(() => fail(`no WebSocket handshake within ${Math.round(timeoutMs)} ms`), Math.max(1, Math.round(timeoutMs)));
    // The browser keeps the reason to itself (it may be a refused upgrade, a closed port, a bad certificate).
    ws.onerror = () => fail('the WebSocket failed to open (the browser console may say why)');
    ws.onclose = (event) => fail(`closed during the handshake (code ${event.code})`);
    ws.onopen = () => {
      clearTimeout(timer);
      const listener = listen({
        send: (frame: EncodedFrame, onError: (error: Error) => void) => {
          // A browser drops what is sent on a closing socket without a word; the close event follows.
          if (ws.readyState !== OPEN) return;
          try {
            ws.send(frame);
          } catch (error) {
            onError(error instanceof Error ? error : new Error(String(error)));
          }
        },
        close: (code, reason) => ws.close(code, reason),
        // No way to drop a browser socket at once: close it, and hear nothing more from it.
        terminate: () => {
          ws.onmessage = ws.onerror = null;
          ws.close();
        },
      });
      ws.onmessage = (event) => {
        const data = event.data;
        listener.message(data as RawFrame | string, typeof data !== 'string');
      };
      ws.onerror = () => listener.error('WebSocket error');
      ws.onclose = (event) => listener.closed(event.code, event.reason);
      resolve(listener);
    };
  });
};
