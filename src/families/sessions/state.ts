// The sessions family's in-memory index: every live session and how many each
// client address holds. Rebuilt from the client bucket at load; changed only by
// plans' after-steps, once their batch is written.
import { bucketRange } from '../../keys/index.js';
import { SessionsBucket, decodeClientKey } from './keys.js';
import { decodeClientValue } from './codec.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { SessionInfo } from './codec.js';
import type { DbSnapshot } from '../../statemachine/family.js';

/** Ended sessions a member keeps for its applied hook, at most (takeEnded). */
const MAX_ENDED_KEPT = 10_000;

export class SessionsState {
  private readonly info = new Map<string, SessionInfo>();
  /** Open sessions per client address, for the sessionsPerAddress quota. */
  private readonly byAddress = new Map<string, number>();
  /** Open sessions per user, for the limits per user. */
  private readonly byPrincipal = new Map<string, Set<string>>();
  /**
   * Sessions removed since the applied hook last took them (takeEnded), so that the member
   * holding one's connection closes it: this member's own note, not replicated state. Bounded:
   * a member that applies entries with no hook taking them (none today) keeps only those since it last filled up.
   */
  private ended: string[] = [];

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<SessionsState> {
    const state = new SessionsState();
    for await (const [key, value] of db.iterator({ ...bucketRange(SessionsBucket.client), snapshot })) {
      state.add(decodeClientKey(key), decodeClientValue(value));
    }
    return state;
  }

  get sessions(): ReadonlyMap<string, SessionInfo> {
    return this.info;
  }

  has(session: string): boolean {
    return this.info.has(session);
  }

  add(session: string, info: SessionInfo): void {
    this.info.set(session, info);
    const address = clientAddress(info.remote);
    this.byAddress.set(address, (this.byAddress.get(address) ?? 0) + 1);
    if (info.principal !== undefined) {
      let held = this.byPrincipal.get(info.principal);
      if (held === undefined) this.byPrincipal.set(info.principal, (held = new Set()));
      held.add(session);
    }
  }

  /** A live session's holder becomes `member` (attachSession); its other fields stay. */
  attach(session: string, member: string): void {
    const info = this.info.get(session);
    if (info !== undefined) this.info.set(session, { ...info, member });
  }

  remove(session: string): void {
    const info = this.info.get(session);
    if (info === undefined) return;
    const address = clientAddress(info.remote);
    const left = (this.byAddress.get(address) ?? 1) - 1;
    if (left === 0) this.byAddress.delete(address);
    else this.byAddress.set(address, left);
    if (info.principal !== undefined) {
      const held = this.byPrincipal.get(info.principal);
      held?.delete(session);
      if (held?.size === 0) this.byPrincipal.delete(info.principal);
    }
    this.info.delete(session);
    // Full only where no hook takes them (nothing holds those connections): start afresh rather than shift a long array per end.
    if (this.ended.length >= MAX_ENDED_KEPT) this.ended = [];
    this.ended.push(session);
  }

  /** The sessions removed since the last call, in the order they ended. */
  takeEnded(): readonly string[] {
    const ended = this.ended;
    this.ended = [];
    return ended;
  }

  sessionsOf(principal: string): number {
    return this.byPrincipal.get(principal)?.size ?? 0;
  }

  /** The live sessions `principal` opened. */
  sessionIdsOf(principal: string): ReadonlySet<string> {
    return this.byPrincipal.get(principal) ?? new Set();
  }

  sessionsFrom(address: string): number {
    return this.byAddress.get(address) ?? 0;
  }
}

/** The host part of a `host:port` remote (IPv6 hosts contain colons; the port follows the last one). */
export function clientAddress(remote: string): string {
  const colon = remote.lastIndexOf(':');
  return colon < 0 ? remote : remote.slice(0, colon);
}
