// The member directory at start: filled from the replicated address book, with a
// warning when --peers says otherwise (the book wins), and the admin endpoints'
// context built over it.
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { PeerTransport } from '../../raft/transport/peer-transport.js';
import type { VeraError } from '../../protocol/index.js';
import type { ServerConfig } from '../config.js';
import type { VeraNode } from '../node/vera-node.js';
import { authorizeOperator, DEFAULT_PROMOTE_MAX_LAG, MemberDirectory, peersFlagDisagreements, type AdminContext, type LeaderWatch } from './membership.js';
import { OperatorChallenges } from './operator-challenges.js';

export async function openDirectory(
  config: ServerConfig,
  node: VeraNode,
  transport: PeerTransport | null,
  /** Forgets a removed member's incarnation: it may come back with a new data directory once added again. */
  forget: (id: string) => void,
  /** This member's own client URL, once its port is bound. */
  selfUrl: () => string,
  secureClients: boolean,
  logger: Logger,
): Promise<MemberDirectory> {
  const directory = new MemberDirectory(config.id, config.peers, selfUrl, transport, forget, logger, secureClients);
  await directory.update(node.members());
  if (config.peers.length > 1) {
    const differences = peersFlagDisagreements(config.id, config.peers, node.members());
    if (differences.length > 0) {
      logger.warn(
        { event: 'peers-flag-disagrees', differences },
        `--peers disagrees with the cluster's replicated address book, which this member uses instead: ${differences.join('; ')}. ` +
          'Addresses change only through membership changes (vera member add/remove); start with --peers matching `vera member list` to silence this.',
      );
    }
  }
  return directory;
}

export interface AdminInputs {
  readonly config: ServerConfig;
  readonly node: VeraNode;
  readonly directory: MemberDirectory;
  readonly leaderWatch: LeaderWatch;
  readonly canGrow: boolean;
  /** The core gives up a transfer after one election timeout. */
  readonly electionTimeoutMs: number;
  readonly toError: (err: unknown) => VeraError;
  /** Judges an operator request that proved the cluster secret, or a user's with authentication on (guard/access.ts). */
  readonly authorizeRequest: (req: IncomingMessage, what: string, proveSecret: (req: IncomingMessage, what: string) => void, secretSet: boolean) => Promise<void>;
  readonly logger: Logger;
}

/** What the membership, leader-transfer and defrag endpoints are given. */
export function adminContext(a: AdminInputs): AdminContext {
  const challenges = new OperatorChallenges();
  return {
    node: a.node,
    directory: a.directory,
    leaderWatch: a.leaderWatch,
    secret: a.config.secret,
    canGrow: a.canGrow,
    promoteMaxLag: DEFAULT_PROMOTE_MAX_LAG,
    // Leave room for the new leader's first heartbeat after the core's one election timeout.
    transferTimeoutMs: 3 * a.electionTimeoutMs,
    toError: a.toError,
    logger: a.logger,
    defrag: () => a.node.stateMachine.compactAll(),
    authorize: (req, what, body) => a.authorizeRequest(req, what, (r, w) => authorizeOperator(a.config.secret, challenges, r, w, body), a.config.secret !== null),
    challenges,
  };
}
