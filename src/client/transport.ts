// The WebSocket under a Connection, on Node: the `ws` package, with TLS options
// (ca, cert, key), a handshake timeout, and the server's own words when it
// refuses the upgrade. The browser bundle swaps this module for
// transport.browser.ts (same exports, the browser's WebSocket); see
// scripts/build-ui.ts. A Connection sees only Socket and SocketListener.
import WebSocket from 'ws';
import type { OpenSocket, TlsClientOptions } from './socket.js';

/** Opens a socket with `ws` (see OpenSocket in socket.ts). */
export const openSocket: OpenSocket = (url, timeoutMs, tls, listen) =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { handshakeTimeout: Math.max(1, Math.round(timeoutMs)), ...tlsOptions(tls) });
    const fail = (error: Error): void => {
      ws.removeAllListeners();
      ws.on('error', () => {}); // a late error must not become an uncaught exception
      ws.terminate();
      reject(error);
    };
    ws.once('error', fail);
    ws.once('close', () => fail(new Error('closed during the handshake')));
    // A refused upgrade: say what the server said (a TLS port answers a ws:// client so), not only its status.
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (body.length < 500) body += chunk;
      });
      const done = (): void => fail(new Error(`the server answered ${res.statusCode ?? '?'}${body.trim() === '' ? '' : `: ${body.trim().slice(0, 500)}`}`));
      res.once('end', done);
      res.once('error', done);
      res.once('close', done);
    });
    ws.once('open', () => {
      ws.removeAllListeners();
      const listener = listen({
        send: (frame, onError) =>
          ws.send(frame, (error) => {
            if (error !== undefined && error !== null) onError(error);
          }),
        close: (code, reason) => ws.close(code, reason),
        terminate: () => ws.terminate(),
      });
      ws.on('message', (data, isBinary) => listener.message(data, isBinary));
      ws.on('error', (error) => listener.error(error.message));
      ws.on('close', (code, reason) => listener.closed(code, reason.toString('utf8')));
      resolve(listener);
    });
  });

/** ws's options for `tls` (only what is set: an empty `ca` would mean "trust nothing"). */
function tlsOptions(tls: TlsClientOptions): { ca?: Array<string | Buffer>; cert?: string | Buffer; key?: string | Buffer } {
  return {
    ...(tls.ca === undefined ? {} : { ca: Array.isArray(tls.ca) ? [...(tls.ca as ReadonlyArray<string | Buffer>)] : [tls.ca as string | Buffer] }),
    ...(tls.cert === undefined ? {} : { cert: tls.cert }),
    ...(tls.key === undefined ? {} : { key: tls.key }),
  };
}
