// The leader side of forwarded writes: each `fwd` is gated, completed with this
// leader's clock and the request id, proposed once, and answered `fwdOk {index,
// term}` as soon as it has a place in the log, or `fwdErr` when it was refused
// before that (never in the log, so the member may send it again elsewhere). The
// member answers its client from its own apply, so the desk never waits for a commit.
// It takes only commands a member may forward (routes.ts): a command only the leader's
// duties propose is refused before proposing, changing nothing.
import { RaftError } from '../../raft/driver.js';
import type { NodeId } from '../../raft/types.js';
import { VeraError } from '../../protocol/errors.js';
import { CommandError } from '../../statemachine/family.js';
import type { ApplyOutcome } from '../../statemachine/types.js';
import type { ForwardEnvelope } from '../../families/commands.js';
import { encodeServiceMessage, type ForwardMessage, type ForwardRefusedMessage } from './codec.js';
import { forwardRefusal } from './routes.js';

/** What a leader's proposal of a forwarded body gives: its place in the log (null: refused) and its outcome. */
export interface PlacedProposal {
  readonly place: { readonly index: number; readonly term: number } | null;
  readonly result: Promise<ApplyOutcome>;
}

export interface DeskOptions {
  readonly send: (to: NodeId, payload: Uint8Array) => boolean;
  /** VeraNode.proposeForwarded: throws (or its result rejects, with no place) when the body is refused, `admit` included. */
  readonly propose: (body: Uint8Array, rid: string, admit: (envelope: ForwardEnvelope) => void) => PlacedProposal;
  /** Why a member may not forward this command, or null (routes.ts forwardRefusal by default). */
  readonly forwardRefusal?: (family: string, command: ForwardEnvelope['command']) => string | null;
  /** Forwards proposed and not yet applied here; past this the desk refuses (not proposed). Shared fairly among members. */
  readonly maxInFlight: number;
  /** Monotonic milliseconds (performance.now by default): how long a refused member counts as wanting its share. */
  readonly now?: () => number;
  /** An answer that could not be sent (`err`: the send threw). */
  readonly onUnanswerable?: (to: NodeId, kind: string, err?: unknown) => void;
}

/** How long a member's client should wait before retrying a write the desk refused for load. */
const RETRY_AFTER_MS = 200;

/**
 * A member refused for load counts as wanting its share this long (ms): longer than the
 * client library's longest backoff (1-2 s from the 6th retry, client/backoff.ts), so a
 * member whose clients retry is not forgotten between two of its tries.
 */
export const CONTENDING_MS = 5_000;

export class Desk {
  private inFlight = 0;
  /** Forwards in flight per member. */
  private readonly byMember = new Map<NodeId, number>();
  /** Members refused for load, and when last: they want a share even while they hold none. */
  private readonly refusedAt = new Map<NodeId, number>();

  /** Throws when the body's command is not one a member may forward: the leader's duties' commands are its own. */
  private readonly admit: (envelope: ForwardEnvelope) => void;

  constructor(private readonly opts: DeskOptions) {
    const refusal = opts.forwardRefusal ?? forwardRefusal;
    this.admit = (envelope) => {
      const why = refusal(envelope.family, envelope.command);
      if (why !== null) throw new VeraError('BAD_REQUEST', why);
    };
  }

  /** Forwards proposed and not yet applied. */
  get forwardsInFlight(): number {
    return this.inFlight;
  }

  onForward(from: NodeId, m: ForwardMessage): void {
    // A request id names the member that forwards it: one member cannot answer another's client.
    if (!m.rid.startsWith(`${from}/`)) {
      this.reply(from, { k: 'fwdErr', id: m.id, code: 'BAD_REQUEST', message: `a forward from ${from} must carry a request id of its own (${from}/...)`, notProposed: true });
      return;
    }
    const share = this.shareOf(from);
    if (this.inFlight >= this.opts.maxInFlight || this.heldBy(from) >= share) {
      this.refusedAt.set(from, this.now());
      this.reply(from, {
        k: 'fwdErr',
        id: m.id,
        code: 'UNAVAILABLE',
        message: `too many forwarded writes are waiting at the leader (${this.heldBy(from)} of ${from}'s, ${this.inFlight} in all; a member's share is ${share}); retry shortly`,
        notProposed: true,
        retryAfterMs: RETRY_AFTER_MS,
      });
      return;
    }
    let placed: PlacedProposal;
    try {
      placed = this.opts.propose(m.body, m.rid, this.admit);
    } catch (err) {
      this.reply(from, refusalOf(m.id, err));
      return;
    }
    const { place, result } = placed;
    if (place === null) {
      result.then(
        () => this.reply(from, refusalOf(m.id, new Error('a proposal without a place in the log was applied'))),
        (err: unknown) => this.reply(from, refusalOf(m.id, err)),
      );
      return;
    }
    this.inFlight++;
    this.byMember.set(from, this.heldBy(from) + 1);
    this.refusedAt.delete(from);
    const done = (): void => {
      this.inFlight--;
      const left = this.heldBy(from) - 1;
      if (left > 0) this.byMember.set(from, left);
      else this.byMember.delete(from);
    };
    result.then(done, done);
    this.reply(from, { k: 'fwdOk', id: m.id, index: place.index, term: place.term });
  }

  /** Forwards of `member` in flight here. */
  heldBy(member: NodeId): number {
    return this.byMember.get(member) ?? 0;
  }

  /**
   * What one member may hold: maxInFlight split evenly among the members that hold forwards
   * here or were refused lately, `member` included. A member alone may use it all; one that
   * floods it cannot keep another out, since the other's refusal shrinks the flooder's share.
   */
  private shareOf(member: NodeId): number {
    const now = this.now();
    const wanting = new Set<NodeId>([member, ...this.byMember.keys()]);
    for (const [m, at] of this.refusedAt) {
      if (now - at > CONTENDING_MS) this.refusedAt.delete(m);
      else wanting.add(m);
    }
    return Math.max(1, Math.floor(this.opts.maxInFlight / wanting.size));
  }

  private now(): number {
    return (this.opts.now ?? performance.now.bind(performance))();
  }

  /** Never throws. A lost answer is the member's case 5: it finds its entry by `r` or answers UNAVAILABLE at its deadline. */
  private reply(to: NodeId, m: Parameters<typeof encodeServiceMessage>[0]): void {
    try {
      if (!this.opts.send(to, encodeServiceMessage(m))) this.opts.onUnanswerable?.(to, m.k);
    } catch (err) {
      this.opts.onUnanswerable?.(to, m.k, err);
    }
  }
}

/** A refusal before proposing, as the member's client should see it; nothing reached the log. */
function refusalOf(id: number, err: unknown): ForwardRefusedMessage {
  if (err instanceof RaftError) {
    return { k: 'fwdErr', id, code: err.code, message: err.message, notProposed: true, ...(err.leader === null ? {} : { leader: err.leader }) };
  }
  if (err instanceof VeraError) {
    return { k: 'fwdErr', id, code: err.code, message: err.message, notProposed: true, ...(err.hints.retryAfterMs === undefined ? {} : { retryAfterMs: err.hints.retryAfterMs }) };
  }
  if (err instanceof CommandError) return { k: 'fwdErr', id, code: 'BAD_REQUEST', message: err.message, notProposed: true };
  return { k: 'fwdErr', id, code: 'INTERNAL', message: `the leader failed to propose a forwarded write: ${err instanceof Error ? err.message : String(err)}`, notProposed: true };
}
