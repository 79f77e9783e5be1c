// What the client-facing parts of a server share: the member, its leader-only
// duties, limits and observability. One object per running server.

import type { Logger } from 'pino';
import { RaftError } from '../../raft/driver.js';
import type { NodeId } from '../../raft/types.js';
import type { ApplyOutcome, ApplyResult } from '../../statemachine/types.js';
import type { HibernationConfig, ServerLimits } from '../config.js';
import type { DiskGuard } from '../node/disk-guard.js';
import type { ExpiryQueue } from '../node/expiry.js';
import type { PluginPathGuard, PluginRoute } from '../../kit/plugin.js';
import type { ConnectionSeam, CoreOps, FamilyOp } from './plugin-part.js';
import type { Notifier } from './notifier.js';
import { NOT_PROPOSED, VeraError, type ProtocolExtensions, type ProtocolLimits } from '../../protocol/index.js';
import type { ServerMetrics } from '../node/server-metrics.js';
import type { VeraNode } from '../node/vera-node.js';
import type { Guard } from '../guard/access.js';

export interface SessionTimeouts {
  readonly min: number;
  readonly max: number;
  readonly default: number;
}

/** The protocol's limits with the server's own (config.ts) that requests are judged by. */
export type FrontEndLimits = ProtocolLimits &
  Pick<
    ServerLimits,
    | 'sessionsMax'
    | 'sessionsPerAddress'
    | 'watchesPerSession'
    | 'itemsPerSession'
    | 'bytesPerSession'
    | 'itemsPerList'
    | 'diskReserveBytes'
    | 'inflightPerConnection'
    | 'helloTimeoutMs'
  >;

/** A client connection as the rest of the server sees it. */
export interface AttachedConnection {
  /** Close because the session ended or moved; `reason` is sent in the close frame. */
  close(code: number, reason: string): void;
  /** Re-judges what the connection holds after an auth change (access.ts): watches no longer allowed are dropped and their owner told. */
  reviewAccess?(): void;
}

export interface FrontEnd {
  readonly node: VeraNode;
  /** The client ops the command families answer (all but hello, ping and get, which the connection does). */
  readonly ops: CoreOps;
  /** Ops the command families added to the protocol: how to check them, and who answers them. */
  readonly extensions: ProtocolExtensions;
  readonly familyOps: ReadonlyMap<string, FamilyOp>;
  /** HTTP endpoints and metrics the command families add. */
  readonly familyHttp: readonly PluginRoute[];
  readonly familyMetrics: ReadonlyArray<() => Promise<string>>;
  /** Where this member's client port listens, and whether it may do so with authentication off (exposure.ts). */
  readonly clientAddress: { readonly host: string };
  readonly insecure: boolean;
  /** /metrics answers only users with read on 'cluster' (when authentication is on): `--metrics-need-auth`. */
  readonly metricsNeedAuth: boolean;
  /** The families' rules over every access to a path (PluginServer.pathGuard; run by path-guard.ts). */
  readonly pathGuards: readonly PluginPathGuard[];
  /** What the families that keep sessions answer a connection about its session (PluginServer.connection). */
  readonly connectionSeam: ConnectionSeam;
  /** Which units hibernate when idle, or null (docs/hibernation.md). */
  readonly hibernation: HibernationConfig | null;
  readonly notifier: Notifier;
  readonly expiry: ExpiryQueue;
  /** Refuses requests that add data while the data disk is below its reserve. */
  readonly disk: DiskGuard;
  readonly limits: FrontEndLimits;
  readonly sessionTimeouts: SessionTimeouts;
  /** How long a linearizable read may wait for its read index. */
  readonly readTimeoutMs: number;
  readonly logger: Logger;
  readonly metrics: ServerMetrics;
  /** Authentication and the one permission check every request passes (access.ts). */
  readonly guard: Guard;
  isLeader(): boolean;
  /** Resolves once this node knows a leader (itself or another), or after `timeoutMs`. */
  awaitLeader(timeoutMs: number): Promise<void>;
  /** The client URL (`ws://host:port`) of a member, or null if unknown. */
  clientUrl(id: NodeId): string | null;
  /** The client URLs of the members that accept sessions now (hello's `members`; MemberDirectory.servingUrls). */
  servingUrls(): readonly string[];
  /** Sessions with a live connection on this node. */
  readonly connections: Map<string, AttachedConnection>;
  /** The command version each authenticated peer advertised in its handshake. */
  readonly peerCommandVersions: ReadonlyMap<NodeId, number>;
}

export { CloseCode } from '../../protocol/index.js';

/** The protocol error for anything thrown while serving a request. */
export function toVeraError(err: unknown, fe: FrontEnd): VeraError {
  if (err instanceof VeraError) return err;
  if (err instanceof RaftError) {
    switch (err.code) {
      case 'NOT_LEADER': {
        const url = err.leader === null ? null : fe.clientUrl(err.leader);
        return url === null
          ? new VeraError('NO_LEADER', 'this node is not the leader and the leader is unknown', { retryAfterMs: 200 })
          : new VeraError('NOT_LEADER', `this node is not the leader; connect to ${url}`, { leader: url });
      }
      case 'NO_LEADER':
        return new VeraError('NO_LEADER', err.message, { retryAfterMs: 200 });
      case 'UNAVAILABLE':
        // Refused before it was proposed: the client may send it again without risk (docs/protocol.md).
        return new VeraError('UNAVAILABLE', err.message, err.notProposed ? { retryAfterMs: 200, reason: NOT_PROPOSED } : { retryAfterMs: 200 });
      case 'TIMEOUT':
        return new VeraError('TIMEOUT', err.message);
    }
  }
  fe.logger.error({ event: 'internal-error', err }, 'unexpected error while serving a request');
  return new VeraError('INTERNAL', `internal error: ${err instanceof Error ? err.message : String(err)}`);
}

/** An apply result as a success value or a thrown protocol error. */
export function expectOk(outcome: ApplyOutcome): Extract<ApplyResult, { ok: true }> {
  const r = outcome.result;
  if (!r.ok) throw new VeraError(r.code, r.message);
  return r;
}

/** The error a follower gives to anything that needs the leader. */
export function notLeaderError(fe: FrontEnd): VeraError {
  const leader = fe.node.status().leader;
  const url = leader === null ? null : fe.clientUrl(leader);
  if (url === null) return new VeraError('NO_LEADER', 'no leader is known right now; retry shortly', { retryAfterMs: 200 });
  return new VeraError('NOT_LEADER', `this node is not the leader; connect to ${url}`, { leader: url });
}
