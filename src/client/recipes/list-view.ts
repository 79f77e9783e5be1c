// A local copy of one list, kept current from a watch snapshot plus the events
// and resyncs that follow it. Recipes use it to decide without asking the
// server again: only their own decision points cost a request.
import type { Item } from '../../protocol/index.js';
import type { ClientEvent } from '../notifications.js';

export class ListView {
  private list: Item[];
  private at: number;

  /** `snapshot` is what watch() returned: the list as of `index`; later events apply on top. */
  constructor(
    readonly path: string,
    snapshot: { readonly index: number; readonly items?: readonly Item[] },
  ) {
    this.list = [...(snapshot.items ?? [])];
    this.at = snapshot.index;
  }

  get items(): readonly Item[] {
    return this.list;
  }

  /** The index the view reflects. */
  get index(): number {
    return this.at;
  }

  has(index: number): boolean {
    return this.list.some((i) => i.index === index);
  }

  /** The item just before `index` in list order, or null if `index` is first (or absent). */
  predecessorOf(index: number): Item | null {
    let before: Item | null = null;
    for (const item of this.list) {
      if (item.index >= index) break;
      before = item;
    }
    return before;
  }

  /** Applies an event if it is about this list and newer than the view; says whether it changed anything. */
  apply(event: ClientEvent): boolean {
    if (event.path !== this.path) return false;
    if (event.type === 'resync') {
      if (event.index < this.at) return false;
      this.list = [...event.items];
      this.at = event.index;
      return true;
    }
    // Events at or below the snapshot index are already in it.
    if (event.index <= this.at) return false;
    this.at = event.index;
    if (event.type === 'push') {
      if (this.has(event.item.index)) return false;
      this.list.push(event.item);
      this.list.sort((a, b) => a.index - b.index);
      return true;
    }
    const before = this.list.length;
    this.list = this.list.filter((i) => i.index !== event.item.index);
    return this.list.length !== before;
  }
}
