// The client port: one HTTP server (https with TLS, behind a front listener that
// answers plaintext clients) for the /v1 routes, /metrics and /ui, and the
// WebSocket upgrade at /v1/connect. Every socket is admitted (admission.ts) and
// every request and upgrade passes the request gate (Host, Origin) before it is
// routed.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Server as NetServer, Socket } from 'node:net';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import type { ServerConfig } from '../config.js';
import { Admission } from '../front/admission.js';
import { ClientConnection } from '../front/client-connection.js';
import { CloseCode, type FrontEnd } from '../front/context.js';
import type { FdBudget } from '../front/fd-budget.js';
import { RequestGate, refuseRequest, refuseUpgrade } from '../guard/request-gate.js';
import { certificateUser, type ClientPortTls } from '../guard/tls.js';
import { handleHttp, type StatusSources } from './http-api.js';

export interface ClientPort {
  /** The port actually bound (useful with port 0). */
  readonly port: number;
  /** Stops accepting, closes every connection (after a grace period, cuts them), and resolves when all are gone. */
  shutdown(): Promise<void>;
}

export interface ClientPortInputs {
  readonly config: ServerConfig;
  readonly front: FrontEnd;
  readonly routes: StatusSources;
  readonly tls: ClientPortTls | null;
  readonly fds: FdBudget;
  /** Every member's client URL: their hosts and origins are this member's too. */
  readonly memberClientUrls: () => readonly string[];
  readonly logger: Logger;
}

/** How long clients may take to answer the close, and HTTP requests in flight to finish, before their connections are cut at shutdown. */
const SHUTDOWN_GRACE_MS = 2000;

export async function openClientPort(i: ClientPortInputs): Promise<ClientPort> {
  const { config, front, tls, logger } = i;
  let shuttingDown = false;
  const gate = new RequestGate({ listenHost: config.client.host, allowedHosts: config.allowedHosts ?? [], allowedOrigins: config.allowedOrigins ?? [], memberClientUrls: i.memberClientUrls });
  // Sockets that never finish a request's headers are closed after the hello timeout too, checked every second.
  // A request without Host is judged by the request gate (request-gate.ts), which names what is missing, rather than by Node's bare 400.
  const httpOptions = { headersTimeout: config.limits.helloTimeoutMs, requestTimeout: 5 * 60_000, connectionsCheckingInterval: 1000, requireHostHeader: false };
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    // While shutting down, answer what arrives but let no keep-alive connection (a health checker's) hold the port open.
    if (shuttingDown) res.setHeader('connection', 'close');
    // Every answer (JSON, metrics, backups, files) is what its content-type says: browsers must not guess another.
    res.setHeader('x-content-type-options', 'nosniff');
    const refused = gate.refusal(req);
    if (refused !== null) {
      logger.warn({ event: refused.event, host: req.headers.host, origin: req.headers.origin, remote: req.socket.remoteAddress }, refused.message);
      refuseRequest(res, refused);
      return;
    }
    handleHttp(front, i.routes, req, res);
  };
  // With TLS, https serves the requests and a front listener (tls.ts) takes the connections: it answers plaintext clients.
  const http: Server = tls === null ? createServer(httpOptions, onRequest) : tls.createServer({ ...httpOptions, handshakeTimeout: config.limits.helloTimeoutMs }, onRequest);
  /** The socket admission counted for a request's socket (with TLS, the raw socket under it). */
  const admitted = (socket: Socket): Socket => tls?.admittedSocket(socket) ?? socket;
  const admission = new Admission(
    { connectionsMax: i.fds.clientConnections, connectionsPerAddress: config.limits.connectionsPerAddress, firstRequestTimeoutMs: config.limits.helloTimeoutMs },
    logger,
  );
  const listener: NetServer = tls === null ? http : tls.front(http, (socket) => admission.admit(socket));
  if (tls === null) http.on('connection', (socket: Socket) => admission.admit(socket));
  http.on('request', (req: IncomingMessage) => admission.markUsed(admitted(req.socket)));
  const wss = new WebSocketServer({ noServer: true, maxPayload: front.limits.frameBytes, perMessageDeflate: false });
  http.on('upgrade', (req, socket, head) => {
    admission.markUsed(admitted(req.socket));
    const refused = gate.refusal(req);
    if (refused !== null) {
      logger.warn({ event: refused.event, host: req.headers.host, origin: req.headers.origin, remote: req.socket.remoteAddress }, refused.message);
      refuseUpgrade(socket, refused);
      return;
    }
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== '/v1/connect') {
      socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      new ClientConnection(ws, `${req.socket.remoteAddress ?? '?'}:${req.socket.remotePort ?? 0}`, front, certificateUser(req));
    });
  });
  // With --client HOST:0 this member's URL is only known once bound.
  const port = await listen(listener, config.client.host, config.client.port);

  const shutdown = async (): Promise<void> => {
    shuttingDown = true;
    // With TLS the https server never listened: closing it only stops its timers; the front listener is what stops accepting.
    const httpClosed = Promise.all([
      new Promise<void>((resolve) => http.close(() => resolve())),
      listener === http ? null : new Promise<void>((resolve) => listener.close(() => resolve())),
    ]);
    http.closeIdleConnections();
    for (const c of [...front.connections.values()]) c.close(CloseCode.shuttingDown, 'server shutting down');
    for (const ws of wss.clients) ws.close(CloseCode.shuttingDown, 'server shutting down');
    front.notifier.close();
    // Clients and requests in flight get a moment to finish; then their connections are cut.
    const grace = setTimeout(() => {
      http.getConnections((_err, open) =>
        logger.warn({ event: 'shutdown-cutting', connections: open, sessions: wss.clients.size }, 'connections still open after the shutdown grace period: cutting them'),
      );
      for (const ws of wss.clients) ws.terminate();
      http.closeAllConnections();
      // With TLS, sockets still in their handshake (or never past it) are the front listener's, not the https server's.
      tls?.destroyAll();
    }, SHUTDOWN_GRACE_MS);
    await new Promise<void>((resolve) => {
      wss.close(() => resolve());
    });
    await httpClosed;
    clearTimeout(grace);
  };
  return { port, shutdown };
}

function listen(server: NetServer, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      reject(new Error(err.code === 'EADDRINUSE' ? `client port ${host}:${port} is already in use` : `cannot listen on ${host}:${port}: ${err.message}`));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      const addr = server.address();
      resolve(typeof addr === 'object' && addr !== null ? addr.port : port);
    });
  });
}
