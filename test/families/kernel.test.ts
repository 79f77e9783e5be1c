// The store kernel's side of command families: the entry envelope, the
// replicated clock, commands a member does not know, and the registry's rules.
import { pack } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import type { AnyFamily } from '../../src/statemachine/family.js';
import { COMMAND_VERSION, FAMILIES, LEGACY_OPS, REGISTRY, checkBuckets } from '../../src/families/registry.js';
import { Bucket } from '../../src/keys/index.js';
import { WatchesBucket } from '../../src/families/watches/keys.js';
import { CommandError, decodeEntryCommand, encodeCommand, UnknownCommandError } from '../../src/families/commands.js';
import { CLOCK_KEY, StateMachine } from '../../src/statemachine/state-machine.js';
import { dumpDb, EntryFeed, openTempDb, type TempDb } from '../statemachine/helpers.js';
import { getList } from '../../src/families/lists/queries.js';

const temps: TempDb[] = [];
afterEach(async () => {
  for (const t of temps.splice(0)) await t.cleanup();
});

async function fresh(): Promise<{ temp: TempDb; sm: StateMachine; feed: EntryFeed }> {
  const temp = await openTempDb();
  temps.push(temp);
  return { temp, sm: await StateMachine.open(temp.db, REGISTRY), feed: new EntryFeed() };
}

const open = (session: string) => ({ op: 'openSession' as const, session, timeoutMs: 5000, remote: '10.0.0.1:1' });
const push = (session: string, data: unknown) => ({ op: 'push' as const, session, path: '/a', data, persistent: false, watch: false });

describe('the entry envelope', () => {
  it('names the family, op, version and proposer clock, and decodes back to the bare command', () => {
    const bytes = encodeCommand(push('s1', 7), 1234);
    const decoded = decodeEntryCommand(bytes);
    expect(decoded.family.name).toBe('lists');
    expect(decoded.t).toBe(1234);
    expect(decoded.command).toEqual(push('s1', 7));
  });

  it('still reads entries written before it (an op alone, no clock)', () => {
    const decoded = decodeEntryCommand(pack(push('s1', 7)));
    expect(decoded.family.name).toBe('lists');
    expect(decoded.t).toBe(0);
  });

  it.each([
    ['an unknown family', { v: 1, family: 'frobs', op: 'add', t: 0 }],
    ['an unknown op of a known family', { v: 1, family: 'lists', op: 'put', t: 0, session: 's' }],
    ['a version above this build', { v: COMMAND_VERSION + 1, family: 'lists', t: 0, ...push('s1', 1) }],
  ])('refuses %s as unknown, naming the version it needs', (_what, raw) => {
    expect(() => decodeEntryCommand(pack(raw))).toThrow(UnknownCommandError);
    expect(() => decodeEntryCommand(pack(raw))).toThrow(`needs command version ${raw.v}`);
  });

  it('refuses an unknown op of an entry without envelope as malformed, as before (nothing writes that form any more)', () => {
    const err = (() => {
      try {
        decodeEntryCommand(pack({ op: 'frobnicate' }));
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(CommandError);
    expect(err).not.toBeInstanceOf(UnknownCommandError);
    // A stray family key without a version is no envelope either: an unexpected field.
    expect(() => decodeEntryCommand(pack({ family: 'lists', ...push('s1', 1) }))).toThrow(/unexpected field 'family'/);
  });
});

describe('applying', () => {
  it('stops at an entry it cannot apply: what came before it is written, nothing of it or after it', async () => {
    const { temp, sm, feed } = await fresh();
    await sm.apply(feed.command(open('s1')));
    const entries = [feed.command(push('s1', 1)), feed.raw(pack({ v: COMMAND_VERSION + 1, family: 'journal', op: 'add', t: 5 })), feed.command(push('s1', 2))];
    await expect(sm.applyMany(entries)).rejects.toThrow(UnknownCommandError);
    expect(sm.appliedIndex).toBe(2);
    expect((await getList(sm, '/a')).items.map((i) => i.data)).toEqual([1]);
    // A restart meets the same entry and stops again: nothing was skipped.
    const reopened = await StateMachine.open(await temp.reopen(), REGISTRY);
    expect(reopened.appliedIndex).toBe(2);
    await expect(reopened.applyMany(entries.slice(1))).rejects.toThrow(/needs command version/);
    expect(reopened.appliedIndex).toBe(2);
  });

  it('keeps a replicated clock that never goes back, the same on every member and across a restart', async () => {
    const a = await fresh();
    const b = await fresh();
    const times = [0, 1000, 900, 2500, 2400];
    const entries = [a.feed.command(open('s1')), ...times.map((t, k) => a.feed.raw(encodeCommand(push('s1', k), t)))];
    const clocks: number[][] = [[], []];
    for (const entry of entries) {
      await a.sm.apply(entry);
      await b.sm.apply(entry);
      clocks[0]!.push(a.sm.clock);
      clocks[1]!.push(b.sm.clock);
    }
    expect(clocks[0]).toEqual([0, 0, 1000, 1000, 2500, 2500]);
    expect(clocks[1]).toEqual(clocks[0]);
    expect(await dumpDb(b.temp.db)).toEqual(await dumpDb(a.temp.db));
    expect(await a.temp.db.get(CLOCK_KEY)).toBeDefined();
    const reopened = await StateMachine.open(await a.temp.reopen(), REGISTRY);
    expect(reopened.clock).toBe(2500);
  });

  it('writes no clock for entries that carry none (the legacy fixture stays byte-identical)', async () => {
    const { temp, sm, feed } = await fresh();
    await sm.apply(feed.command(open('s1')));
    await sm.apply(feed.raw(pack(push('s1', 1))));
    expect(await temp.db.get(CLOCK_KEY)).toBeUndefined();
    expect(sm.clock).toBe(0);
  });
});

describe('the registry', () => {
  it('has the families of version 1 first, then the journal of version 2 and node assignment of version 3, hibernation of version 4, users and the audit log of version 7, observe and leases (which replicate nothing of their own), put and transactions of version 8, ranges (nothing replicated), per-user storage counts and counters of version 9, their ops unique, and no bucket claimed twice', () => {
    expect(FAMILIES.map((f) => [f.name, f.since])).toEqual([['sessions', 1], ['lists', 1], ['watches', 1], ['lag', 1], ['cluster', 1], ['journal', 2], ['assign', 3], ['hibernate', 4], ['auth', 7], ['audit', 7], ['observe', 1], ['lease', 1], ['kv', 8], ['range', 1], ['quota', 9], ['counter', 9]]);
    expect([...LEGACY_OPS.keys()].sort()).toEqual(['ack', 'closeSession', 'delete', 'openSession', 'push', 'unwatch', 'watch']);
    expect(() => checkBuckets(FAMILIES)).not.toThrow();
  });

  // A join names the op it adds to; one the registry does not have would silently never run.
  it('refuses to open with a join of an op no registered family has, or with two keepers of the user ledger', async () => {
    const { temp } = await fresh();
    const joiner = (target: string): AnyFamily => ({ ...FAMILIES[3]!, name: 'joiner', buckets: [], joins: { [target]: (_c: never, plan) => plan } }) as AnyFamily;
    for (const target of ['nope.push', 'lists.nope', 'lists']) {
      await expect(StateMachine.open(temp.db, { ...REGISTRY, families: [...FAMILIES, joiner(target)] })).rejects.toThrow(`the joiner family joins ${target}, which is no registered family's op`);
    }
    const quota = FAMILIES.find((f) => f.name === 'quota')!;
    const second = { ...quota, name: 'quota2', buckets: [] } as AnyFamily;
    await expect(StateMachine.open(temp.db, { ...REGISTRY, families: [...FAMILIES, second] })).rejects.toThrow('two families keep the user ledger: quota, quota2');
    // The registry as it is opens (the joins it has name real ops).
    await expect(StateMachine.open(temp.db, REGISTRY)).resolves.toBeInstanceOf(StateMachine);
  });

  it('refuses a family that claims a bucket already taken', () => {
    const thief = { ...FAMILIES[1]!, name: 'thief', buckets: [{ id: WatchesBucket.watch, name: 'mine' }] } as AnyFamily;
    expect(() => checkBuckets([...FAMILIES, thief])).toThrow(/bucket 0x0006 of thief is already watches's/);
    const kernel = { ...FAMILIES[1]!, name: 'kernel-thief', buckets: [{ id: Bucket.log, name: 'log' }] } as AnyFamily;
    expect(() => checkBuckets([...FAMILIES, kernel])).toThrow(/already the kernel's/);
  });
});
