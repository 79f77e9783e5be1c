// The front end every client-facing part shares (context.ts FrontEnd), built once the
// member, its directory and the families' server parts exist: limits, the permission
// guard, the notifier that reads lists through the path guards, the leader's session
// clocks.
import type { Logger } from 'pino';
import { watchesOf } from '../../families/watches/queries.js';
import { DEFAULT_LIMITS } from '../../protocol/index.js';
import type { ServerConfig } from '../config.js';
import { Guard, incidentLogLine } from '../guard/access.js';
import { childrenOf, readListPages } from '../guard/path-guard.js';
import type { MemberDirectory, LeaderWatch } from '../admin/membership.js';
import type { DiskGuard } from '../node/disk-guard.js';
import type { ExpiryQueue } from '../node/expiry.js';
import type { ServerMetrics } from '../node/server-metrics.js';
import type { VeraNode } from '../node/vera-node.js';
import type { AttachedConnection, FrontEnd } from './context.js';
import type { PluginParts } from './plugin-part.js';
import { DEFAULT_NOTIFIER_LIMITS, Notifier } from './notifier.js';

export interface FrontEndInputs {
  readonly config: ServerConfig;
  readonly node: VeraNode;
  readonly parts: PluginParts;
  readonly directory: MemberDirectory;
  readonly leaderWatch: LeaderWatch;
  readonly disk: DiskGuard;
  readonly expiry: ExpiryQueue;
  readonly connections: Map<string, AttachedConnection>;
  readonly peerCommandVersions: ReadonlyMap<string, number>;
  readonly metrics: ServerMetrics;
  readonly logger: Logger;
}

export function buildFrontEnd(i: FrontEndInputs): FrontEnd {
  const { config, node, logger } = i;
  // Items per reply or resync frame: half the frame limit (room for the encoding), at most the default.
  const limits = { ...DEFAULT_LIMITS, ...config.limits, replyBytes: Math.min(DEFAULT_LIMITS.replyBytes, Math.floor(config.limits.frameBytes / 2)) };
  const guard = new Guard(node, config.principalLimits);
  guard.onIncident((incident) => {
    const line = incidentLogLine(incident.kind);
    logger[line.level]({ event: line.event, principal: incident.principal, remote: incident.remote, what: incident.what }, line.message);
  });
  const front: FrontEnd = {
    node,
    ops: i.parts.ops,
    extensions: i.parts.extensions,
    familyOps: i.parts.familyOps,
    familyHttp: i.parts.http,
    familyMetrics: i.parts.metrics,
    pathGuards: i.parts.pathGuards,
    connectionSeam: i.parts.connection,
    clientAddress: config.client,
    insecure: config.insecure ?? false,
    metricsNeedAuth: config.metricsNeedAuth ?? false,
    hibernation: config.hibernation ?? null,
    disk: i.disk,
    notifier: new Notifier(
      {
        watchesOf: (session) => watchesOf(node.stateMachine, session),
        // A resync walks and reads lists as any listing and read does: wherever they are held (a
        // hibernated list from its cold file, never sent empty or left out), through the path guards.
        children: (path) => childrenOf(front, path),
        readListPages: (path, pageBytes, onPage) => readListPages(front, path, pageBytes, onPage),
      },
      node.events,
      { ...DEFAULT_NOTIFIER_LIMITS, resyncFrameBytes: limits.replyBytes },
      (err) => logger.error({ event: 'resync-failed', err: String(err) }, 'could not read lists for a resync'),
    ),
    expiry: i.expiry,
    limits,
    sessionTimeouts: config.sessionTimeout,
    readTimeoutMs: 5000,
    logger,
    metrics: i.metrics,
    isLeader: () => node.status().role === 'leader',
    awaitLeader: async (timeoutMs) => {
      if (node.status().leader !== null) return;
      await i.leaderWatch.waitFor((s) => s.leader !== null, timeoutMs);
    },
    clientUrl: (id) => i.directory.clientUrl(id),
    servingUrls: () => i.directory.servingUrls(node.status().leader),
    connections: i.connections,
    peerCommandVersions: i.peerCommandVersions,
    guard,
  };
  return front;
}
