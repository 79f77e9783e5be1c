// Starts a Vera member: its data directory and Raft node, the peer transport
// (for a cluster), and the client port (WebSocket at /v1/connect plus HTTP).

import { createServer, type Server } from 'node:http';
import { pino, type Logger } from 'pino';
import { WebSocketServer } from 'ws';
import type { ServerConfig } from '../cli/config.js';
import { deriveClusterId } from '../raft/transport/auth.js';
import { PeerTransport } from '../raft/transport/peer-transport.js';
import type { Message } from '../raft/types.js';
import { ClientConnection } from './client-connection.js';
import { CloseCode, type AttachedConnection, type FrontEnd } from './context.js';
import { EventLog } from './event-log.js';
import { ExpiryQueue } from './expiry.js';
import { handleHttp } from './http-api.js';
import { DEFAULT_DUTY_TIMINGS, LeaderDuties } from './leader-duties.js';
import { DEFAULT_NOTIFIER_LIMITS, Notifier } from './notifier.js';
import { DEFAULT_LIMITS } from './protocol-types.js';
import { ServerMetrics } from './server-metrics.js';
import { DEFAULT_RAFT_TIMING, VeraNode, type ClosableTransport, type RaftTiming } from './vera-node.js';

export interface RunningServer {
  /** The client port actually bound (useful with port 0). */
  readonly clientPort: number;
  readonly node: VeraNode;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly logger?: Logger;
  readonly timing?: RaftTiming;
}

export async function startServer(config: ServerConfig, options: StartOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? pino({ level: config.logLevel, base: { node: config.id } });
  const members = config.peers.length > 0 ? config.peers : [{ id: config.id, host: config.client.host, peerPort: config.peer.port, clientPort: config.client.port }];
  const clientUrls = new Map(members.map((m) => [m.id, wsUrl(m.host, m.clientPort)]));

  let node: VeraNode | null = null;
  let transport: ClosableTransport | null = null;
  if (members.length > 1) {
    if (config.secret === null) throw new Error('a cluster of more than one member needs --secret (or VERA_CLUSTER_SECRET)');
    const peerTransport = new PeerTransport({
      selfId: config.id,
      listen: config.peer,
      peers: members.filter((m) => m.id !== config.id).map((m) => ({ id: m.id, host: m.host, port: m.peerPort })),
      secret: config.secret,
      clusterId: deriveClusterId(members.map((m) => `${m.id}=${m.host}:${m.peerPort}/${m.clientPort}`)),
      onMessage: (m: Message) => node?.step(m),
      logger,
    });
    await peerTransport.start();
    transport = peerTransport;
  }

  // Everything the front end shares; `node` is filled in once the data directory is open.
  const connections = new Map<string, AttachedConnection>();
  const expiry = new ExpiryQueue(() => performance.now());
  let fe: FrontEnd;
  let duties: LeaderDuties;
  try {
    node = await VeraNode.open(
      {
        id: config.id,
        dataDir: config.dataDir,
        initialMembers: members.map((m) => m.id),
        timing: options.timing ?? DEFAULT_RAFT_TIMING,
        logger,
        eventLogCapacity: 200_000,
        transport,
        compaction: config.compaction,
      },
      {
        onApplied: (_outcome, recorded) => fe.notifier.deliver(recorded),
        onSoftState: (s) => {
          logger.info({ event: 'role-changed', role: s.role, leader: s.leader, term: node?.status().term }, `role is now ${s.role}`);
          duties.setLeading(s.role === 'leader');
        },
        onFatal: (err) => {
          logger.fatal({ event: 'storage-failed', err: String(err) }, 'storage failed; stopping to keep acknowledged writes safe');
          process.exit(70);
        },
      },
    );
  } catch (err) {
    await transport?.close();
    throw err;
  }
  const veraNode = node;
  const metrics = new ServerMetrics({
    raft: () => {
      const st = veraNode.status();
      return { term: st.term, commit: st.commit, applied: veraNode.appliedIndex, lastIndex: st.lastIndex, isLeader: st.role === 'leader' };
    },
    sessions: () => veraNode.stateMachine.sessions().size,
    attachedSessions: () => connections.size,
    watches: () => {
      let n = 0;
      for (const s of veraNode.stateMachine.sessions().keys()) n += veraNode.stateMachine.watchesOf(s).length;
      return n;
    },
    notifyBacklog: () => fe.notifier.backlog,
  });
  fe = {
    node: veraNode,
    notifier: new Notifier(veraNode.stateMachine, veraNode.events, DEFAULT_NOTIFIER_LIMITS, (err) =>
      logger.error({ event: 'resync-failed', err: String(err) }, 'could not read lists for a resync'),
    ),
    expiry,
    limits: { ...DEFAULT_LIMITS, ...config.limits },
    sessionTimeouts: config.sessionTimeout,
    readTimeoutMs: 5000,
    logger,
    metrics,
    isLeader: () => veraNode.status().role === 'leader',
    clientUrl: (id) => clientUrls.get(id) ?? null,
    connections,
  };
  duties = new LeaderDuties(fe, DEFAULT_DUTY_TIMINGS);

  const http = createServer((req, res) =>
    handleHttp(fe, { members: () => memberList(veraNode, clientUrls) }, req, res),
  );
  const wss = new WebSocketServer({ noServer: true, maxPayload: fe.limits.frameBytes, perMessageDeflate: false });
  http.on('upgrade', (req, socket, head) => {
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== '/v1/connect') {
      socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      new ClientConnection(ws, `${req.socket.remoteAddress ?? '?'}:${req.socket.remotePort ?? 0}`, fe);
    });
  });
  let clientPort: number;
  try {
    clientPort = await listen(http, config.client.host, config.client.port);
  } catch (err) {
    await veraNode.close();
    throw err;
  }
  // With --client HOST:0 this member's URL is only known once bound.
  if (config.client.port === 0) clientUrls.set(config.id, wsUrl(config.client.host, clientPort));
  veraNode.start();
  logger.info({ event: 'started', client: `${config.client.host}:${clientPort}`, dataDir: config.dataDir, members: members.map((m) => m.id) }, 'vera is serving');

  let closing: Promise<void> | null = null;
  return {
    clientPort,
    node: veraNode,
    close: () =>
      (closing ??= (async () => {
        duties.stop();
        for (const c of [...connections.values()]) c.close(CloseCode.shuttingDown, 'server shutting down');
        for (const ws of wss.clients) ws.terminate();
        fe.notifier.close();
        await new Promise<void>((resolve) => {
          wss.close(() => resolve());
        });
        await new Promise<void>((resolve) => http.close(() => resolve()));
        await veraNode.close();
        logger.info({ event: 'stopped' }, 'vera stopped');
      })()),
  };
}

function memberList(node: VeraNode, clientUrls: ReadonlyMap<string, string>): Array<{ id: string; clientUrl: string | null; voter: boolean }> {
  const { config } = node.status();
  return [...config.voters.map((id) => ({ id, voter: true })), ...config.learners.map((id) => ({ id, voter: false }))].map((m) => ({
    ...m,
    clientUrl: clientUrls.get(m.id) ?? null,
  }));
}

/** A client URL; IPv6 hosts need brackets. */
function wsUrl(host: string, port: number): string {
  return host.includes(':') ? `ws://[${host}]:${port}` : `ws://${host}:${port}`;
}

function listen(server: Server, host: string, port: number): Promise<number> {
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
