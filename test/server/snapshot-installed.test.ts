// A member that installs a snapshot restarts its event log at the snapshot's index, so no
// feed attached there can be replayed across it: every feed is resynced (Notifier.resyncAll),
// and a session whose closeSession the snapshot covered (never applied here as an entry) has
// its connection closed as applying it would have (docs/scale-out.md, step 8a).
import { describe, expect, it } from 'vitest';
import { EventLog } from '../../src/server/node/event-log.js';
import { DEFAULT_NOTIFIER_LIMITS, Notifier, type NotifySink } from '../../src/server/front/notifier.js';
import { afterSnapshotInstalled } from '../../src/server/front/snapshot-installed.js';
import { CloseCode, type AttachedConnection, type FrontEnd } from '../../src/server/front/context.js';
import type { NotifyPayload } from '../../src/protocol/index.js';

/** A notifier whose every session watches `/a`, which holds one item at index 9. */
function notifier(): { notifier: Notifier; sent: Map<string, NotifyPayload[]>; sink: (s: string) => NotifySink; readFor: string[] } {
  const sent = new Map<string, NotifyPayload[]>();
  /** The sessions whose watched lists were read for a resync. */
  const readFor: string[] = [];
  const sink = (session: string): NotifySink => ({
    sendNotify: (payload) => sent.set(session, [...(sent.get(session) ?? []), payload]),
    bufferedBytes: () => 0,
    closeSlow: () => undefined,
    room: async () => undefined,
  });
  const source = {
    watchesOf: (session: string) => {
      readFor.push(session);
      return [{ path: '/a', prefix: false }];
    },
    readListPages: async (path: string, _bytes: number, onPage: (page: never) => Promise<void> | void) => {
      await onPage({ path, items: [{ index: 9, owner: null, data: 'x' }], index: 9 } as never);
    },
    children: async () => ({ children: [] }),
  };
  const n = new Notifier(source as never, new EventLog(1000, 0), DEFAULT_NOTIFIER_LIMITS, (err) => {
    throw err;
  });
  return { notifier: n, sent, sink, readFor };
}

describe('a snapshot installed on a member', () => {
  it('resyncs every attached feed from the state as it is now', async () => {
    const { notifier: n, sent, sink } = notifier();
    for (const s of ['s1', 's2']) n.attach(s, sink(s), 0);
    // Nothing to replay (the event log holds everything after 0, and it is empty): both feeds are live at once.
    expect(n.backlogByState()).toEqual({ live: 0, stalled: 0, resyncing: 0 });
    expect(sent.size).toBe(0);
    n.resyncAll();
    for (const s of ['s1', 's2']) await expect.poll(() => sent.get(s), { message: s }).toEqual([{ resync: [{ path: '/a', items: [{ index: 9, owner: null, data: 'x' }], index: 9 }] }]);
    n.close();
  });

  it("closes the connection of a session the snapshot ended, and keeps a live one's", async () => {
    const { notifier: n, sink, readFor } = notifier();
    const closed: Array<[string, number]> = [];
    const connection = (session: string): AttachedConnection => ({ close: (code) => void closed.push([session, code]) });
    n.attach('live', sink('live'), 0);
    n.attach('ended', sink('ended'), 0);
    const fe = {
      notifier: n,
      connections: new Map([
        ['live', connection('live')],
        ['ended', connection('ended')],
      ]),
      connectionSeam: { session: (id: string) => (id === 'live' ? { timeoutMs: 10_000 } : undefined) },
    } as unknown as FrontEnd;
    afterSnapshotInstalled(fe);
    expect(closed).toEqual([['ended', CloseCode.sessionEnded]]);
    expect([...fe.connections.keys()]).toEqual(['live']);
    expect(n.isAttached('ended')).toBe(false);
    expect(n.isAttached('live')).toBe(true);
    // Only the live feed is resynced: none is read for the ended one.
    await expect.poll(() => readFor).toEqual(['live']);
    n.close();
  });
});
