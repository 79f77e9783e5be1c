// The peer service of one member: the forwarder and the relay client (member side),
// the desk and the relay desk (leader side) on the peer transport's service channel.
// It decodes each payload and hands it to the part it is for; a payload that does
// not decode drops the link it came on (onService).
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { NodeId, Status } from '../../raft/types.js';
import type { ApplyOutcome } from '../../statemachine/types.js';
import type { ForwardEnvelope } from '../../families/commands.js';
import { BadServiceFields, decodeServiceMessage, encodeServiceMessage, type ServiceMessage } from './codec.js';
import { Desk, type PlacedProposal } from './desk.js';
import { Forwarder } from './forwarder.js';
import { DEFAULT_RELAY_DEADLINE_MS, RelayClient, RelayDesk, type RelayDeskOptions } from './relay.js';
import { DEFAULT_LIMITS } from '../../protocol/index.js';
import { maxServicePayloadBytes } from '../../raft/transport/codec.js';
import { DEFAULT_PEER_LIMITS } from '../../raft/transport/peer-transport.js';
import type { ProposalForwarder } from '../node/vera-node.js';

/** What the service needs of the member (VeraNode). */
export interface ForwardingNode {
  readonly id: NodeId;
  status(): Status;
  awaitEntry(index: number, term: number, cancel?: AbortSignal): Promise<ApplyOutcome>;
  proposeForwarded(body: Uint8Array, rid: string, admit: (envelope: ForwardEnvelope) => void): PlacedProposal;
  setForwarder(forwarder: ProposalForwarder | null): void;
  readonly appliedIndex: number;
  waitApplied(index: number, cancel?: AbortSignal): Promise<void>;
}

/** What the leader needs to run another member's relayed ops (the front end's, from step 8 of docs/scale-out.md). */
export type RelayRunner = Pick<RelayDeskOptions, 'ops' | 'limits' | 'sessionLive' | 'sessionMember' | 'run'>;

/** The peer transport's service channel. */
export interface ServiceChannel {
  sendService(to: NodeId, payload: Uint8Array): boolean;
}

export interface PeerServiceOptions {
  readonly node: ForwardingNode;
  readonly channel: ServiceChannel;
  /** The command version each authenticated peer advertised. */
  readonly peerVersions: ReadonlyMap<NodeId, number>;
  /** Forwards go only to a leader advertising at least this (VeraNode's FORWARDING_SINCE). */
  readonly minLeaderVersion: number;
  readonly logger: Logger;
  /** The peer transport's limits.maxFrameBytes (default DEFAULT_PEER_LIMITS'): what one service payload may be. */
  readonly maxFrameBytes?: number;
  /** A forward's deadline (default 5 s, the read timeout of docs/scale-out.md). */
  readonly deadlineMs?: number;
  /** Forwards the desk holds at once (default 16,384, as the write pressure bound). */
  readonly maxForwardsInFlight?: number;
  /** Runs relayed ops here while this member leads; absent, every relayed op is refused (not run). */
  readonly relayRunner?: RelayRunner;
  /** A relayed op's deadline beyond the wait it asks for (default DEFAULT_RELAY_DEADLINE_MS, 5 s). */
  readonly relayDeadlineMs?: number;
  /** Relayed ops this member has waiting at the leader at once (default 4,096). */
  readonly maxRelaysInFlight?: number;
  /** Relayed ops one member may have running at the leader at once (default 1,024). */
  readonly maxRelaysPerMember?: number;
}

/** Until a runner is given (step 8), the leader runs no relayed op: each is refused before running. */
const NO_RELAYED_OPS: RelayRunner = {
  ops: new Map(),
  limits: DEFAULT_LIMITS,
  sessionLive: () => false,
  run: () => Promise.reject(new Error('this member runs no relayed ops')),
};

export class PeerService {
  readonly forwarder: Forwarder;
  readonly desk: Desk;
  readonly relay: RelayClient;
  readonly relayDesk: RelayDesk;
  private readonly logger: Logger;
  private readonly channel: ServiceChannel;
  private readonly node: ForwardingNode;

  constructor(opts: PeerServiceOptions) {
    const { node, channel, logger } = opts;
    this.logger = logger;
    this.channel = channel;
    this.node = node;
    const maxPayloadBytes = maxServicePayloadBytes(opts.maxFrameBytes ?? DEFAULT_PEER_LIMITS.maxFrameBytes);
    const unanswered = (what: string) => (to: NodeId, kind: string, err?: unknown): void =>
      logger.warn(
        { event: 'peer-service.unanswered', peer: to, kind, ...(err === undefined ? {} : { err: err instanceof Error ? err.message : String(err) }) },
        `could not send a ${kind} to ${to}; it settles the ${what} by its deadline`,
      );
    this.forwarder = new Forwarder({
      selfId: node.id,
      processTag: randomBytes(6).toString('base64url'),
      send: (to, payload) => channel.sendService(to, payload),
      maxPayloadBytes,
      peerVersion: (peer) => opts.peerVersions.get(peer),
      minLeaderVersion: opts.minLeaderVersion,
      awaitEntry: (index, term, cancel) => node.awaitEntry(index, term, cancel),
      currentLeader: () => node.status().leader,
      deadlineMs: opts.deadlineMs ?? 5000,
      after: (ms, run) => {
        const timer = setTimeout(run, ms);
        return () => clearTimeout(timer);
      },
    });
    this.desk = new Desk({
      send: (to, payload) => channel.sendService(to, payload),
      propose: (body, rid, admit) => node.proposeForwarded(body, rid, admit),
      maxInFlight: opts.maxForwardsInFlight ?? 16_384,
      onUnanswerable: unanswered('forward'),
    });
    const after = (ms: number, run: () => void): (() => void) => {
      const timer = setTimeout(run, ms);
      return () => clearTimeout(timer);
    };
    this.relay = new RelayClient({
      send: (to, payload) => channel.sendService(to, payload),
      maxPayloadBytes,
      currentLeader: () => node.status().leader,
      waitApplied: (index, cancel) => node.waitApplied(index, cancel),
      maxInFlight: opts.maxRelaysInFlight ?? 4_096,
      deadlineMs: opts.relayDeadlineMs ?? DEFAULT_RELAY_DEADLINE_MS,
      after,
    });
    this.relayDesk = new RelayDesk({
      send: (to, payload) => channel.sendService(to, payload),
      maxPayloadBytes,
      leading: () => node.status().role === 'leader',
      leaderHint: () => node.status().leader,
      appliedIndex: () => node.appliedIndex,
      ...(opts.relayRunner ?? NO_RELAYED_OPS),
      maxPerMember: opts.maxRelaysPerMember ?? 1_024,
      onUnanswerable: unanswered('relayed op'),
    });
    node.setForwarder(this.forwarder);
  }

  /**
   * PeerTransport's onService. A payload that cannot be read, or names a kind this member
   * does not know, throws its PeerProtocolError, which makes the transport drop the link it
   * came on, as for a malformed Raft message (docs/scale-out.md "Peer messages"). A known
   * kind with fields that do not check keeps the link (it also carries Raft traffic, and a
   * client's request must never cost it): a request is refused under its id, an answer is
   * ignored (its request settles by its deadline).
   */
  onService(from: NodeId, payload: Uint8Array): void {
    let m: ServiceMessage;
    try {
      m = decodeServiceMessage(payload);
    } catch (err) {
      if (err instanceof BadServiceFields) return this.badFields(from, err);
      this.logger.warn({ event: 'peer-service.badMessage', peer: from, err: err instanceof Error ? err.message : String(err) }, `a malformed service message from ${from}: dropping its link`);
      throw err;
    }
    switch (m.k) {
      case 'fwd':
        return this.desk.onForward(from, m);
      case 'fwdOk':
      case 'fwdErr':
        return this.forwarder.onAnswer(from, m);
      case 'op':
        return this.relayDesk.onOp(from, m);
      case 'opOk':
      case 'opErr':
        return this.relay.onAnswer(from, m);
    }
  }

  private badFields(from: NodeId, err: BadServiceFields): void {
    this.logger.warn({ event: 'peer-service.badFields', peer: from, kind: err.kind, err: err.message }, `a ${err.kind} from ${from} with fields that do not check: ${err.message}`);
    if (err.id === null) return;
    const message = `the ${err.kind} did not check at the leader: ${err.message}`;
    const answer: ServiceMessage | null =
      err.kind === 'fwd'
        ? { k: 'fwdErr', id: err.id, code: 'BAD_REQUEST', message, notProposed: true }
        : err.kind === 'op'
          ? { k: 'opErr', id: err.id, code: 'BAD_REQUEST', message, notRun: true, index: this.node.appliedIndex }
          : null;
    if (answer === null) return;
    try {
      this.channel.sendService(from, encodeServiceMessage(answer));
    } catch {
      // A short answer always fits; if not, the request settles by its deadline.
    }
  }

  /** PeerTransport's onServiceUnsent. */
  onUnsent(to: NodeId, payloads: readonly Uint8Array[]): void {
    this.forwarder.onUnsent(to, payloads);
    this.relay.onUnsent(to, payloads);
  }

  close(): void {
    this.forwarder.close();
    this.relay.close();
  }
}
