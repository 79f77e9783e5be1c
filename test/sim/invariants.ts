// Raft's safety properties (paper figure 3, plus the durability and read rules
// of the thesis), checked incrementally as a simulation observes events. The
// checker knows nothing about the simulator or the core: it is fed a history
// of observations, so the mutation tests can feed it handcrafted bad histories.
//
// Nothing here copies a log. Log matching uses a registry of every (index, term)
// ever seen with the term of the entry before it: if each (index, term) always
// comes with the same content and the same previous term, then by induction two
// logs that agree at (index, term) agree on everything before it.
//
// Compaction: a log holds nothing below its start (its snapshot index). What was
// compacted had been applied, so it lives on in the state machine, which is
// checked on its own: every state machine state reached at an index (by applying
// entries or by installing a snapshot) is recorded by digest, and all must agree.
// Log-based checks therefore look only at the indexes a log still holds, plus the
// fact that a log never starts beyond what its node's state machine has applied.

import type { Entry, HardState, NodeId, ReadState } from '../../src/raft/types.js';
import { entryContentHash } from './hash.js';

export type InvariantName =
  /** At most one leader per term, over the whole run. */
  | 'electionSafety'
  /** Same index and term means same content and same history before it; terms never decrease along a log. */
  | 'logMatching'
  /** Every committed entry is in the log of every leader of a later term. */
  | 'leaderCompleteness'
  /** No two nodes apply different entries at one index. */
  | 'stateMachineSafety'
  /** A node applies indexes in order, each once, with no gaps (its state machine is durable); its applied index never goes down. */
  | 'applyOrder'
  /** A snapshot is installed only above the node's commit index. */
  | 'snapshotSafety'
  /** Every acknowledged proposal is in the log of every later leader. */
  | 'acknowledgedWriteLost'
  /** A node's commit index never decreases, and never restarts below what it made durable. */
  | 'commitMonotonic'
  /** A node votes for at most one candidate per term, and its durable term never decreases. */
  | 'voteSafety'
  /** A ReadIndex answer is at least the commit index known anywhere when the read was requested. */
  | 'readLinearizable'
  /** A read under a leader lease: no leader of a later term exists yet, and nothing committed anywhere is missing. */
  | 'leaseSafety'
  /** A leader found a session due while the member holding it had been promised more time, or a session kept alive by a clean link to the leader was sent away or expired (docs/scale-out.md). */
  | 'sessionLiveness'
  /** The core broke its contract with the driver (bad Ready, bad message). */
  | 'driverContract'
  /** After faults stop, the cluster elects a leader and commits everything pending in bounded time. */
  | 'liveness';

export class InvariantViolation extends Error {
  override readonly name = 'InvariantViolation';
  constructor(
    readonly invariant: InvariantName,
    readonly detail: string,
    /** Where it happened and how to replay it (seed, step, command). */
    readonly where: string,
  ) {
    super(`${invariant} violated: ${detail}${where === '' ? '' : `\n${where}`}`);
  }
}

/** Read access to one node's current log; RaftNode has exactly these. */
export interface LogView {
  /** The term of the entry at `index`, or null when the log does not hold it (compacted, or beyond its end). */
  termAt(index: number): number | null;
  lastIndex(): number;
  /** Where the log starts: entries at or below it are compacted (its term is still known). */
  logStart(): number;
}

interface RegisteredEntry {
  readonly term: number;
  /** Term of the entry at index - 1 in the log this was seen in; null until some observation tells. */
  prevTerm: number | null;
  readonly content: number;
  /** Where it was first seen, for the error message. */
  readonly origin: string;
}

interface CommittedEntry {
  readonly term: number;
  readonly content: number;
  /**
   * The highest term known anywhere when the entry was first applied. The leader that
   * committed it had a term <= this bound, so every leader of a term above the bound
   * must hold it. (Leaders of terms between the entry's term and its commit term may
   * legitimately lack it, so a tighter bound would give false alarms.)
   */
  readonly boundTerm: number;
  readonly firstAppliedBy: NodeId;
}

interface AcknowledgedWrite {
  readonly node: NodeId;
  readonly index: number;
  readonly term: number;
  readonly content: number;
  readonly boundTerm: number;
}

interface NodeRecord {
  applied: number;
  lastCommit: number;
  durableTerm: number;
  durableVote: NodeId | null;
  durableCommit: number;
}

interface PendingRead {
  readonly node: NodeId;
  readonly requiredIndex: number;
}

export class SafetyChecker {
  private readonly leaderOfTerm = new Map<number, NodeId>();
  /** Terms whose leader's log has been checked for completeness. */
  private readonly completenessChecked = new Set<number>();
  /** registry[index]: every distinct term seen at that index (usually one or two). */
  private readonly registry: Array<RegisteredEntry[] | undefined> = [];
  private readonly committed: Array<CommittedEntry | undefined> = [];
  /** stateAt[i]: digest of the state machine right after applying index i, and who got there first. */
  private readonly stateAt: Array<{ readonly digest: number; readonly node: NodeId } | undefined> = [];
  private highestCommitted = 0;
  private readonly acknowledged: AcknowledgedWrite[] = [];
  private readonly nodes = new Map<NodeId, NodeRecord>();
  /** `${voter}/${term}` -> the candidate it granted its vote to. */
  private readonly votes = new Map<string, NodeId>();
  private readonly reads = new Map<string, PendingRead>();
  private maxTerm = 0;
  private maxCommit = 0;
  private maxLeaderTerm = 0;

  /** `where` renders the run position (seed, step, replay command) for error messages. */
  constructor(private readonly where: () => string = () => '') {}

  fail(invariant: InvariantName, detail: string): never {
    throw new InvariantViolation(invariant, detail, this.where());
  }

  get highestTerm(): number {
    return this.maxTerm;
  }

  /** The highest term in which a leader was elected so far. */
  get highestLeaderTerm(): number {
    return this.maxLeaderTerm;
  }

  get highestCommitIndex(): number {
    return this.maxCommit;
  }

  get acknowledgedCount(): number {
    return this.acknowledged.length;
  }

  get committedCount(): number {
    return this.highestCommitted;
  }

  /** Any term seen anywhere (status, hard state, message). */
  observeTerm(term: number): void {
    if (term > this.maxTerm) this.maxTerm = term;
  }

  /**
   * `node` acts as leader of `term`. With `log` (the leader's current log), the
   * first sighting of each term's leader also checks leader completeness and that
   * no acknowledged write is missing.
   */
  observeLeader(node: NodeId, term: number, log: LogView | null): void {
    this.observeTerm(term);
    const known = this.leaderOfTerm.get(term);
    if (known === undefined) this.leaderOfTerm.set(term, node);
    else if (known !== node) this.fail('electionSafety', `two leaders in term ${term}: ${known} and ${node}`);
    if (term > this.maxLeaderTerm) this.maxLeaderTerm = term;
    if (log === null || this.completenessChecked.has(term)) return;
    this.completenessChecked.add(term);
    const start = this.checkLogStart(node, log, `leader ${node} of term ${term}`);
    // Bounds grow with the index (an index is first applied no earlier than the one before it).
    // Below the log start the entries live on in the state machine (see checkLogStart).
    for (let i = Math.max(1, start); i <= this.highestCommitted; i++) {
      const c = this.committed[i];
      if (c === undefined) continue;
      if (c.boundTerm >= term) break;
      const held = log.termAt(i);
      if (held !== c.term) {
        this.fail(
          'leaderCompleteness',
          `leader ${node} of term ${term} holds ${describeTerm(held)} at index ${i}, but entry (index ${i}, term ${c.term}) ` +
            `was committed (first applied by ${c.firstAppliedBy} when the highest term was ${c.boundTerm})`,
        );
      }
    }
    for (const a of this.acknowledged) {
      if (a.boundTerm >= term) break;
      if (a.index < start) continue;
      const held = log.termAt(a.index);
      if (held !== a.term) {
        this.fail(
          'acknowledgedWriteLost',
          `leader ${node} of term ${term} holds ${describeTerm(held)} at index ${a.index}, but ${a.node} acknowledged ` +
            `the proposal (index ${a.index}, term ${a.term}) when the highest term was ${a.boundTerm}`,
        );
      }
    }
  }

  /**
   * Entries seen contiguously after (prevIndex, prevTerm) in some log: a Ready's new
   * entries, an AppendEntries message, a durable write. `prevTerm` null = unknown.
   */
  observeEntries(origin: string, prevIndex: number, prevTerm: number | null, entries: readonly Entry[]): void {
    let before = prevTerm;
    for (let k = 0; k < entries.length; k++) {
      const e = entries[k]!;
      if (e.index !== prevIndex + 1 + k) {
        this.fail('logMatching', `${origin}: entries are not contiguous: expected index ${prevIndex + 1 + k}, got ${e.index}`);
      }
      if (before !== null && e.term < before) {
        this.fail('logMatching', `${origin}: term goes down along the log: index ${e.index} has term ${e.term} after term ${before}`);
      }
      this.register(origin, e, before);
      before = e.term;
    }
  }

  private register(origin: string, e: Entry, prevTerm: number | null): void {
    const content = entryContentHash(e);
    let seen = this.registry[e.index];
    if (seen === undefined) {
      seen = [];
      this.registry[e.index] = seen;
    }
    for (const r of seen) {
      if (r.term !== e.term) continue;
      if (r.content !== content) {
        this.fail('logMatching', `${origin}: entry (index ${e.index}, term ${e.term}) has different content than when ${r.origin} had it`);
      }
      if (prevTerm !== null) {
        if (r.prevTerm === null) r.prevTerm = prevTerm;
        else if (r.prevTerm !== prevTerm) {
          this.fail(
            'logMatching',
            `${origin}: logs agree on (index ${e.index}, term ${e.term}) but not before it: ` +
              `index ${e.index - 1} has term ${prevTerm} here and term ${r.prevTerm} in ${r.origin}`,
          );
        }
      }
      return;
    }
    seen.push({ term: e.term, prevTerm, content, origin });
  }

  /** `node`'s state machine applied `entry`. The first application anywhere makes it committed. */
  observeApply(node: NodeId, entry: Entry): void {
    const rec = this.record(node);
    if (entry.index !== rec.applied + 1) {
      this.fail('applyOrder', `${node} applied index ${entry.index} right after index ${rec.applied}`);
    }
    rec.applied = entry.index;
    const content = entryContentHash(entry);
    const known = this.committed[entry.index];
    if (known === undefined) {
      this.committed[entry.index] = { term: entry.term, content, boundTerm: this.maxTerm, firstAppliedBy: node };
      this.highestCommitted = Math.max(this.highestCommitted, entry.index);
    } else if (known.term !== entry.term || known.content !== content) {
      this.fail(
        'stateMachineSafety',
        `${node} applied (index ${entry.index}, term ${entry.term}) but ${known.firstAppliedBy} applied ` +
          `(index ${entry.index}, term ${known.term})${known.term === entry.term ? ' with different content' : ''}`,
      );
    }
    if (entry.index > this.maxCommit) this.maxCommit = entry.index;
  }

  /**
   * `node`'s state machine reached index `index` with this digest (after applying the
   * entry there). Every state machine must pass through the same state at each index.
   */
  observeStateDigest(node: NodeId, index: number, digest: number): void {
    const known = this.stateAt[index];
    if (known === undefined) this.stateAt[index] = { digest, node };
    else if (known.digest !== digest) {
      this.fail(
        'stateMachineSafety',
        `${node}'s state machine at index ${index} has digest ${digest}, but ${known.node} had ${known.digest} there`,
      );
    }
  }

  /**
   * `node` replaced its state machine by a snapshot of index `index` (made durable, about
   * to be stepped into its core). The state must be one some node reached at that index,
   * the node's applied index must go up, and the snapshot must be beyond its commit index.
   */
  observeInstall(node: NodeId, index: number, digest: number): void {
    const rec = this.record(node);
    if (index <= rec.lastCommit) {
      this.fail('snapshotSafety', `${node} installed a snapshot of index ${index}, not beyond its commit index ${rec.lastCommit}`);
    }
    if (index <= rec.applied) {
      this.fail('applyOrder', `${node}'s applied index went from ${rec.applied} to ${index} by installing a snapshot`);
    }
    const known = this.stateAt[index];
    if (known === undefined) {
      this.fail('stateMachineSafety', `${node} installed a snapshot of index ${index}, a state no node has reached by applying entries`);
    }
    if (known.digest !== digest) {
      this.fail(
        'stateMachineSafety',
        `${node} installed a snapshot of index ${index} with digest ${digest}, but ${known.node} had ${known.digest} there (by applying entries)`,
      );
    }
    rec.applied = index;
    if (index > this.maxCommit) this.maxCommit = index;
  }

  /** The node that accepted a proposal applied it: the client has been told it succeeded. */
  observeAcknowledged(node: NodeId, entry: Entry): void {
    const content = entryContentHash(entry);
    const known = this.committed[entry.index];
    if (known !== undefined && (known.term !== entry.term || known.content !== content)) {
      this.fail(
        'acknowledgedWriteLost',
        `${node} acknowledged (index ${entry.index}, term ${entry.term}) but the committed entry there has term ${known.term}`,
      );
    }
    this.acknowledged.push({ node, index: entry.index, term: entry.term, content, boundTerm: this.maxTerm });
  }

  /** A node's commit index, observed at any time while it runs. */
  observeCommit(node: NodeId, commit: number): void {
    const rec = this.record(node);
    if (commit < rec.lastCommit) {
      this.fail('commitMonotonic', `${node}'s commit index went down from ${rec.lastCommit} to ${commit}`);
    }
    rec.lastCommit = commit;
    if (commit > this.maxCommit) this.maxCommit = commit;
  }

  /** A node came back from a crash; its first observed commit must not be below what it had made durable or applied. */
  observeRestart(node: NodeId): void {
    const rec = this.record(node);
    rec.lastCommit = Math.max(rec.durableCommit, rec.applied);
  }

  /** A node's hard state reached stable storage. */
  observeDurableHardState(node: NodeId, hs: HardState): void {
    const rec = this.record(node);
    this.observeTerm(hs.term);
    if (hs.term < rec.durableTerm) {
      this.fail('voteSafety', `${node}'s durable term went down from ${rec.durableTerm} to ${hs.term}`);
    }
    if (hs.term === rec.durableTerm && rec.durableVote !== null && hs.vote !== rec.durableVote) {
      this.fail('voteSafety', `${node}'s durable vote in term ${hs.term} changed from ${rec.durableVote} to ${String(hs.vote)}`);
    }
    if (hs.commit < rec.durableCommit) {
      this.fail('commitMonotonic', `${node}'s durable commit index went down from ${rec.durableCommit} to ${hs.commit}`);
    }
    rec.durableTerm = hs.term;
    rec.durableVote = hs.vote;
    rec.durableCommit = hs.commit;
  }

  /** `voter` granted its (real, not pre-) vote in `term` to `candidate`. */
  observeVoteGranted(voter: NodeId, candidate: NodeId, term: number): void {
    this.observeTerm(term);
    const key = `${voter}/${term}`;
    const earlier = this.votes.get(key);
    if (earlier === undefined) this.votes.set(key, candidate);
    else if (earlier !== candidate) this.fail('voteSafety', `${voter} voted for both ${earlier} and ${candidate} in term ${term}`);
  }

  /** A client asked `node` for a linearizable read with `context`. Call it before the request reaches the core. */
  observeReadRequest(node: NodeId, context: string): void {
    if (this.reads.has(context)) throw new Error(`read context ${context} used twice (simulator bug)`);
    this.reads.set(context, { node, requiredIndex: this.maxCommit });
  }

  /** `node`, leader of `term`, answered a read at `index` under its lease. */
  observeLeaseRead(node: NodeId, term: number, index: number): void {
    if (this.maxLeaderTerm > term) {
      this.fail('leaseSafety', `${node} read under its lease of term ${term}, but ${this.leaderOfTerm.get(this.maxLeaderTerm)} was already leader of term ${this.maxLeaderTerm}`);
    }
    if (index < this.maxCommit) {
      this.fail('leaseSafety', `${node} read under its lease at index ${index}, but index ${this.maxCommit} was already committed`);
    }
  }

  /**
   * `leader`, leader of `term`, answered `member`'s ReadIndex request at `index` under its lease,
   * without a round. The member reads at `index` once applied, so the same rule as for the
   * leader's own lease reads: no leader of a later term, and nothing committed anywhere above it
   * (so nothing committed before the member's read began, either).
   */
  observeMemberLeaseAnswer(leader: NodeId, member: NodeId, term: number, index: number): void {
    if (this.maxLeaderTerm > term) {
      this.fail('leaseSafety', `${leader} answered ${member}'s read under its lease of term ${term}, but ${this.leaderOfTerm.get(this.maxLeaderTerm)} was already leader of term ${this.maxLeaderTerm}`);
    }
    if (index < this.maxCommit) {
      this.fail('leaseSafety', `${leader} answered ${member}'s read under its lease at index ${index}, but index ${this.maxCommit} was already committed`);
    }
  }

  observeReadState(node: NodeId, rs: ReadState): void {
    const read = this.reads.get(rs.context);
    if (read === undefined) this.fail('readLinearizable', `${node} reported a read state for unknown context ${JSON.stringify(rs.context)}`);
    if (read.node !== node) {
      this.fail('readLinearizable', `${node} reported the read state for ${JSON.stringify(rs.context)}, which ${read.node} requested`);
    }
    if (rs.index < read.requiredIndex) {
      this.fail(
        'readLinearizable',
        `${node}'s read ${JSON.stringify(rs.context)} got index ${rs.index}, but index ${read.requiredIndex} ` +
          `was already committed when the read was requested`,
      );
    }
  }

  /** At the end of a converged run: every node's log holds every committed entry and every acknowledged write. */
  checkFinalLogs(logs: ReadonlyMap<NodeId, LogView>): void {
    for (const [node, log] of logs) {
      const start = this.checkLogStart(node, log, `at the end ${node}`);
      for (let i = 1; i <= this.highestCommitted; i++) {
        const c = this.committed[i];
        if (c === undefined) this.fail('stateMachineSafety', `index ${i} was never applied anywhere, but index ${this.highestCommitted} was`);
        if (i < start) continue;
        const held = log.termAt(i);
        if (held !== c.term) {
          this.fail('leaderCompleteness', `at the end ${node} holds ${describeTerm(held)} at committed index ${i} (term ${c.term})`);
        }
      }
      for (const a of this.acknowledged) {
        if (a.index < start) continue;
        const held = log.termAt(a.index);
        if (held !== a.term) {
          this.fail('acknowledgedWriteLost', `at the end ${node} holds ${describeTerm(held)} at acknowledged (index ${a.index}, term ${a.term})`);
        }
      }
    }
  }

  /**
   * A log may only have compacted what its node's state machine holds: then every
   * committed entry below the start is captured there (state-machine safety covers it).
   * Returns the log start.
   */
  private checkLogStart(node: NodeId, log: LogView, who: string): number {
    const start = log.logStart();
    const applied = this.record(node).applied;
    if (start > applied) {
      this.fail('leaderCompleteness', `${who}: the log starts after index ${start}, beyond the ${applied} entries its state machine holds`);
    }
    return start;
  }

  private record(node: NodeId): NodeRecord {
    let rec = this.nodes.get(node);
    if (rec === undefined) {
      rec = { applied: 0, lastCommit: 0, durableTerm: 0, durableVote: null, durableCommit: 0 };
      this.nodes.set(node, rec);
    }
    return rec;
  }
}

function describeTerm(term: number | null): string {
  return term === null ? 'no entry' : `term ${term}`;
}

/** One node as the liveness check sees it at the end of a run. */
export interface ConvergenceNode {
  readonly id: NodeId;
  readonly up: boolean;
  readonly role: string;
  readonly term: number;
  readonly leader: NodeId | null;
  readonly commit: number;
  readonly lastIndex: number;
  /** What its state machine has applied. */
  readonly applied: number;
  readonly digest: number;
  /** How far the leader believes this node's log matches its own (null: it is the leader, or no leader). */
  readonly matchAtLeader: number | null;
}

export interface ConvergenceView {
  readonly nodes: readonly ConvergenceNode[];
  /** Client commands not yet applied anywhere. */
  readonly pendingCommands: number;
  /** Nodes whose end-of-run read has not been answered. */
  readonly unansweredReads: readonly NodeId[];
}

/**
 * Why the cluster has not converged yet, or null when it has. Without `caughtUp`: one leader
 * that every member follows, everything in its log committed, every client command committed,
 * every read answered. With `caughtUp`, also: every member has applied everything, all
 * state machines are identical, and the leader knows that every member holds its whole log
 * (else it would go on sending, e.g. snapshots, and could not count that member toward a quorum).
 */
export function convergenceProblem(view: ConvergenceView, caughtUp = true): string | null {
  const down = view.nodes.filter((n) => !n.up).map((n) => n.id);
  if (down.length > 0) return `nodes down: ${down.join(', ')}`;
  const leaders = view.nodes.filter((n) => n.role === 'leader');
  if (leaders.length !== 1) return `${leaders.length} nodes think they lead (${leaders.map((n) => `${n.id}@${n.term}`).join(', ') || 'none'})`;
  const leader = leaders[0]!;
  const astray = view.nodes.filter((n) => n.term !== leader.term || n.leader !== leader.id);
  if (astray.length > 0) {
    return `not every node follows ${leader.id}@${leader.term}: ${astray.map((n) => `${n.id} (${n.role}, term ${n.term}, leader ${String(n.leader)})`).join('; ')}`;
  }
  if (leader.commit !== leader.lastIndex) return `leader ${leader.id} has committed ${leader.commit} of ${leader.lastIndex} entries`;
  if (view.pendingCommands > 0) return `${view.pendingCommands} client commands not yet committed`;
  if (view.unansweredReads.length > 0) return `reads not answered on ${view.unansweredReads.join(', ')}`;
  if (!caughtUp) return null;
  const behind = view.nodes.filter((n) => n.applied !== leader.commit);
  if (behind.length > 0) return `not applied up to ${leader.commit} everywhere: ${behind.map((n) => `${n.id} at ${n.applied}`).join(', ')}`;
  const digests = new Set(view.nodes.map((n) => n.digest));
  if (digests.size !== 1) return `state machines differ after applying the same indexes: ${view.nodes.map((n) => `${n.id}=${n.digest}`).join(', ')}`;
  const unknown = view.nodes.filter((n) => n.role !== 'leader' && n.matchAtLeader !== leader.lastIndex);
  if (unknown.length > 0) {
    return `leader ${leader.id} does not know that its log (to ${leader.lastIndex}) is everywhere: ${unknown.map((n) => `${n.id} matched to ${String(n.matchAtLeader)}`).join(', ')}`;
  }
  return null;
}
