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
  /** Forwards proposed and not yet applied here; past this the desk refuses (not proposed). */
  readonly maxInFlight: number;
  readonly onUnanswerable?: (to: NodeId, kind: string) => void;
}

/** How long a member's client should wait before retrying a write the desk refused for load. */
const RETRY_AFTER_MS = 200;

export class Desk {
  private inFlight = 0;

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
    if (this.inFlight >= this.opts.maxInFlight) {
      this.reply(from, { k: 'fwdErr', id: m.id, code: 'UNAVAILABLE', message: 'too many forwarded writes are waiting at the leader; retry shortly', notProposed: true, retryAfterMs: RETRY_AFTER_MS });
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
    const done = (): void => void this.inFlight--;
    result.then(done, done);
    this.reply(from, { k: 'fwdOk', id: m.id, index: place.index, term: place.term });
  }

  private reply(to: NodeId, m: Parameters<typeof encodeServiceMessage>[0]): void {
    // A lost answer is the member's case 5: it finds its entry by `r` or answers UNAVAILABLE at its deadline.
    if (!this.opts.send(to, encodeServiceMessage(m))) this.opts.onUnanswerable?.(to, m.k);
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
