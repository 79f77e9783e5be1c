// Sessions that record the member holding their connection (command version 9,
// docs/scale-out.md "Session liveness"): openSession's `member`, and
// attachSession, which moves a live session to another member. Both are
// replicated state like any other: every member computes the same bytes, a
// restart reloads them, and records written before the field existed keep
// their bytes.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bucketRange } from '../../src/keys/index.js';
import { encodeCommand, decodeEntryCommand, CommandError, UnknownCommandError, type FamilyCommand } from '../../src/families/commands.js';
import type { Command } from '../../src/families/core-commands.js';
import { REGISTRY } from '../../src/families/registry.js';
import { decodeClientValue, encodeClientValue } from '../../src/families/sessions/codec.js';
import { HOLDERS_SINCE } from '../../src/families/sessions/index.js';
import { SessionsBucket } from '../../src/families/sessions/keys.js';
import { liveSessions } from '../../src/families/sessions/queries.js';
import { sessions } from '../../src/families/sessions/public.js';
import type { Entry } from '../../src/raft/types.js';
import { pack, unpack } from '../../src/statemachine/codec.js';
import { StateMachine } from '../../src/statemachine/state-machine.js';
import type { ApplyOutcome } from '../../src/statemachine/types.js';
import { dumpDb, EntryFeed, openTempDb, type TempDb } from '../statemachine/helpers.js';

const attach = (session: string, member: string): FamilyCommand => ({ family: 'sessions', op: 'attachSession', session, member });
const open = (session: string, member?: string): Command => ({
  op: 'openSession',
  session,
  timeoutMs: 5000,
  remote: `10.0.0.1:${session.length}`,
  quota: { sessionsPerAddress: 2 },
  ...(member === undefined ? {} : { member }),
});

let tmp: TempDb;
let sm: StateMachine;
let feed: EntryFeed;
beforeEach(async () => {
  tmp = await openTempDb();
  sm = await StateMachine.open(tmp.db, REGISTRY);
  feed = new EntryFeed();
});
afterEach(async () => {
  await tmp.cleanup();
});

const apply = (c: Command | FamilyCommand): Promise<ApplyOutcome> => sm.apply(feed.raw(encodeCommand(c)));

async function clientBucket(): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  for await (const [k, v] of tmp.db.iterator(bucketRange(SessionsBucket.client))) out.push([k.toString('hex'), v.toString('hex')]);
  return out;
}

describe('the commands', () => {
  it('need command version 9 when they name a member, and no more than before when they do not', () => {
    const version = (c: Command | FamilyCommand): unknown => (unpack(encodeCommand(c)) as { v: number }).v;
    expect(HOLDERS_SINCE).toBe(9);
    expect(version(open('a'))).toBe(1);
    expect(version(open('a', 'n2'))).toBe(HOLDERS_SINCE);
    expect(version(attach('a', 'n2'))).toBe(HOLDERS_SINCE);
    expect(decodeEntryCommand(encodeCommand(attach('a', 'n2'))).command).toEqual({ op: 'attachSession', session: 'a', member: 'n2' });
  });

  it('attachSession names its family: the first families’ unnamed ops stay the ones they had', () => {
    expect(() => encodeCommand({ op: 'attachSession', session: 'a', member: 'n2' } as unknown as Command)).toThrow(UnknownCommandError);
  });

  it('refuse a member that is not a member id', () => {
    for (const member of ['', '-n1', 'a b', 'x'.repeat(65), 7]) {
      expect(() => encodeCommand(attach('a', member as string))).toThrow(CommandError);
      expect(() => encodeCommand({ ...open('a'), member } as Command)).toThrow(CommandError);
    }
  });
});

describe('applying them', () => {
  it('openSession records the member; attachSession moves the session to another, keeping everything else', async () => {
    expect((await apply(open('a', 'n1'))).result).toEqual({ ok: true, op: 'openSession', session: 'a' });
    expect(liveSessions(sm).get('a')).toEqual({ timeoutMs: 5000, remote: '10.0.0.1:1', member: 'n1' });
    expect((await apply(attach('a', 'n2'))).result).toEqual({ ok: true, op: 'family', family: 'sessions', value: { session: 'a', member: 'n2' } });
    expect(liveSessions(sm).get('a')).toEqual({ timeoutMs: 5000, remote: '10.0.0.1:1', member: 'n2' });
    const [[, value]] = (await clientBucket()) as [[string, string]];
    expect(decodeClientValue(Buffer.from(value, 'hex'))).toEqual({ timeoutMs: 5000, remote: '10.0.0.1:1', member: 'n2' });
    // The session still counts once against its address (quota 2): one more fits, a third does not.
    expect((await apply(open('bb'))).result.ok).toBe(true);
    expect((await apply(open('cc'))).result).toMatchObject({ ok: false, code: 'QUOTA_EXCEEDED' });
  });

  it('a session opened without a member takes one when attached', async () => {
    await apply(open('a'));
    expect(liveSessions(sm).get('a')?.member).toBeUndefined();
    await apply(attach('a', 'n3'));
    expect(liveSessions(sm).get('a')?.member).toBe('n3');
  });

  it('attachSession of a session that is not live fails with SESSION_EXPIRED and writes nothing', async () => {
    await apply(open('a', 'n1'));
    await apply({ op: 'closeSession', session: 'a', reason: 'expired' });
    const before = await clientBucket();
    for (const session of ['a', 'never']) {
      const out = await apply(attach(session, 'n2'));
      expect(out.result).toMatchObject({ ok: false, code: 'SESSION_EXPIRED' });
      expect(out.events).toEqual([]);
    }
    expect(await clientBucket()).toEqual(before);
    expect(liveSessions(sm).size).toBe(0);
  });

  it('a restart reloads the holders', async () => {
    await apply(open('a', 'n1'));
    await apply(open('bb'));
    await apply(attach('bb', 'n2'));
    const reopened = await StateMachine.open(await tmp.reopen(), REGISTRY);
    expect(reopened.stateOf(sessions).sessions.get('a')?.member).toBe('n1');
    expect(reopened.stateOf(sessions).sessions.get('bb')?.member).toBe('n2');
  });
});

describe('every member alike', () => {
  it('two state machines fed the same entries, one at a time and in one batch, give the same results and bytes', async () => {
    const entries: Entry[] = [
      open('a', 'n1'),
      open('bb'),
      attach('a', 'n2'),
      attach('bb', 'n3'),
      attach('zz', 'n1'), // not live
      open('cc', 'n2'),
      attach('cc', 'n1'),
      { op: 'closeSession', session: 'a', reason: 'bye' },
      attach('a', 'n1'), // closed
      open('a', 'n3'),
    ].map((c) => feed.raw(encodeCommand(c as Command | FamilyCommand)));
    const other = await openTempDb();
    try {
      const batched = await StateMachine.open(other.db, REGISTRY);
      const one: unknown[] = [];
      for (const e of entries) one.push((await sm.apply(e)).result);
      const many = (await batched.applyMany(entries)).map((o) => o.result);
      expect(many).toEqual(one);
      expect(await batched.digest()).toBe(await sm.digest());
      expect(await dumpDb(other.db)).toEqual(await dumpDb(tmp.db));
      expect([...liveSessions(batched)]).toEqual([...liveSessions(sm)]);
    } finally {
      await other.cleanup();
    }
  });
});

describe('stored values', () => {
  it('a record without a member encodes exactly as before the field existed, and decodes without one', () => {
    const legacy = pack({ timeoutMs: 5000, remote: '10.0.0.1:5', resumeHash: 'ab'.repeat(32), principal: 'ann' });
    const info = decodeClientValue(legacy);
    expect(info).toEqual({ timeoutMs: 5000, remote: '10.0.0.1:5', resumeHash: 'ab'.repeat(32), principal: 'ann' });
    expect('member' in info).toBe(false);
    expect(Buffer.from(encodeClientValue(info)).equals(legacy)).toBe(true);
  });

  it('a record with a member keeps it, and one whose member is not a string is corrupt', () => {
    const info = { timeoutMs: 5000, remote: 'r', member: 'n2' };
    expect(decodeClientValue(encodeClientValue(info))).toEqual(info);
    expect(() => decodeClientValue(pack({ timeoutMs: 5000, remote: 'r', member: 2 }))).toThrow(/member that is not a string/);
  });
});
