// The peer service of a running member (docs/scale-out.md, step 8a): its forwarder and
// relay client on the member side, its desk and relay desk on the leader side, on the
// peer transport's service channel. The leader runs another member's relayed ops through
// runFamilyOp, as for its own connections: the same permission check, path guards and
// audit of admin acts. Until step 8b no client reaches it: followers refuse hello, and
// the forwarder is not attached to the node (VeraNode.propose on a follower still
// answers NOT_LEADER, so a family's HTTP write on a follower is refused as before).
import type { Logger } from 'pino';
import type { NodeId } from '../../raft/types.js';
import type { FrontEnd } from '../front/context.js';
import { runFamilyOp } from '../guard/access.js';
import { FORWARDING_SINCE } from '../node/vera-node.js';
import { VeraError } from '../../protocol/index.js';
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

/** The member's peer service on `channel`, not yet proposing for clients (the forwarder stays off the node until step 8b). */
export function startPeerService(fe: FrontEnd, channel: ServiceChannel, peerVersions: ReadonlyMap<NodeId, number>, logger: Logger): PeerService {
  const node: ForwardingNode = {
    id: fe.node.id,
    status: () => fe.node.status(),
    awaitEntry: (index, term, cancel) => fe.node.awaitEntry(index, term, cancel),
    proposeForwarded: (body, rid, admit) => fe.node.proposeForwarded(body, rid, admit),
    // Step 8b attaches the forwarder, when connections on followers make proposals there.
    setForwarder: () => undefined,
    get appliedIndex() {
      return fe.node.appliedIndex;
    },
    waitApplied: (index) => fe.node.waitApplied(index),
  };
  return new PeerService({ node, channel, peerVersions, minLeaderVersion: FORWARDING_SINCE, logger, relayRunner: familyOpRunner(fe) });
}
