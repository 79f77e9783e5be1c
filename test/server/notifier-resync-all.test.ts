// After a snapshot install every feed is resynced (Notifier.resyncAll), but only a few are
// read at once: each read holds up to a frame of items until its socket drains, so memory
// and LevelDB reads grow with the bound, not with the number of feeds (review so8a-1, finding 3).
import { describe, expect, it } from 'vitest';
import { EventLog } from '../../src/server/node/event-log.js';
import { DEFAULT_NOTIFIER_LIMITS, Notifier, RESYNC_ALL_AT_ONCE, type NotifySink } from '../../src/server/front/notifier.js';
import type { NotifyPayload } from '../../src/protocol/index.js';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('resyncAll', () => {
  it(`reads at most ${RESYNC_ALL_AT_ONCE} feeds at once, and resyncs every one`, async () => {
    /** Reads under way, each finished by the test. */
    const reads: Array<() => void> = [];
    let mostAtOnce = 0;
    const source = {
      watchesOf: () => [{ path: '/a', prefix: false }],
      readListPages: async (path: string, _bytes: number, onPage: (page: never) => Promise<void> | void) => {
        await new Promise<void>((resolve) => {
          reads.push(resolve);
          mostAtOnce = Math.max(mostAtOnce, reads.length);
        });
        await onPage({ path, items: [], bytes: 0, index: 9 } as never);
      },
      children: async () => ({ children: [] }),
    };
    const notifier = new Notifier(source as never, new EventLog(1000, 0), DEFAULT_NOTIFIER_LIMITS, (err) => {
      throw err;
    });
    const sent = new Map<string, NotifyPayload[]>();
    const sink = (session: string): NotifySink => ({
      sendNotify: (p) => sent.set(session, [...(sent.get(session) ?? []), p]),
      bufferedBytes: () => 0,
      closeSlow: () => undefined,
      room: async () => undefined,
    });
    const feeds = RESYNC_ALL_AT_ONCE * 2 + 5;
    for (let i = 0; i < feeds; i++) notifier.attach(`s${i}`, sink(`s${i}`), 0);
    notifier.resyncAll();
    await turn();
    expect(reads).toHaveLength(RESYNC_ALL_AT_ONCE);
    // A feed detached while it waits is skipped.
    notifier.detach(`s${feeds - 1}`);
    while (reads.length > 0) {
      for (const finish of reads.splice(0)) finish();
      await turn();
    }
    expect(mostAtOnce).toBe(RESYNC_ALL_AT_ONCE);
    for (let i = 0; i < feeds - 1; i++) expect(sent.get(`s${i}`), `s${i}`).toEqual([{ resync: [{ path: '/a', index: 9, items: [] }] }]);
    expect(sent.has(`s${feeds - 1}`)).toBe(false);
    expect(notifier.backlogByState()).toEqual({ live: 0, stalled: 0, resyncing: 0 });
    notifier.close();
  });
});
