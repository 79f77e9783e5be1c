// The member's peer transport, started whenever a cluster secret is set (so a single
// member can grow): authenticated links to the other members, their incarnations
// remembered in the store, and a crashed leader's refused connections turned into an
// election at once rather than after the timeout.
import type { Logger } from 'pino';
import { COMMAND_VERSION } from '../../families/registry.js';
import { IncarnationGuard } from '../../raft/transport/auth.js';
import { PeerTransport } from '../../raft/transport/peer-transport.js';
import type { Message } from '../../raft/types.js';
import type { ServerConfig } from '../config.js';
import type { PeerTls } from '../../raft/transport/shared.js';
import { FORWARDING_SINCE, type VeraNode } from './vera-node.js';

/** Where the transport's service channel delivers (PeerService.onService, onUnsent). */
export interface ServiceEnd {
  onService(from: string, payload: Uint8Array): void;
  onUnsent(to: string, payloads: readonly Uint8Array[]): void;
}

export interface PeerLink {
  readonly transport: PeerTransport;
  readonly incarnations: IncarnationGuard;
}

/** Null without a cluster secret: the member then has no peers and cannot grow. */
export async function startPeerLink(
  config: ServerConfig,
  node: VeraNode,
  /** The peer port's TLS (guard/tls.ts peerTls), or null for plain links. */
  tls: PeerTls | null,
  logger: Logger,
  /** The command version each authenticated peer advertised (see families/cluster/versions.ts). */
  peerCommandVersions: Map<string, number>,
  /** The peer service (peer-service/), built after the link: what its channel carries goes there. */
  service?: ServiceEnd,
): Promise<PeerLink | null> {
  if (config.secret === null) return null;
  const incarnations = new IncarnationGuard(
    await node.loadPeerIncarnations(),
    (known) => node.savePeerIncarnations(known),
    (err) => logger.error({ event: 'incarnation-save-failed', err: String(err) }, 'could not save a peer incarnation'),
    (peer) => node.members().some((m) => m.id === peer),
  );
  const transport = new PeerTransport({
    selfId: config.id,
    listen: config.peer,
    peers: [],
    secret: config.secret,
    clusterId: node.identity.clusterId,
    onClusterIdLearned: (id) => void node.rememberClusterId(id).catch((err: unknown) => logger.error({ event: 'cluster-id-save-failed', err: String(err) }, 'could not save the cluster id')),
    incarnation: node.identity.incarnation,
    checkPeerIncarnation: (peer, incarnation) => incarnations.check(peer, incarnation),
    commandVersion: COMMAND_VERSION,
    notePeerCommandVersion: (peer, version) => peerCommandVersions.set(peer, version),
    onMessage: (m: Message) => node.step(m),
    currentTerm: () => node.status().term,
    // A crashed leader's port refuses connections at once: elect a new one without waiting out the timeout.
    onPeerRefused: (peer) => {
      const st = node.status();
      if (st.role === 'follower' && st.leader === peer) {
        logger.info({ event: 'leader-unreachable', peer }, `leader ${peer} refuses connections (its process is gone): electing a new leader now`);
      }
      node.peerProcessGone(peer);
    },
    logger,
    ...(tls === null ? {} : { tls }),
    ...(service === undefined
      ? {}
      : {
          // Service payloads go only to peers advertising the version whose entries carry a request id.
          serviceMinCommandVersion: FORWARDING_SINCE,
          onService: (from: string, payload: Uint8Array) => service.onService(from, payload),
          onServiceUnsent: (to: string, payloads: Uint8Array[]) => service.onUnsent(to, payloads),
        }),
  });
  await transport.start();
  node.attachTransport(transport);
  return { transport, incarnations };
}
