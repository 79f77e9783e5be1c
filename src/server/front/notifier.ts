// Delivers change events to the sessions attached to this leader (seed 003,
// notification walkthrough). Each session has a feed: events queue in index order
// and go out as one notify frame per turn of the event loop, after the replies of
// the same turn. A consumer that stops reading never holds anything up: once its
// socket buffer passes a bound its events are dropped, and when it drains it gets a
// resync of every list it watches instead. A resync is read list by list and page
// by page, in frames of at most `replyBytes` of items, each sent only once the
// socket has room: its memory does not grow with the data. Acknowledged indexes are
// collected here and written through Raft in batches by the caller.

import type { ItemPage } from '../../families/lists/reads.js';
import type { ChangeEvent } from '../../families/lists/item.js';
import type { WatchRef } from '../../families/watches/keys.js';
import type { EventLog, RecordedEvent } from '../node/event-log.js';
import { NotifyFrames, type NotifyPayload, type ResyncList } from '../../protocol/index.js';

/** The connection side of a feed. */
export interface NotifySink {
  /** `shared`: encode through this fan-out's frame cache, under `key` (the payload's identity). */
  sendNotify(payload: NotifyPayload, shared?: { readonly frames: NotifyFrames; readonly key: string }): void;
  /** Bytes queued in the socket and not yet written to the network. */
  bufferedBytes(): number;
  /** Give up on a consumer that does not read at all. */
  closeSlow(): void;
  /** Resolves once the socket's backlog is small enough for another large frame (or it closed). */
  room(): Promise<void>;
}

/** What a feed needs from the state machine to build a resync. */
export interface ResyncSource {
  watchesOf(session: string): readonly WatchRef[];
  readListPages(path: string, pageBytes: number, onPage: (page: ItemPage & { readonly index: number }) => Promise<void> | void): Promise<void>;
  children(path: string): Promise<{ children: readonly string[] }>;
}

export interface NotifierLimits {
  /** Past this many bytes buffered in the socket, events are dropped and a resync is owed. */
  readonly stallBytes: number;
  /** Past this many, the connection is closed (the session lives on and resumes). */
  readonly closeBytes: number;
  /** How often a stalled feed checks whether its socket drained. */
  readonly drainCheckMs: number;
  /** Stored bytes of items per resync frame. */
  readonly resyncFrameBytes: number;
  /** Events held for a feed while its resync is read; past this they are dropped and another resync follows. */
  readonly pendingDuringResync: number;
  /** How many feeds resyncAll reads at once (each holds up to a frame of items); default RESYNC_ALL_AT_ONCE. */
  readonly resyncAllAtOnce?: number;
}

/** resyncAll's bound: memory and reads grow with this, not with the number of feeds. */
export const RESYNC_ALL_AT_ONCE = 16;

export const DEFAULT_NOTIFIER_LIMITS: NotifierLimits = {
  stallBytes: 8 * 1024 * 1024,
  closeBytes: 64 * 1024 * 1024,
  drainCheckMs: 50,
  resyncFrameBytes: 8 * 1024 * 1024,
  pendingDuringResync: 10_000,
};

/** Thrown inside a resync read to stop it: the feed went away. */
class FeedGone extends Error {}

type FeedMode =
  | { readonly kind: 'live' }
  | { readonly kind: 'stalled'; readonly timer: NodeJS.Timeout }
  | { readonly kind: 'resyncing' };

class Feed {
  pending: ChangeEvent[] = [];
  mode: FeedMode = { kind: 'live' };
  /** Events for a resynced list at or below its resync index are already reflected. */
  floors = new Map<string, number>();
  /** Events overflowed while a resync was read: another resync follows this one. */
  resyncAgain = false;

  constructor(
    readonly session: string,
    readonly sink: NotifySink,
  ) {}
}

export class Notifier {
  private readonly feeds = new Map<string, Feed>();
  private readonly dirty = new Set<Feed>();
  private flushScheduled = false;
  /** Highest acknowledged index per session, as heard on this leader; written to Raft in batches. */
  private readonly acked = new Map<string, number>();
  private readonly ackedUnwritten = new Set<string>();
  private closed = false;
  /** Feeds resyncAll owes a resync and has not started yet (each already in mode resyncing, holding its events). */
  private resyncQueue: Feed[] = [];
  private queuedResyncsRunning = 0;

  constructor(
    private readonly source: ResyncSource,
    private readonly log: EventLog,
    private readonly limits: NotifierLimits,
    private readonly onError: (err: unknown) => void,
  ) {}

  /**
   * Attach a session's connection. Every event for it after `after` is sent: from
   * the event log when it still has them all, otherwise as a resync.
   */
  attach(session: string, sink: NotifySink, after: number): void {
    this.detach(session);
    const feed = new Feed(session, sink);
    this.feeds.set(session, feed);
    const backlog = this.log.eventsFor(session, after);
    if (backlog === null) {
      this.startResync(feed);
    } else if (backlog.length > 0) {
      feed.pending = backlog.slice();
      this.markDirty(feed);
    }
  }

  detach(session: string): void {
    const feed = this.feeds.get(session);
    if (!feed) return;
    if (feed.mode.kind === 'stalled') clearTimeout(feed.mode.timer);
    this.feeds.delete(session);
    this.dirty.delete(feed);
  }

  isAttached(session: string): boolean {
    return this.feeds.has(session);
  }

  /** Events of one applied entry, with the sessions that watched each list. */
  deliver(recorded: readonly RecordedEvent[]): void {
    for (const { event, recipients } of recorded) {
      for (const session of recipients) {
        const feed = this.feeds.get(session);
        if (!feed || feed.mode.kind === 'stalled' || feed.resyncAgain) continue;
        if (feed.mode.kind === 'resyncing' && feed.pending.length >= this.limits.pendingDuringResync) {
          feed.pending = [];
          feed.resyncAgain = true;
          continue;
        }
        feed.pending.push(event);
        if (feed.mode.kind === 'live') this.markDirty(feed);
      }
    }
  }

  /** The client processed everything up to `index`. */
  acknowledge(session: string, index: number): void {
    if (index > (this.acked.get(session) ?? 0)) {
      this.acked.set(session, index);
      this.ackedUnwritten.add(session);
    }
  }

  ackedIndex(session: string): number {
    return this.acked.get(session) ?? 0;
  }

  /** Acknowledgements not yet written through Raft; the caller proposes them as one command. */
  takeUnwrittenAcks(): Array<[string, number]> {
    const out: Array<[string, number]> = [];
    for (const s of this.ackedUnwritten) out.push([s, this.acked.get(s)!]);
    this.ackedUnwritten.clear();
    return out;
  }

  forgetSession(session: string): void {
    this.detach(session);
    this.acked.delete(session);
    this.ackedUnwritten.delete(session);
  }

  /**
   * The member installed a snapshot: its event log restarts at the snapshot's index, so no
   * feed can be replayed across it. Every feed is resynced from the state as it is now (one
   * already resyncing reads again once done: part of what it read may be from before).
   */
  resyncAll(): void {
    for (const feed of this.feeds.values()) {
      if (feed.mode.kind === 'live') {
        // Queued: a few are read at a time. Events meanwhile are held, as during the read.
        feed.mode = { kind: 'resyncing' };
        feed.pending = [];
        this.resyncQueue.push(feed);
      } else if (feed.mode.kind === 'resyncing') {
        feed.pending = [];
        feed.resyncAgain = true;
      }
      // A stalled feed resyncs anyway once its client reads again.
    }
    this.startQueuedResyncs();
  }

  private startQueuedResyncs(): void {
    const atOnce = this.limits.resyncAllAtOnce ?? RESYNC_ALL_AT_ONCE;
    while (this.queuedResyncsRunning < atOnce && this.resyncQueue.length > 0) {
      const feed = this.resyncQueue.shift()!;
      if (this.feeds.get(feed.session) !== feed) continue; // detached while it waited
      this.queuedResyncsRunning++;
      this.startResync(feed, () => {
        this.queuedResyncsRunning--;
        this.startQueuedResyncs();
      });
    }
  }

  /** This member stopped serving its sessions (a leader stepped down): every feed ends, and it may feed again later. */
  detachAll(): void {
    for (const s of [...this.feeds.keys()]) this.detach(s);
    this.resyncQueue = [];
  }

  /** The server shuts down: nothing is fed again. */
  close(): void {
    this.closed = true;
    this.detachAll();
  }

  get attachedCount(): number {
    return this.feeds.size;
  }

  /** The backlog by the state of the connections it waits for: reading along (live), not reading (stalled), being resynced. */
  backlogByState(): Record<FeedMode['kind'], number> {
    const out = { live: 0, stalled: 0, resyncing: 0 };
    for (const f of this.feeds.values()) out[f.mode.kind] += f.pending.length;
    return out;
  }

  private markDirty(feed: Feed): void {
    this.dirty.add(feed);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // After this turn's promise callbacks, so a reply goes out before events that follow it.
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    const feeds = [...this.dirty];
    this.dirty.clear();
    const frames = new NotifyFrames();
    for (const feed of feeds) {
      if (this.feeds.get(feed.session) !== feed || feed.mode.kind !== 'live' || feed.pending.length === 0) continue;
      const buffered = feed.sink.bufferedBytes();
      if (buffered > this.limits.closeBytes) {
        this.detach(feed.session);
        feed.sink.closeSlow();
        continue;
      }
      if (buffered > this.limits.stallBytes) {
        this.stall(feed);
        continue;
      }
      const events = feed.pending.filter((e) => e.index > (feed.floors.get(e.path) ?? 0));
      feed.pending = [];
      if (events.length > 0) feed.sink.sendNotify({ events }, { frames, key: eventsKey(events) });
    }
  }

  private stall(feed: Feed): void {
    feed.pending = [];
    const check = (): void => {
      if (this.feeds.get(feed.session) !== feed || this.closed) return;
      if (feed.sink.bufferedBytes() > this.limits.stallBytes / 2) {
        feed.mode = { kind: 'stalled', timer: setTimeout(check, this.limits.drainCheckMs) };
        return;
      }
      this.startResync(feed);
    };
    feed.mode = { kind: 'stalled', timer: setTimeout(check, this.limits.drainCheckMs) };
  }

  /** Send every watched list as a resync; events arriving meanwhile queue and are filtered by each list's read index. */
  /** `done` runs once the feed is live again, or gone. */
  private startResync(feed: Feed, done?: () => void): void {
    feed.mode = { kind: 'resyncing' };
    feed.pending = [];
    feed.floors = new Map();
    feed.resyncAgain = false;
    void this.sendResync(feed).then(
      () => {
        if (this.feeds.get(feed.session) !== feed) return done?.();
        if (feed.resyncAgain) {
          this.startResync(feed, done);
          return;
        }
        feed.mode = { kind: 'live' };
        if (feed.pending.length > 0) this.markDirty(feed);
        done?.();
      },
      (err: unknown) => {
        done?.();
        if (err instanceof FeedGone) return;
        this.detach(feed.session);
        feed.sink.closeSlow();
        this.onError(err);
      },
    );
  }

  private async sendResync(feed: Feed): Promise<void> {
    const frameBytes = this.limits.resyncFrameBytes;
    let lists: ResyncList[] = [];
    let bytes = 0;
    const send = async (more: boolean): Promise<void> => {
      if (this.feeds.get(feed.session) !== feed) throw new FeedGone();
      feed.sink.sendNotify(more ? { resync: lists, more: true } : { resync: lists });
      lists = [];
      bytes = 0;
      if (more) await feed.sink.room();
    };
    for await (const path of this.watchedLists(feed.session)) {
      let first = true;
      await this.source.readListPages(path, frameBytes, async (page) => {
        if (first) feed.floors.set(path, page.index);
        first = false;
        if (lists.length > 0 && bytes + page.bytes > frameBytes) await send(true);
        lists.push({ path, index: page.index, items: page.items as ResyncList['items'] });
        bytes += page.bytes;
      });
    }
    await send(false);
  }

  /**
   * Every list the session watches, each once: exact watches (empty or not) and
   * every non-empty list below a prefix watch, plus the prefix itself. Only the
   * outermost prefixes are walked; the few paths named by other watches go first
   * and the walks skip them, so nothing here grows with the data.
   */
  private async *watchedLists(session: string): AsyncGenerator<string> {
    const watches = this.source.watchesOf(session);
    const prefixes = [...new Set(watches.filter((w) => w.prefix).map((w) => w.path))];
    const outermost = prefixes.filter((p) => !prefixes.some((q) => q !== p && isAtOrBelow(p, q)));
    const named = new Set<string>();
    for (const w of watches) if (w.path !== '/' && !(w.prefix && outermost.includes(w.path))) named.add(w.path);
    yield* named;
    for (const prefix of outermost) {
      for await (const path of this.listsBelow(prefix)) if (!named.has(path)) yield path;
    }
  }

  /** Every non-empty list at or below `prefix`, and the prefix itself (an empty list in a resync says "it is empty now"). */
  private async *listsBelow(prefix: string): AsyncGenerator<string> {
    if (prefix !== '/') yield prefix;
    const { children } = await this.source.children(prefix);
    for (const c of children) yield* this.listsBelow(prefix === '/' ? `/${c}` : `${prefix}/${c}`);
  }
}

function isAtOrBelow(path: string, prefix: string): boolean {
  return prefix === '/' || path === prefix || path.startsWith(`${prefix}/`);
}

/** Names a list of events by content: an entry index, change type and item index identify one event. */
function eventsKey(events: readonly ChangeEvent[]): string {
  let key = '';
  for (const e of events) key += `${e.index}:${e.type}:${e.item.index}:${e.path}\n`;
  return key;
}
