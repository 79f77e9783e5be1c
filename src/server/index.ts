// Starts a Vera member: its data directory and Raft node, the peer transport
// (whenever a cluster secret is set, so a single member can grow), and the
// client port (WebSocket at /v1/connect plus HTTP). Which members exist and where
// they listen comes from the replicated address book (MemberDirectory); the
// --peers list only seeds a new store, or introduces a joining member.

import { pino, type DestinationStream, type Logger } from 'pino';
import type { AnyFamily } from '../statemachine/family.js';
import { auth } from '../families/auth/index.js';
import { FAMILIES } from '../families/registry.js';
import { adminContext, openDirectory } from './admin/open-directory.js';
import { LeaderWatch, wsUrl, type MemberDirectory } from './admin/membership.js';
import type { ServerConfig } from './config.js';
import { toVeraError, type AttachedConnection, type FrontEnd } from './front/context.js';
import { loadPlugins, type PluginParts } from './front/plugin-part.js';
import { fdBudget, openFileLimit } from './front/fd-budget.js';
import { buildFrontEnd } from './front/front-end.js';
import { afterSnapshotInstalled } from './front/snapshot-installed.js';
import { serverMetrics } from './front/front-metrics.js';
import { DEFAULT_DUTY_TIMINGS, LeaderDuties } from './front/leader-duties.js';
import { authorizeOperatorRequest } from './guard/access.js';
import { exposureProblem } from './guard/exposure.js';
import { openPortTls, peerTls } from './guard/tls.js';
import { openClientPort } from './http/client-port.js';
import { DiskGuard } from './node/disk-guard.js';
import { ExpiryQueue } from './node/expiry.js';
import { openMember } from './node/open-member.js';
import type { PeerService } from './peer-service/service.js';
import { startPeerService } from './peer-service/wiring.js';
import { startPeerLink } from './node/peer-link.js';
import { DEFAULT_RAFT_TIMING, type RaftTiming, type VeraNode } from './node/vera-node.js';

export interface RunningServer {
  /** The client port actually bound (useful with port 0). */
  readonly clientPort: number;
  readonly node: VeraNode;
  /** The peer service on the transport's service channel (null without a cluster secret: no peers). */
  readonly peerService: PeerService | null;
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

/**
 * The composition root: each step builds one part from the ones before it, in
 * dependency order, and a step that fails undoes the ones before it (newest first).
 * The member's hooks fire from its start, before the front end exists: they reach
 * the later parts through `late`.
 */
export async function startServer(config: ServerConfig, options: StartOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? pino({ level: config.logLevel, base: { node: config.id } }, logDestination());
  const undo = new Undo();
  try {
    // Certificates first: a member that cannot serve them should not open its store.
    const tls = openPortTls(config, logger, options.tlsReloadCheckMs);
    undo.push(() => tls.close());
    const late: { front?: FrontEnd; duties?: LeaderDuties; directory?: MemberDirectory; appliedHooks: PluginParts['appliedHooks']; node?: VeraNode; service?: PeerService } = { appliedHooks: [] };
    const connections = new Map<string, AttachedConnection>();
    const peerCommandVersions = new Map<string, number>();
    const fds = fdBudget(openFileLimit(), config.limits.connectionsMax);
    const leaderWatch = new LeaderWatch();
    const metrics = serverMetrics(() => late.node, () => late.front, connections);

    // The families' plugins load (module reads and compiles) while the store opens (LevelDB on the
    // thread pool), not after it: a restarted member serves sooner. Awaited below, after the open.
    const partsLoading = loadPlugins(options.families ?? FAMILIES);
    partsLoading.catch(() => undefined);
    const timing = options.timing ?? DEFAULT_RAFT_TIMING;
    const node = await openMember(config, timing, fds.levelFiles, logger, metrics, {
      onApplied: (outcome, recorded) => {
        if (late.front === undefined) return;
        late.front.notifier.deliver(recorded);
        for (const hook of late.appliedHooks) hook(outcome);
      },
      onRoleChanged: (s) => {
        late.duties?.setLeading(s.role === 'leader');
        leaderWatch.notify(s);
      },
      onMembersChanged: (members) => void late.directory?.update(members),
      onSnapshotInstalled: () => {
        if (late.front !== undefined) afterSnapshotInstalled(late.front);
      },
    });
    late.node = node;
    undo.push(() => node.close());
    refuseExposure(config, node, logger);

    // Service payloads reach the peer service once it is built (after the front end); before that none can
    // concern this member: it has forwarded nothing, and it leads (and takes forwards) only once started.
    const serviceEnd = {
      onService: (from: string, payload: Uint8Array) => late.service?.onService(from, payload),
      onUnsent: (to: string, payloads: readonly Uint8Array[]) => late.service?.onUnsent(to, payloads),
    };
    const link = await startPeerLink(config, node, tls.peer === null ? null : peerTls(tls.peer), logger, peerCommandVersions, serviceEnd);
    let clientPort = config.client.port;
    // Members advertise wss:// when this one serves TLS: a cluster's client ports are all TLS or none.
    const selfUrl = (): string => wsUrl(config.client.host, clientPort, tls.client !== null);
    const directory = await openDirectory(config, node, link?.transport ?? null, (id) => link?.incarnations.forget(id), selfUrl, tls.client !== null, logger);
    late.directory = directory;

    const disk = new DiskGuard(config.dataDir, config.limits.diskReserveBytes, logger);
    disk.start();
    undo.push(() => disk.stop());
    const parts = await partsLoading;
    late.appliedHooks = parts.appliedHooks;
    const expiry = new ExpiryQueue(() => performance.now(), DEFAULT_DUTY_TIMINGS['session-expiry']!);
    const front = buildFrontEnd({ config, node, parts, directory, leaderWatch, disk, expiry, connections, peerCommandVersions, metrics, logger });
    late.front = front;
    // The families' instances (kit plugins) serve this member from here on; they let go of it at close.
    parts.bind(front);
    undo.push(() => parts.close());
    node.setProposalGate((command, version) => parts.versionGate('family' in command ? `${command.family}.${command.op}` : command.op, version));
    if (link !== null) {
      const service = startPeerService(front, link.transport, peerCommandVersions, logger);
      late.service = service;
      undo.push(() => service.close());
    }
    const duties = new LeaderDuties(front, parts.duties, DEFAULT_DUTY_TIMINGS);
    late.duties = duties;
    undo.push(() => duties.stop());

    const admin = adminContext({
      config,
      node,
      directory,
      leaderWatch,
      canGrow: link !== null,
      electionTimeoutMs: timing.electionTicks * timing.tickMs,
      toError: (err) => toVeraError(err, front),
      authorizeRequest: (req, what, proveSecret, secretSet) => authorizeOperatorRequest(front.guard, req, what, proveSecret, secretSet),
      logger,
    });
    logger.info({ event: 'fd-budget', openFileLimit: fds.limit, levelMaxOpenFiles: fds.levelFiles, clientConnections: fds.clientConnections }, 'file descriptors shared out');
    const port = await openClientPort({
      config,
      front,
      routes: { members: () => memberList(node, directory), admin },
      tls: tls.client,
      fds,
      memberClientUrls: memberClientUrls(config, directory),
      logger,
    });
    clientPort = port.port;
    node.start();
    logStarted(config, node, clientPort, tls.client !== null, tls.peer !== null, link?.transport ?? null, logger);
    // Off the start path: a restarted member first catches up (issue 32); a scrape before then loads them itself.
    // Cleared at close: a member closed sooner must not register them on its dead registry.
    const processMetricsTimer = setTimeout(() => metrics.collectProcessMetrics(), PROCESS_METRICS_DELAY_MS).unref();

    let closing: Promise<void> | null = null;
    return {
      clientPort,
      node,
      peerService: late.service ?? null,
      close: () =>
        (closing ??= (async () => {
          clearTimeout(processMetricsTimer);
          duties.stop();
          late.service?.close();
          parts.close();
          // What the parts answered at close (the journal's waiting claims: UNAVAILABLE) goes out before the connections close.
          await new Promise<void>((resolve) => setImmediate(resolve));
          disk.stop();
          tls.close();
          await port.shutdown();
          await node.close();
          logger.info({ event: 'stopped' }, 'vera stopped');
        })()),
    };
  } catch (err) {
    await undo.run();
    throw err;
  }
}

/** What a failed start undoes: the steps already taken, newest first. */
class Undo {
  private readonly steps: Array<() => void | Promise<void>> = [];

  push(step: () => void | Promise<void>): void {
    this.steps.push(step);
  }

  async run(): Promise<void> {
    for (const step of this.steps.reverse()) await step();
  }
}

/** A client port off loopback needs authentication on (exposure.ts): refused before anything listens. */
function refuseExposure(config: ServerConfig, node: VeraNode, logger: Logger): void {
  const exposed = exposureProblem(config, node.stateMachine.stateOf(auth).enabled);
  if (exposed === null) return;
  logger.error({ event: 'exposure-refused', client: `${config.client.host}:${config.client.port}` }, exposed);
  throw new Error(exposed);
}

/** How long after it serves a member adds the process and runtime metrics (ServerMetrics.collectProcessMetrics). */
export const PROCESS_METRICS_DELAY_MS = 2_000;

/** Every member's client URL (the book's, the --peers contacts', this one's), worked out again only when the book changes. */
function memberClientUrls(config: ServerConfig, directory: MemberDirectory): () => readonly string[] {
  let cached: { readonly book: readonly unknown[]; readonly urls: readonly string[] } | null = null;
  return () => {
    const book = directory.members();
    if (cached?.book !== book) {
      const ids = new Set([config.id, ...config.peers.map((c) => c.id), ...book.map((m) => m.id)]);
      cached = { book, urls: [...ids].flatMap((id) => directory.clientUrl(id) ?? []) };
    }
    return cached.urls;
  };
}

function logStarted(config: ServerConfig, node: VeraNode, clientPort: number, clientTls: boolean, peerTls: boolean, transport: { readonly address: { host: string; port: number }; readonly clusterId: string | null } | null, logger: Logger): void {
  const st = node.status();
  logger.info(
    {
      event: 'started',
      client: `${config.client.host}:${clientPort}`,
      clientTls,
      peerTls,
      peer: transport === null ? null : `${transport.address.host}:${transport.address.port}`,
      dataDir: config.dataDir,
      members: [...st.config.voters, ...st.config.learners],
      joining: st.config.voters.length === 0,
      clusterId: transport?.clusterId ?? null,
    },
    'vera is serving',
  );
}

function memberList(node: VeraNode, directory: MemberDirectory): Array<{ id: string; clientUrl: string | null; voter: boolean }> {
  const { config } = node.status();
  return [...config.voters.map((id) => ({ id, voter: true })), ...config.learners.map((id) => ({ id, voter: false }))].map((m) => ({
    ...m,
    clientUrl: directory.clientUrl(m.id),
  }));
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
