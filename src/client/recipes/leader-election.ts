// Leader election: candidates queue on one list (queue.ts); the first item's
// owner leads, and its item index is the fencing token (strictly increasing
// across successive leaders, since indexes are Raft indexes). A candidate waits
// only on the candidate just before it, so a leader change wakes exactly one
// candidate. Leadership ends when the item is deleted: by resign(), or by the
// server when the session expires.
import type { Item, VeraError } from '../../protocol/index.js';
import type { VeraClient } from '../client.js';
import { ListView } from './list-view.js';
import { contenderItem, takeTurn } from './queue.js';

export interface Leadership {
  /** This candidate's item, first in the list, with the data given to campaign(). */
  readonly item: Item;
  /** Pass to whatever the leader writes to, so writes from a deposed leader can be refused. */
  readonly fencingToken: number;
  /** Resolves (with the reason) when leadership is lost: item deleted, session expired or client closed. */
  readonly lost: Promise<VeraError>;
  /** Steps down: deletes the item, so the next candidate takes over. */
  resign(): Promise<void>;
}

export interface CampaignOptions {
  /** Stored in the candidate's item, e.g. the address followers should talk to. Default null. */
  readonly data?: unknown;
  /** Gives up waiting (and withdraws the candidacy) when aborted. */
  readonly signal?: AbortSignal;
}

export class LeaderElection {
  /** `path` names the election: one list, e.g. /elections/billing. */
  constructor(
    private readonly client: VeraClient,
    readonly path: string,
  ) {}

  /** Becomes a candidate and resolves once this client leads. */
  async campaign(options: CampaignOptions = {}): Promise<Leadership> {
    const turn = await takeTurn(this.client, this.path, options.data ?? null, options.signal);
    return { item: turn.item, fencingToken: turn.fencingToken, lost: turn.lost, resign: () => turn.leave() };
  }

  /** The current leader's item (with the data it campaigned with), or null when there is no candidate. */
  async leader(): Promise<Item | null> {
    const { items } = await this.client.get(this.path);
    return items[0] === undefined ? null : contenderItem(items[0]);
  }

  /**
   * Calls `onChange` with the leader's item (or null) now and whenever it changes,
   * until the returned function is called.
   */
  async observe(onChange: (leader: Item | null) => void): Promise<() => Promise<void>> {
    const events = this.client.events();
    const view = new ListView(this.path, await this.client.watch(this.path));
    let current = view.items[0]?.index ?? null;
    onChange(view.items[0] === undefined ? null : contenderItem(view.items[0]));
    const loop = (async () => {
      for await (const event of events) {
        if (!view.apply(event)) continue;
        const first = view.items[0] ?? null;
        if ((first?.index ?? null) === current) continue;
        current = first?.index ?? null;
        onChange(first === null ? null : contenderItem(first));
      }
    })().catch(() => undefined); // ends with the client
    return async () => {
      await events.return?.();
      await loop;
    };
  }
}
