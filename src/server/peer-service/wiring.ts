// The peer service of a running member (docs/scale-out.md, step 8a): its forwarder and
// relay client on the member side, its desk and relay desk on the leader side, on the
// peer transport's service channel. The leader runs another member's relayed ops through
// runFamilyOp, as for its own connections: the same permission check, path guards and
// audit of admin acts. From step 8b the forwarder is attached to the node (a client's
// proposal on a member that does not lead is forwarded, from command version 9: the
// proposal gate keeps it off below), and the session liveness runs on the same channel.
import type { Logger } from 'pino';
import type { NodeId } from '../../raft/types.js';
import { CloseCode, type FrontEnd } from '../front/context.js';
import { runFamilyOp } from '../guard/access.js';
import { FORWARDING_SINCE } from '../node/vera-node.js';
import { VeraError } from '../../protocol/index.js';
import { LivenessWiring } from './liveness-wiring.js';
import { PeerService, type ForwardingNode, type RelayRunner, type ServiceChannel } from './service.js';

/** What a relayed op runs with on the leader: this member's family ops, run as the caller by runFamilyOp. */
export function familyOpRunner(fe: FrontEnd): RelayRunner {
  return {
    ops: fe.familyOps,
    limits: fe.limits,
    sessionLive: (session) => fe.connectionSeam.session(session) !== undefined,
    run: (name, request, caller) => {
      const op = fe.familyOps.get(name);
      if (op === undefined) return Promise.reject(new VeraError('NOT_FOUND', `no command family answers ${name}`));
      return runFamilyOp(fe, op, request, { principal: caller.principal, remote: caller.remote, session: caller.session, frameBytes: caller.frameBytes, what: `${name} (relayed)` });
    },
  };
}

/** The member's peer service on `channel`; its forwarder takes the node's proposals made while another member leads. */
export function startPeerService(fe: FrontEnd, channel: ServiceChannel, peerVersions: ReadonlyMap<NodeId, number>, logger: Logger): PeerService {
  const node: ForwardingNode = {
    id: fe.node.id,
    status: () => fe.node.status(),
    awaitEntry: (index, term, cancel) => fe.node.awaitEntry(index, term, cancel),
    proposeForwarded: (body, rid, admit) => fe.node.proposeForwarded(body, rid, admit),
    // Duties propose through proposeAsLeader (step 8a), which never forwards: only clients' proposals reach it.
    setForwarder: (forwarder) => fe.node.setForwarder(forwarder),
    get appliedIndex() {
      return fe.node.appliedIndex;
    },
    waitApplied: (index) => fe.node.waitApplied(index),
  };
  return new PeerService({ node, channel, peerVersions, minLeaderVersion: FORWARDING_SINCE, logger, relayRunner: familyOpRunner(fe) });
}

/**
 * Session liveness on this member (liveness-wiring.ts), on `service`'s channel: batches of the
 * sessions held here to the leader, the leader's clocks (the session-expiry duty's), 4009 for
 * connections whose sessions go unconfirmed. The front end's connections use it from here on.
 */
export function startLiveness(fe: FrontEnd, service: PeerService, channel: ServiceChannel, logger: Logger): LivenessWiring {
  const seam = fe.connectionSeam;
  const wiring = new LivenessWiring({
    selfId: fe.node.id,
    status: () => fe.node.status(),
    channel,
    expiry: fe.expiry,
    holderOf: (session) => {
      const info = seam.session(session);
      return info === undefined ? undefined : (info.member ?? null);
    },
    liveSessions: () => liveSessionTimeouts(fe),
    acknowledge: (session, index) => fe.notifier.acknowledge(session, index),
    confirmLeadership: () => fe.node.linearizableBarrier(fe.readTimeoutMs),
    busy: () => fe.node.pressure.over,
    sendAway: (session) => {
      const connection = fe.connections.get(session);
      if (connection === undefined) return;
      fe.connections.delete(session);
      fe.notifier.detach(session);
      connection.close(CloseCode.leaderUnreachable, 'no leader confirmed this session lately; resume it on another member');
    },
    logger,
  });
  service.liveness = wiring;
  fe.peer = { relay: service.relay, liveness: wiring.member };
  wiring.start();
  return wiring;
}

function* liveSessionTimeouts(fe: FrontEnd): Iterable<readonly [string, number]> {
  for (const session of fe.expiry.sessions()) {
    const info = fe.connectionSeam.session(session);
    if (info !== undefined) yield [session, info.timeoutMs];
  }
}
