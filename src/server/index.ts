// Starts a Vera member: its data directory and Raft node, the peer transport
// (whenever a cluster secret is set, so a single member can grow), and the
// client port (WebSocket at /v1/connect plus HTTP). Which members exist and where
// they listen comes from the replicated address book (MemberDirectory); the
// --peers list only seeds a new store, or introduces a joining member.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Server as NetServer, Socket } from 'node:net';
import { pino, type DestinationStream, type Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { authorizeOperatorRequest, Guard, incidentLogLine } from './access.js';
import { auth } from '../families/auth/index.js';
import { exposureProblem } from './exposure.js';
import type { ServerConfig } from './config.js';
import { deriveClusterId, IncarnationGuard } from '../raft/transport/auth.js';
import { PeerTransport } from '../raft/transport/peer-transport.js';
import type { Message } from '../raft/types.js';
import { initialMembers, UnknownCommandError } from '../statemachine/index.js';
import { assertCommandVersion } from '../families/cluster/server.js';
import { Admission } from './admission.js';
import { ClientConnection } from './client-connection.js';
import { CloseCode, toVeraError, type AttachedConnection, type FrontEnd } from './context.js';
import { ExpiryQueue } from './expiry.js';
import { fdBudget, openFileLimit } from './fd-budget.js';
import { handleHttp } from './http-api.js';
import { DEFAULT_DUTY_TIMINGS, LeaderDuties } from './leader-duties.js';
import { loadServerParts, type ServerParts } from './family-part.js';
import { childrenOf, readListPages } from './path-guard.js';
import { OperatorChallenges } from './operator-challenges.js';
import { RequestGate, refuseRequest, refuseUpgrade } from './request-gate.js';
import { COMMAND_VERSION, FAMILIES } from '../families/registry.js';
import type { AnyFamily } from '../families/family.js';
import { authorizeOperator, DEFAULT_PROMOTE_MAX_LAG, LeaderWatch, MemberDirectory, peersFlagDisagreements, wsUrl } from './membership.js';
import { DEFAULT_NOTIFIER_LIMITS, Notifier } from './notifier.js';
import { DiskGuard } from './disk-guard.js';
import { DEFAULT_LIMITS } from '../protocol/index.js';
import { ServerMetrics } from './server-metrics.js';
import { DEFAULT_RAFT_TIMING, MembershipDivergedError, VeraNode, type RaftTiming } from './vera-node.js';
import { certificateUser, ClientPortTls, peerTls, TlsFiles } from './tls.js';
import { watchesOf } from '../families/watches/queries.js';
import { liveSessions } from '../families/sessions/queries.js';

export interface RunningServer {
  /** The client port actually bound (useful with port 0). */
  readonly clientPort: number;
  readonly node: VeraNode;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly logger?: Logger;
  readonly timing?: RaftTiming;
  /**
   * Families whose client ops and leader duties this server runs (the registry's by
   * default). The store applies entries through the registry whatever this says.
   */
  readonly families?: readonly AnyFamily[];
  /** How often certificate files are checked for a change (default 1 s). */
  readonly tlsReloadCheckMs?: number;
}

export async function startServer(config: ServerConfig, options: StartOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? pino({ level: config.logLevel, base: { node: config.id } }, logDestination());
  const timing = options.timing ?? DEFAULT_RAFT_TIMING;
  // config.peers always lists this member; for a joining member the others are only contacts.
  const contacts = config.peers;
  let clientPort = config.client.port;
  // Certificates first: a member that cannot serve them should not open its store.
  const clientTls = config.clientTls === undefined ? null : new ClientPortTls(config.clientTls, logger, options.tlsReloadCheckMs);
  let peerFiles: TlsFiles | null = null;
  try {
    peerFiles = config.peerTls === undefined ? null : new TlsFiles(config.peerTls, 'peer port', logger, options.tlsReloadCheckMs);
  } catch (err) {
    clientTls?.close();
    throw err;
  }
  const stopTls = (): void => {
    clientTls?.close();
    peerFiles?.stop();
  };

  // Everything the front end shares; filled in once the data directory is open.
  const connections = new Map<string, AttachedConnection>();
  /** The command version each authenticated peer advertised (see families/cluster/versions.ts). */
  const peerCommandVersions = new Map<string, number>();
  const fds = fdBudget(openFileLimit(), config.limits.connectionsMax);
  const expiry = new ExpiryQueue(() => performance.now(), DEFAULT_DUTY_TIMINGS['session-expiry']!);
  const leaderWatch = new LeaderWatch();
  let fe: FrontEnd | undefined;
  /** The families' own listeners to applied entries (ServerPart.onApplied); set once their parts load. */
  let appliedHooks: ServerParts['appliedHooks'] = [];
  let duties: LeaderDuties | undefined;
  let directory: MemberDirectory | undefined;
  let node: VeraNode | undefined;
  // Sources read at scrape time; the node's hooks below feed the counters and histograms from its start.
  const metrics = new ServerMetrics({
    raft: () => {
      if (node === undefined) return { term: 0, commit: 0, applied: 0, lastIndex: 0, isLeader: false };
      const st = node.status();
      return { term: st.term, commit: st.commit, applied: node.appliedIndex, lastIndex: st.lastIndex, isLeader: st.role === 'leader' };
    },
    peerLag: () => {
      const st = node?.status();
      if (st === undefined || st.role !== 'leader') return [];
      return Object.entries(st.progress)
        .filter(([id]) => id !== st.id)
        .map(([id, p]) => [id, Math.max(0, st.lastIndex - p.match)] as const);
    },
    sessions: () => (node === undefined ? 0 : liveSessions(node.stateMachine).size),
    attachedSessions: () => connections.size,
    watches: () => {
      let n = 0;
      if (node !== undefined) for (const s of liveSessions(node.stateMachine).keys()) n += watchesOf(node.stateMachine, s).length;
      return n;
    },
    notifyBacklog: () => fe?.notifier.backlogByState() ?? { live: 0, stalled: 0, resyncing: 0 },
    linearizableReads: () => node?.linearizableReads ?? { lease: 0, round: 0 },
  });
  let leaderSeen: string | null = null;
  // The families' server parts load (module reads and compiles) while the store opens (LevelDB on the
  // thread pool), not after it: a restarted member serves sooner. Awaited below, after the open.
  const partsLoading = loadServerParts(options.families ?? FAMILIES);
  partsLoading.catch(() => undefined);
  const veraNode = await VeraNode.open(
    {
      id: config.id,
      dataDir: config.dataDir,
      // A joining member starts with no configuration at all: it never campaigns or counts itself.
      initialMembers: config.join ? [] : initialMembers(contacts),
      clusterId: config.join ? null : deriveClusterId(contacts.map((m) => `${m.id}=${m.host}:${m.peerPort}/${m.clientPort}`)),
      timing,
      logger,
      eventLogCapacity: 200_000,
      compaction: config.compaction,
      levelMaxOpenFiles: fds.levelFiles,
    },
    {
      onApplied: (outcome, recorded) => {
        if (fe === undefined) return;
        fe.notifier.deliver(recorded);
        for (const hook of appliedHooks) hook(outcome, fe);
      },
      onSoftState: (s) => {
        logger.info({ event: 'role-changed', role: s.role, leader: s.leader, term: node?.status().term }, `role is now ${s.role}`);
        if (s.leader !== null && s.leader !== leaderSeen) metrics.leaderChanges.inc();
        if (s.leader !== null) leaderSeen = s.leader;
        duties?.setLeading(s.role === 'leader');
        leaderWatch.notify(s);
      },
      onMembersChanged: (members) => void directory?.update(members),
      onLogSynced: (seconds) => metrics.logSync.observe(seconds),
      onAppliedRun: (seconds, entries) => {
        metrics.apply.observe(seconds);
        metrics.appliedEntries.inc(entries);
      },
      onSnapshot: (e) => metrics.snapshot(e),
      onPeerRoundTrip: (peer, seconds) => metrics.peerRoundTrip.observe({ peer }, seconds),
      onFatal: (err) => {
        if (err instanceof MembershipDivergedError) logger.fatal({ event: 'membership-diverged', err: err.message }, `stopping: ${err.message}`);
        else if (err instanceof UnknownCommandError) logger.fatal({ event: 'command-unknown', err: err.message }, `stopping: ${err.message}`);
        else logger.fatal({ event: 'storage-failed', err: String(err) }, 'storage failed; stopping to keep acknowledged writes safe');
        process.exit(70);
      },
    },
  );
  node = veraNode;
  const exposed = exposureProblem(config, veraNode.stateMachine.stateOf(auth).enabled);
  if (exposed !== null) {
    logger.error({ event: 'exposure-refused', client: `${config.client.host}:${config.client.port}` }, exposed);
    stopTls();
    await veraNode.close();
    throw new Error(exposed);
  }

  let transport: PeerTransport | null = null;
  let incarnations: IncarnationGuard | null = null;
  if (config.secret !== null) {
    try {
      const guard = new IncarnationGuard(
        await veraNode.loadPeerIncarnations(),
        (known) => veraNode.savePeerIncarnations(known),
        (err) => logger.error({ event: 'incarnation-save-failed', err: String(err) }, 'could not save a peer incarnation'),
        (peer) => veraNode.members().some((m) => m.id === peer),
      );
      incarnations = guard;
      const peerTransport = new PeerTransport({
        selfId: config.id,
        listen: config.peer,
        peers: [],
        secret: config.secret,
        clusterId: veraNode.identity.clusterId,
        onClusterIdLearned: (id) =>
          void veraNode.rememberClusterId(id).catch((err: unknown) => logger.error({ event: 'cluster-id-save-failed', err: String(err) }, 'could not save the cluster id')),
        incarnation: veraNode.identity.incarnation,
        checkPeerIncarnation: (peer, incarnation) => guard.check(peer, incarnation),
        commandVersion: COMMAND_VERSION,
        notePeerCommandVersion: (peer, version) => peerCommandVersions.set(peer, version),
        onMessage: (m: Message) => veraNode.step(m),
        currentTerm: () => veraNode.status().term,
        // A crashed leader's port refuses connections at once: elect a new one without waiting out the timeout.
        onPeerRefused: (peer) => {
          const st = veraNode.status();
          if (st.role === 'follower' && st.leader === peer) {
            logger.info({ event: 'leader-unreachable', peer }, `leader ${peer} refuses connections (its process is gone): electing a new leader now`);
          }
          veraNode.peerProcessGone(peer);
        },
        logger,
        ...(peerFiles === null ? {} : { tls: peerTls(peerFiles) }),
      });
      await peerTransport.start();
      transport = peerTransport;
      veraNode.attachTransport(peerTransport);
    } catch (err) {
      stopTls();
      await veraNode.close();
      throw err;
    }
  }
  // Members advertise wss:// when this one serves TLS: a cluster's client ports are all TLS or none.
  const secureClients = clientTls !== null;
  const members = new MemberDirectory(
    config.id,
    contacts,
    () => wsUrl(config.client.host, clientPort, secureClients),
    transport,
    // A removed member may come back with a new data directory once it is added again.
    (id) => incarnations?.forget(id),
    logger,
    secureClients,
  );
  directory = members;
  await members.update(veraNode.members());
  if (config.peers.length > 1) {
    const differences = peersFlagDisagreements(config.id, contacts, veraNode.members());
    if (differences.length > 0) {
      logger.warn(
        { event: 'peers-flag-disagrees', differences },
        `--peers disagrees with the cluster's replicated address book, which this member uses instead: ${differences.join('; ')}. ` +
          'Addresses change only through membership changes (vera member add/remove); start with --peers matching `vera member list` to silence this.',
      );
    }
  }
  // Items per reply or resync frame: half the frame limit (room for the encoding), at most the default.
  const limits = { ...DEFAULT_LIMITS, ...config.limits, replyBytes: Math.min(DEFAULT_LIMITS.replyBytes, Math.floor(config.limits.frameBytes / 2)) };
  const disk = new DiskGuard(config.dataDir, config.limits.diskReserveBytes, logger);
  disk.start();
  const parts = await partsLoading;
  const guard = new Guard(veraNode, config.principalLimits);
  guard.onIncident((i) => {
    const line = incidentLogLine(i.kind);
    logger[line.level]({ event: line.event, principal: i.principal, remote: i.remote, what: i.what }, line.message);
  });
  appliedHooks = parts.appliedHooks;
  const front: FrontEnd = {
    node: veraNode,
    ops: parts.ops,
    extensions: parts.extensions,
    familyOps: parts.familyOps,
    familyHttp: parts.http,
    familyMetrics: parts.metrics,
    pathGuards: parts.pathGuards,
    clientAddress: config.client,
    insecure: config.insecure ?? false,
    metricsNeedAuth: config.metricsNeedAuth ?? false,
    hibernation: config.hibernation ?? null,
    disk,
    notifier: new Notifier(
      {
        watchesOf: (session) => watchesOf(veraNode.stateMachine, session),
        // A resync walks and reads lists as any listing and read does: wherever they are held (a
        // hibernated list from its cold file, never sent empty or left out), through the path guards.
        children: (path) => childrenOf(front, path),
        readListPages: (path, pageBytes, onPage) => readListPages(front, path, pageBytes, onPage),
      },
      veraNode.events,
      { ...DEFAULT_NOTIFIER_LIMITS, resyncFrameBytes: limits.replyBytes },
      (err) => logger.error({ event: 'resync-failed', err: String(err) }, 'could not read lists for a resync'),
    ),
    expiry,
    limits,
    sessionTimeouts: config.sessionTimeout,
    readTimeoutMs: 5000,
    logger,
    metrics,
    isLeader: () => veraNode.status().role === 'leader',
    awaitLeader: async (timeoutMs) => {
      if (veraNode.status().leader !== null) return;
      await leaderWatch.waitFor((s) => s.leader !== null, timeoutMs);
    },
    clientUrl: (id) => members.clientUrl(id),
    connections,
    peerCommandVersions,
    guard,
  };
  fe = front;
  veraNode.setProposalGate((command, version) => assertCommandVersion(front, 'family' in command ? `${command.family}.${command.op}` : command.op, version));
  duties = new LeaderDuties(front, parts.duties, DEFAULT_DUTY_TIMINGS);
  const challenges = new OperatorChallenges();
  const admin = {
    node: veraNode,
    directory: members,
    leaderWatch,
    secret: config.secret,
    canGrow: transport !== null,
    promoteMaxLag: DEFAULT_PROMOTE_MAX_LAG,
    // The core gives up a transfer after one election timeout; leave room for the new leader's first heartbeat.
    transferTimeoutMs: 3 * timing.electionTicks * timing.tickMs,
    toError: (err: unknown) => toVeraError(err, front),
    logger,
    defrag: () => veraNode.stateMachine.compactAll(),
    authorize: (req: IncomingMessage, what: string, body: Uint8Array) =>
      authorizeOperatorRequest(guard, req, what, (r, w) => authorizeOperator(config.secret, challenges, r, w, body), config.secret !== null),
    challenges,
  };

  let shuttingDown = false;
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
    handleHttp(front, { members: () => memberList(veraNode, members), admin }, req, res);
  };
  // With TLS, https serves the requests and a front listener (tls.ts) takes the connections: it answers plaintext clients.
  const http: Server =
    clientTls === null ? createServer(httpOptions, onRequest) : clientTls.createServer({ ...httpOptions, handshakeTimeout: config.limits.helloTimeoutMs }, onRequest);
  /** The socket admission counted for a request's socket (with TLS, the raw socket under it). */
  const admitted = (socket: Socket): Socket => clientTls?.admittedSocket(socket) ?? socket;
  // Every member's client URL (the book's, the --peers contacts', this one's): its hosts and origins are this member's too.
  let clientUrls: { readonly book: readonly unknown[]; readonly urls: readonly string[] } | null = null;
  const memberClientUrls = (): readonly string[] => {
    const book = members.members();
    if (clientUrls?.book !== book) {
      const ids = new Set([config.id, ...contacts.map((c) => c.id), ...book.map((m) => m.id)]);
      clientUrls = { book, urls: [...ids].flatMap((id) => members.clientUrl(id) ?? []) };
    }
    return clientUrls.urls;
  };
  const gate = new RequestGate({ listenHost: config.client.host, allowedHosts: config.allowedHosts ?? [], allowedOrigins: config.allowedOrigins ?? [], memberClientUrls });
  const admission = new Admission(
    { connectionsMax: fds.clientConnections, connectionsPerAddress: config.limits.connectionsPerAddress, firstRequestTimeoutMs: config.limits.helloTimeoutMs },
    logger,
  );
  const listener: NetServer = clientTls === null ? http : clientTls.front(http, (socket) => admission.admit(socket));
  if (clientTls === null) http.on('connection', (socket: Socket) => admission.admit(socket));
  http.on('request', (req: IncomingMessage) => admission.markUsed(admitted(req.socket)));
  logger.info({ event: 'fd-budget', openFileLimit: fds.limit, levelMaxOpenFiles: fds.levelFiles, clientConnections: fds.clientConnections }, 'file descriptors shared out');
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
  try {
    // With --client HOST:0 this member's URL is only known once bound.
    clientPort = await listen(listener, config.client.host, config.client.port);
  } catch (err) {
    stopTls();
    await veraNode.close();
    throw err;
  }
  veraNode.start();
  const st = veraNode.status();
  logger.info(
    {
      event: 'started',
      client: `${config.client.host}:${clientPort}`,
      clientTls: clientTls !== null,
      peerTls: peerFiles !== null,
      peer: transport === null ? null : `${transport.address.host}:${transport.address.port}`,
      dataDir: config.dataDir,
      members: [...st.config.voters, ...st.config.learners],
      joining: st.config.voters.length === 0,
      clusterId: transport?.clusterId ?? null,
    },
    'vera is serving',
  );

  let closing: Promise<void> | null = null;
  return {
    clientPort,
    node: veraNode,
    close: () =>
      (closing ??= (async () => {
        duties?.stop();
        disk.stop();
        shuttingDown = true;
        stopTls();
        // With TLS the https server never listened: closing it only stops its timers; the front listener is what stops accepting.
        const httpClosed = Promise.all([
          new Promise<void>((resolve) => http.close(() => resolve())),
          listener === http ? null : new Promise<void>((resolve) => listener.close(() => resolve())),
        ]);
        http.closeIdleConnections();
        for (const c of [...connections.values()]) c.close(CloseCode.shuttingDown, 'server shutting down');
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
          clientTls?.destroyAll();
        }, SHUTDOWN_GRACE_MS);
        await new Promise<void>((resolve) => {
          wss.close(() => resolve());
        });
        await httpClosed;
        clearTimeout(grace);
        await veraNode.close();
        logger.info({ event: 'stopped' }, 'vera stopped');
      })()),
  };
}

/** How long clients may take to answer the close, and HTTP requests in flight to finish, before their connections are cut at shutdown. */
const SHUTDOWN_GRACE_MS = 2000;

function memberList(node: VeraNode, directory: MemberDirectory): Array<{ id: string; clientUrl: string | null; voter: boolean }> {
  const { config } = node.status();
  return [...config.voters.map((id) => ({ id, voter: true })), ...config.learners.map((id) => ({ id, voter: false }))].map((m) => ({
    ...m,
    clientUrl: directory.clientUrl(m.id),
  }));
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

/**
 * Where the log goes: JSON lines on stdout, one per event (what log shippers and the
 * tests read), or, when stdout is a terminal, the same events made readable by
 * pino-pretty (in a worker thread, off the event loop).
 */
function logDestination(): DestinationStream | undefined {
  if (process.stdout.isTTY !== true) return undefined;
  return pino.transport({ target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } }) as DestinationStream;
}
