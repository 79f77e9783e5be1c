// A member that stepped down and leads again feeds its new sessions as before: stepping
// down ends every feed (LeaderDuties.setLeading(false) -> Notifier.detachAll) but does
// not close the notifier for good, so a feed that stalls behind a slow reader still
// resyncs once its socket drains (review so8a-1, finding 2).
import { describe, expect, it } from 'vitest';
import { EventLog } from '../../src/server/node/event-log.js';
import { Notifier, type NotifySink } from '../../src/server/front/notifier.js';
import { LeaderDuties } from '../../src/server/front/leader-duties.js';
import type { FrontEnd } from '../../src/server/front/context.js';
import type { NotifyPayload } from '../../src/protocol/index.js';

describe('the notifier across a step-down', () => {
  it('resyncs a stalled feed after this member stepped down and was elected again', async () => {
    const source = {
      watchesOf: () => [{ path: '/a', prefix: false }],
      readListPages: async (path: string, _bytes: number, onPage: (page: never) => Promise<void> | void) => {
        await onPage({ path, items: [], bytes: 0, index: 5 } as never);
      },
      children: async () => ({ children: [] }),
    };
    const limits = { stallBytes: 100, closeBytes: 1_000_000, drainCheckMs: 1, resyncFrameBytes: 1024, pendingDuringResync: 100 };
    const notifier = new Notifier(source as never, new EventLog(1000, 0), limits, (err) => {
      throw err;
    });
    const fe = { notifier, connections: new Map() } as unknown as FrontEnd;
    const duties = new LeaderDuties(fe, [], {});
    duties.setLeading(true);
    duties.setLeading(false);
    duties.setLeading(true);

    const sent: NotifyPayload[] = [];
    let buffered = 1000; // the client stopped reading
    const sink: NotifySink = { sendNotify: (p) => void sent.push(p), bufferedBytes: () => buffered, closeSlow: () => undefined, room: async () => undefined };
    notifier.attach('s', sink, 0);
    notifier.deliver([{ event: { index: 3, path: '/a', type: 'pushed' } as never, recipients: ['s'] }]);
    await expect.poll(() => modeOf(notifier, 's')).toBe('stalled');
    buffered = 0; // it reads again
    await expect.poll(() => sent).toEqual([{ resync: [{ path: '/a', index: 5, items: [] }] }]);
    duties.stop();
    notifier.close();
  });
});

/** The state of a session's feed (live, stalled or resyncing), read from the notifier's inside. */
function modeOf(notifier: Notifier, session: string): string | undefined {
  return (notifier as unknown as { feeds: Map<string, { mode: { kind: string } }> }).feeds.get(session)?.mode.kind;
}
