// The envelope's request id `r` (docs/scale-out.md, stage 1 step 2): carried only by
// entries naming command version REQUEST_ID_SINCE or later, stripped before the op's
// fields are checked, handed back with the ApplyOutcome; the leader completes a
// forwarded body with its clock and `r` without re-encoding it.
import { afterEach, describe, expect, it } from 'vitest';
import { pack, unpack } from '../../src/statemachine/codec.js';
import {
  CommandError,
  completeEnvelope,
  decodeEntryCommand,
  encodeEntryCommand,
  encodeForwardBody,
  readForwardEnvelope,
  REQUEST_ID_SINCE,
} from '../../src/families/commands.js';
import type { Command } from '../../src/families/core-commands.js';
import { COMMAND_VERSION, REGISTRY } from '../../src/families/registry.js';
import { StateMachine } from '../../src/statemachine/state-machine.js';
import { dumpDb, openTempDb, type TempDb } from './helpers.js';

const T = 1_764_000_000_000;
const RID = 'n2/k3x9-1/17';
const open: Command = { op: 'openSession', session: 's1', timeoutMs: 10_000, remote: 't' };
const push: Command = { op: 'push', session: 's1', path: '/jobs', data: { n: 1 }, persistent: true, watch: false };

const temps: TempDb[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((t) => t.cleanup()));
});

describe('the request id in the entry envelope', () => {
  it('is a version this build applies', () => {
    expect(REQUEST_ID_SINCE).toBeLessThanOrEqual(COMMAND_VERSION);
  });

  it('names at least REQUEST_ID_SINCE and decodes back, with the same command as without it', () => {
    const plain = encodeEntryCommand(push, T);
    const withId = encodeEntryCommand(push, T, RID);
    expect(plain.version).toBeLessThan(REQUEST_ID_SINCE);
    expect(withId.version).toBe(REQUEST_ID_SINCE);
    expect((unpack(withId.bytes) as Record<string, unknown>).v).toBe(REQUEST_ID_SINCE);
    // A copy, as read back from the log: not the proposer's cache.
    const decoded = decodeEntryCommand(Uint8Array.from(withId.bytes));
    expect(decoded.r).toBe(RID);
    expect(decoded.t).toBe(T);
    expect(decoded.command).toEqual(decodeEntryCommand(Uint8Array.from(plain.bytes)).command);
    expect(decodeEntryCommand(Uint8Array.from(plain.bytes)).r).toBeUndefined();
    // The proposer's cache gives the same.
    expect(decodeEntryCommand(withId.bytes).r).toBe(RID);
  });

  it('leaves the bytes of an entry without r exactly as before r existed', () => {
    const { bytes } = encodeEntryCommand(push, T);
    expect(Buffer.from(bytes)).toEqual(pack({ v: 1, family: 'lists', op: 'push', t: T, session: 's1', path: '/jobs', data: { n: 1 }, persistent: true, watch: false }));
  });

  it('refuses r in an entry naming an older version, as the members that do not know r refuse it', () => {
    const bytes = pack({ v: REQUEST_ID_SINCE - 1, family: 'lists', op: 'push', t: T, r: RID, session: 's1', path: '/jobs', data: 1, persistent: true, watch: false });
    expect(() => decodeEntryCommand(bytes)).toThrow(new CommandError("push has an unexpected field 'r'"));
  });

  it.each([
    ['a number', 7],
    ['an empty string', ''],
    ['a long string', 'x'.repeat(321)],
  ])('refuses a request id that is %s', (_what, r) => {
    const bytes = pack({ v: REQUEST_ID_SINCE, family: 'lists', op: 'push', t: T, r, session: 's1', path: '/jobs', data: 1, persistent: true, watch: false });
    expect(() => decodeEntryCommand(bytes)).toThrow(CommandError);
    expect(() => encodeEntryCommand(push, T, r as string)).toThrow(CommandError);
  });

  it('hands r back with the outcome of the entry that carries it, and only that one', async () => {
    const tmp = await openTempDb();
    temps.push(tmp);
    const sm = await StateMachine.open(tmp.db, REGISTRY);
    const opened = await sm.apply({ index: 1, term: 1, kind: 'command', data: encodeEntryCommand(open, T).bytes });
    expect('r' in opened).toBe(false);
    const pushed = await sm.apply({ index: 2, term: 1, kind: 'command', data: Uint8Array.from(encodeEntryCommand(push, T, RID).bytes) });
    expect(pushed).toMatchObject({ index: 2, r: RID, result: { ok: true } });
  });

  it('applies a forwarded entry to the same state as the leader-made one', async () => {
    const [a, b] = [await openTempDb(), await openTempDb()];
    temps.push(a, b);
    const [smA, smB] = [await StateMachine.open(a.db, REGISTRY), await StateMachine.open(b.db, REGISTRY)];
    const first = { index: 1, term: 1, kind: 'command' as const, data: encodeEntryCommand(open, T).bytes };
    await smA.apply(first);
    await smB.apply({ ...first, data: Uint8Array.from(first.data) });
    const made = await smA.apply({ index: 2, term: 1, kind: 'command', data: encodeEntryCommand(push, T + 5, RID).bytes });
    const completed = await smB.apply({ index: 2, term: 1, kind: 'command', data: completeEnvelope(encodeForwardBody(push).bytes, T + 5, RID) });
    expect(completed).toEqual(made);
    expect(await dumpDb(b.db)).toEqual(await dumpDb(a.db));
  });
});

describe('forwarded bodies', () => {
  it('carry no t or r, and the leader reads their envelope', () => {
    const body = encodeForwardBody(push);
    expect(body.version).toBe(REQUEST_ID_SINCE);
    const fields = unpack(body.bytes) as Record<string, unknown>;
    expect('t' in fields || 'r' in fields).toBe(false);
    // With the op's fields as its decoder checked them: what the desk judges a forward by.
    expect(readForwardEnvelope(body.bytes)).toEqual({ v: REQUEST_ID_SINCE, family: 'lists', op: 'push', command: expect.objectContaining({ op: 'push', session: push.session, path: push.path }) });
  });

  it.each([
    ['not MessagePack', Buffer.from([0xc1])],
    ['not a map', pack([1, 2])],
    ['a t of its own', pack({ v: REQUEST_ID_SINCE, family: 'lists', op: 'push', t: 1 })],
    ['an r of its own', pack({ v: REQUEST_ID_SINCE, family: 'lists', op: 'push', r: 'x' })],
    ['a version below REQUEST_ID_SINCE', pack({ v: REQUEST_ID_SINCE - 1, family: 'lists', op: 'push' })],
    ['no family', pack({ v: REQUEST_ID_SINCE, op: 'push' })],
    // An op no member knows would stop every member at apply.
    ['an unknown op', pack({ v: REQUEST_ID_SINCE, family: 'nope', op: 'x' })],
    ['an unknown op of a known family', pack({ v: REQUEST_ID_SINCE, family: 'lists', op: 'explode' })],
    ['a field its op does not have', pack({ v: REQUEST_ID_SINCE, family: 'lists', op: 'push', session: 's1', path: '/jobs', data: 1, persistent: true, watch: false, colour: 'red' })],
    ['a field of the wrong type', pack({ v: REQUEST_ID_SINCE, family: 'lists', op: 'push', session: 's1', path: 42, data: 1, persistent: true, watch: false })],
    // Members of different versions would judge it differently: refused unless v is exactly what it needs.
    ['a version above what its fields need', pack({ ...(unpack(encodeForwardBody(push).bytes) as Record<string, unknown>), v: REQUEST_ID_SINCE + 1 })],
  ])('are refused with %s', (_what, body) => {
    expect(() => readForwardEnvelope(body)).toThrow(CommandError);
  });

  it.each([1, 14, 15, 40, 70_000])('are completed with t and r whatever the size of their map header (%i fields)', (n) => {
    const fields: Record<string, unknown> = { v: REQUEST_ID_SINCE, family: 'lists', op: 'push' };
    for (let i = 0; i < n; i++) fields[`f${i}`] = i;
    const completed = unpack(completeEnvelope(pack(fields), T, RID)) as Record<string, unknown>;
    expect(completed).toEqual({ ...fields, t: T, r: RID });
  });
});
