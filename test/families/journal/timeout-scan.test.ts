// The leader's timeout duty (server.ts) on a journal whose finished claims have
// left deleted keys at the head of its Processing index: once a scan has read past
// them to the first live claim, no tick reads again until that claim could have
// timed out, and the next scan starts at it. Driven on a real state machine over a real LevelDB.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FamilyHost, PluginDuty } from '../../../src/kit/index.js';
import type { JournalValue } from '../../../src/families/journal/apply.js';
import type { JournalCommand } from '../../../src/families/journal/commands.js';
import { journal } from '../../../src/families/journal/index.js';
import { startedFromRange } from '../../../src/families/journal/keys.js';
import { plugin } from '../../../src/families/journal/server.js';
import type { JournalState } from '../../../src/families/journal/state.js';
import { JournalHarness, SETTINGS } from './harness.js';

const NAME = 'j';

/** The timeout duty of a journal instance on `h`'s state machine, the start of each range it scans, and the commands it proposes. */
function timeoutDuty(h: JournalHarness): { duty: PluginDuty; scans: Buffer[]; proposed: JournalCommand[]; settle: () => Promise<void> } {
  const scans: Buffer[] = [];
  const proposed: JournalCommand[] = [];
  /** The duty's reads and proposals not yet settled: a tick's work is done when none is left. */
  const inFlight = new Set<Promise<unknown>>();
  const track = <T>(work: Promise<T>): Promise<T> => {
    inFlight.add(work);
    const forget = (): void => void inFlight.delete(work);
    work.then(forget, forget);
    return work;
  };
  const reader = {
    stateOf: h.sm.stateOf.bind(h.sm),
    read: <T>(what: string, read: (db: typeof h.temp.db, snapshot: never, index: number) => Promise<T>): Promise<T> => {
      const done = h.sm.read(what, (db, snapshot, index) => {
        // What the duty uses of the db (keys and get), noting where each key scan starts.
        const spied = {
          keys: (options: { gte: Buffer }) => (scans.push(options.gte), db.keys(options as never)),
          get: (key: Buffer, options: object) => db.get(key, options),
        } as unknown as typeof db;
        return read(spied, snapshot as never, index);
      });
      return track(done);
    },
  };
  const host: Record<string, unknown> = {
    state: () => h.sm.stateOf(journal),
    reader,
    now: () => h.sm.clock,
    propose: (command: JournalCommand) => {
      proposed.push(command);
      return track(h.ok(command));
    },
    log: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
  };
  // The duties' view (FamilyHost.leaderOnly): the same stand-in.
  host.leaderOnly = host;
  const duty = plugin.createServer(host as unknown as FamilyHost<JournalState, JournalValue, JournalCommand>).duties!.find((d) => d.name === 'journal-timeouts')!;
  // The tick's reads and proposals, and whatever each starts once it resolves (a read leads to a
  // proposal, a proposal's apply to the next read): done when a turn passes with none in flight.
  const settle = async (): Promise<void> => {
    do {
      await Promise.allSettled([...inFlight]);
      await new Promise((resolve) => setImmediate(resolve));
    } while (inFlight.size > 0);
  };
  return { duty, scans, proposed, settle };
}

describe('the timeout duty', () => {
  afterEach(() => vi.restoreAllMocks());

  it('reads past the finished claims at the head of the Processing index once, and times out a later claim from there', async () => {
    const h = await JournalHarness.open();
    try {
      await h.ok({ op: 'create', name: NAME, settings: SETTINGS });
      // Fifty claims that started at T0 and finished: their index keys are deleted, not yet compacted away.
      const T0 = h.now;
      await h.ok({ op: 'add', name: NAME, items: Array.from({ length: 50 }, (_, i) => ({ key: `done${i}`, data: i })) });
      const lease = h.nextIndex;
      await h.ok({ op: 'claim', name: NAME, max: 50 });
      await h.ok({ op: 'doneMany', name: NAME, items: Array.from({ length: 50 }, (_, i) => [`done${i}`, lease] as const) });
      // One claim still held, started at T1.
      h.now = T0 + 5000;
      const T1 = h.now;
      await h.ok({ op: 'add', name: NAME, items: [{ key: 'held', data: 0 }] });
      const heldLease = h.nextIndex;
      await h.ok({ op: 'claim', name: NAME, max: 1 });

      const { duty, scans, proposed, settle } = timeoutDuty(h);
      const now = vi.spyOn(Date, 'now');
      duty.start?.();
      // Half its timeout later: nothing is due, and nothing live lies before T1 - timeout / 2.
      now.mockReturnValue(T1 + SETTINGS.timeoutMs / 2);
      duty.tick();
      await settle();
      // The first scan read from the head, past T0's finished claims, to the held one: until
      // that one could have timed out, nothing it has not looked at could be due, and no tick reads.
      now.mockReturnValue(T1 + SETTINGS.timeoutMs / 2 + 100);
      duty.tick();
      await settle();
      now.mockReturnValue(T1 + SETTINGS.timeoutMs - 1);
      duty.tick();
      await settle();
      expect(proposed).toEqual([]);
      expect(scans).toEqual([startedFromRange(NAME, 0).gte]);

      // Past its timeout the held claim is found from there, and goes back.
      now.mockReturnValue(T1 + SETTINGS.timeoutMs + 1);
      h.now = T1 + SETTINGS.timeoutMs + 1;
      duty.tick();
      await settle();
      // Read from the held claim's start, not from the head again.
      expect(scans).toEqual([startedFromRange(NAME, 0).gte, startedFromRange(NAME, T1).gte]);
      expect(proposed).toEqual([{ op: 'timeout', name: NAME, claims: [['held', heldLease]] }]);
      expect((await h.items(NAME)).get('held')).toMatchObject({ status: 'waiting', timeouts: 1 });
    } finally {
      await h.close();
    }
  });
  it('a claim made after a scan, once the claim that scan found has finished, still times out', async () => {
    const h = await JournalHarness.open();
    try {
      await h.ok({ op: 'create', name: NAME, settings: SETTINGS });
      const T1 = h.now;
      await h.ok({ op: 'add', name: NAME, items: [{ key: 'first', data: 0 }] });
      const firstLease = h.nextIndex;
      await h.ok({ op: 'claim', name: NAME, max: 1 });

      const { duty, proposed, settle } = timeoutDuty(h);
      const now = vi.spyOn(Date, 'now');
      duty.start?.();
      // A scan that meets 'first' (not yet due): later scans start no later than its start, T1.
      now.mockReturnValue(T1 + SETTINGS.timeoutMs / 2);
      duty.tick();
      await settle();
      expect(proposed).toEqual([]);

      // 'first' finishes; 'late' is claimed at T2, after the scan.
      h.now = T1 + SETTINGS.timeoutMs / 2 + 10;
      await h.ok({ op: 'done', name: NAME, key: 'first', lease: firstLease });
      const T2 = h.now;
      await h.ok({ op: 'add', name: NAME, items: [{ key: 'late', data: 1 }] });
      const lateLease = h.nextIndex;
      await h.ok({ op: 'claim', name: NAME, max: 1 });
      now.mockReturnValue(T2 + SETTINGS.timeoutMs - 1);
      duty.tick();
      await settle();
      expect(proposed).toEqual([]);
      now.mockReturnValue(T2 + SETTINGS.timeoutMs + 1);
      h.now = T2 + SETTINGS.timeoutMs + 1;
      duty.tick();
      await settle();
      expect(proposed).toEqual([{ op: 'timeout', name: NAME, claims: [['late', lateLease]] }]);
    } finally {
      await h.close();
    }
  });
});
