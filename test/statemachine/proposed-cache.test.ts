// A leader applies its own entries from what it encoded (commands.ts keeps the
// decoded command for the bytes it produced) and carries a push's data as the
// bytes it was measured in (protocol/packed.ts). Followers decode and re-encode.
// These properties hold the two paths to the same bytes: the entry, every db
// key and value, and the reply and notify frames in both encodings.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { packValue } from '../../src/protocol/msgpack.js';
import { encodeNotify, encodeReply } from '../../src/protocol/client-frames.js';
import { DEFAULT_LIMITS, type JsonValue } from '../../src/protocol/types.js';
import { packData, PackedValue } from '../../src/protocol/index.js';
import { decodeEntryCommand, encodeCommand } from '../../src/families/commands.js';
import { type Command } from '../../src/families/core-commands.js';
import { StateMachine } from '../../src/statemachine/state-machine.js';
import type { Entry } from '../../src/raft/types.js';
import type { ApplyOutcome } from '../../src/statemachine/types.js';
import { wireData } from '../support/arbitraries.js';
import { dumpDb, openTempDb } from './helpers.js';
import { getList } from '../../src/families/lists/queries.js';
import { REGISTRY } from '../../src/families/registry.js';

const T = 1_764_000_000_000;

// Numbers at the edges of msgpackr's integer and float forms, beside ordinary JSON values.
const edgeNumber = fc.oneof(
  fc.constantFrom(0, -0, 1, -1, 127, 128, -32, -33, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, -(2 ** 31), -(2 ** 31) - 1, 2 ** 53 - 1, -(2 ** 53) + 1, 1e21, 0.1, -1.5e-300),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);
const data: fc.Arbitrary<JsonValue> = fc.oneof(
  wireData(4) as fc.Arbitrary<JsonValue>,
  edgeNumber,
  fc.array(edgeNumber, { maxLength: 8 }),
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc.dictionary(fc.constantFrom('1', '10', 'b', 'a', '0', '-1', 'é'), edgeNumber),
);

function push(session: string, value: unknown, persistent = true): Command {
  return { op: 'push', session, path: '/jobs', data: value, persistent, watch: true };
}

/** Outcomes as a client sees them: PackedValues become their values. */
function plain(outcome: ApplyOutcome): unknown {
  return JSON.parse(JSON.stringify(outcome)) as unknown;
}

describe('a pushed value carried as its bytes', () => {
  it('encodes inline to the same bytes as the plain value, alone and inside a frame, in both encodings', () => {
    fc.assert(
      fc.property(data, (value) => {
        const packed = packData(value, DEFAULT_LIMITS);
        expect(packed.bytes).toEqual(packValue(value));
        expect(packValue({ a: 1, data: packed, z: [packed] })).toEqual(packValue({ a: 1, data: value, z: [value] }));
        expect(JSON.stringify({ data: packed })).toBe(JSON.stringify({ data: value }));
        const item = { index: 7, owner: null, data: packed };
        for (const encoding of ['msgpack', 'json'] as const) {
          expect(encodeReply(3, { item } as never, encoding)).toEqual(encodeReply(3, { item: { ...item, data: value } } as never, encoding));
          expect(encodeNotify({ events: [{ index: 9, type: 'push', path: '/p', item }] } as never, encoding)).toEqual(
            encodeNotify({ events: [{ index: 9, type: 'push', path: '/p', item: { ...item, data: value } }] } as never, encoding),
          );
        }
        expect(encodeCommand(push('s', packed), T)).toEqual(encodeCommand(push('s', value), T));
      }),
      { numRuns: 300 },
    );
  });

  it('is refused past the data limit, measured in the same bytes', () => {
    const limits = { ...DEFAULT_LIMITS, dataBytes: 10 };
    expect(packData('123456789', limits).bytes.length).toBe(10);
    expect(() => packData('1234567890', limits)).toThrow(/11 bytes encoded as MessagePack; the limit is 10 bytes/);
  });
});

describe('the leader applies what it proposed without decoding it', () => {
  it('hands back the command it encoded once, then decodes the same bytes afresh', () => {
    const value = { job: 'x', n: 1 };
    const packed = packData(value, DEFAULT_LIMITS);
    const bytes = encodeCommand(push('s1', packed), T);
    const first = decodeEntryCommand(bytes);
    expect((first.command as unknown as { data: unknown }).data).toBe(packed);
    expect(first.t).toBe(T);
    const again = decodeEntryCommand(bytes);
    expect((again.command as unknown as { data: unknown }).data).toEqual(value);
    expect(again.command).toEqual({ ...first.command, data: value });
    expect(again.family).toBe(first.family);
  });

  it('a leader (its own bytes, data packed) and a follower (a copy of the bytes) write identical dbs, results and frames', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(data, fc.boolean(), fc.constantFrom('s1', 's2')), { minLength: 1, maxLength: 12 }),
        fc.boolean(),
        async (pushes, closeOne) => {
          const commands: Command[] = [
            { op: 'openSession', session: 's1', timeoutMs: 10_000, remote: 'test' },
            { op: 'openSession', session: 's2', timeoutMs: 10_000, remote: 'test' },
            ...pushes.map(([value, persistent, session]) => push(session, packData(value, DEFAULT_LIMITS), persistent)),
            ...(closeOne ? [{ op: 'closeSession', session: 's1', reason: 'bye' } as Command] : []),
          ];
          const [a, b] = [await openTempDb(), await openTempDb()];
          try {
            const [leader, follower] = [await StateMachine.open(a.db, REGISTRY), await StateMachine.open(b.db, REGISTRY)];
            for (const [i, command] of commands.entries()) {
              const bytes = encodeCommand(command, T + i);
              const entry = (data: Uint8Array): Entry => ({ index: i + 1, term: 1, kind: 'command', data });
              const [mine, theirs] = [await leader.apply(entry(bytes)), await follower.apply(entry(Buffer.from(bytes)))];
              expect(plain(mine)).toEqual(plain(theirs));
              // The leader took the cached path: its item still holds the packed bytes; the follower's does not.
              if (mine.result.ok && mine.result.op === 'push') {
                expect(mine.result.item.data).toBeInstanceOf(PackedValue);
                expect(theirs.result.ok && theirs.result.op === 'push' && theirs.result.item.data).not.toBeInstanceOf(PackedValue);
              }
              for (const encoding of ['msgpack', 'json'] as const) {
                if (mine.result.ok && mine.result.op === 'push' && theirs.result.ok && theirs.result.op === 'push') {
                  expect(encodeReply(1, { item: mine.result.item } as never, encoding)).toEqual(encodeReply(1, { item: theirs.result.item } as never, encoding));
                }
                expect(encodeNotify({ events: mine.events } as never, encoding)).toEqual(encodeNotify({ events: theirs.events } as never, encoding));
              }
            }
            expect(await dumpDb(a.db)).toEqual(await dumpDb(b.db));
          } finally {
            await a.cleanup();
            await b.cleanup();
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('keeps the packed bytes through the leader\'s apply: the stored value holds them', async () => {
    const tmp = await openTempDb();
    try {
      const sm = await StateMachine.open(tmp.db, REGISTRY);
      await sm.apply({ index: 1, term: 1, kind: 'command', data: encodeCommand({ op: 'openSession', session: 's1', timeoutMs: 10_000, remote: 't' }, T) });
      const packed = packData({ big: 'y'.repeat(100) }, DEFAULT_LIMITS);
      const out = await sm.apply({ index: 2, term: 1, kind: 'command', data: encodeCommand(push('s1', packed), T) });
      expect(out.result.ok && out.result.op === 'push' && out.result.item.data).toBeInstanceOf(PackedValue);
      expect((await getList(sm, '/jobs')).items.map((i) => i.data)).toEqual([{ big: 'y'.repeat(100) }]);
    } finally {
      await tmp.cleanup();
    }
  });
});
