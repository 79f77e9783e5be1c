import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import {
  decodeMessages,
  encodeMessages,
  estimateMessageBytes,
  frameOverheadBytes,
  PeerProtocolError,
} from '../../src/raft/transport/codec.js';
import type { Message } from '../../src/raft/types.js';
import { messageArb } from './arbitraries.js';

// An independent packer, so the malformed frames below do not depend on the codec's own encoder.
const packr = new Packr({ useRecords: false, variableMapSize: true });
const pack = (v: unknown): Buffer => packr.pack(v);

describe('peer codec round trip', () => {
  it('decodes what it encodes, for arbitrary valid messages and batches', () => {
    fc.assert(
      fc.property(fc.array(messageArb, { minLength: 1, maxLength: 5 }), (messages) => {
        expect(decodeMessages(encodeMessages(messages))).toEqual(messages);
      }),
      { numRuns: 500 },
    );
  });

  it('never encodes a message bigger than its size estimate', () => {
    fc.assert(
      fc.property(messageArb, (m) => {
        expect(encodeMessages([m]).byteLength).toBeLessThanOrEqual(frameOverheadBytes() + estimateMessageBytes(m));
      }),
      { numRuns: 500 },
    );
  });

  it('sends only the fields of the message type, not stray properties', () => {
    const m = { type: 'timeoutNow', from: 'n1', to: 'n2', term: 3, secret: 'do not leak' } as Message;
    expect(decodeMessages(encodeMessages([m]))).toEqual([{ type: 'timeoutNow', from: 'n1', to: 'n2', term: 3 }]);
  });

  it('returns entry data as plain Uint8Arrays that do not share memory with the frame', () => {
    const m: Message = {
      type: 'app', from: 'n1', to: 'n2', term: 2, prevIndex: 0, prevTerm: 0, commit: 0,
      entries: [{ index: 1, term: 2, kind: 'command', data: new Uint8Array([1, 2, 3]) }],
    };
    const frame = encodeMessages([m]);
    const [decoded] = decodeMessages(frame);
    if (decoded?.type !== 'app') throw new Error('expected an append');
    const data = decoded.entries[0]!.data;
    expect(Object.getPrototypeOf(data)).toBe(Uint8Array.prototype);
    frame.fill(0);
    expect([...data]).toEqual([1, 2, 3]);
  });
});

describe('peer codec rejects malformed frames', () => {
  const heartbeat = { type: 'heartbeat', from: 'n1', to: 'n2', term: 1, commit: 0, context: '' };
  const entry = { index: 6, term: 2, kind: 'command', data: Buffer.from('x') };
  const app = { type: 'app', from: 'n1', to: 'n2', term: 3, prevIndex: 5, prevTerm: 2, entries: [entry], commit: 4 };
  const snapshot = {
    type: 'snapshot', from: 'n1', to: 'n2', term: 1, offset: 0, chunk: Buffer.from('s'), done: true, checksum: '',
    meta: { index: 1, term: 1, config: { voters: ['n1'], learners: [] } },
  };
  const frame = (...messages: unknown[]): Buffer => pack({ t: 'msgs', m: messages });
  const withEntry = (e: Record<string, unknown>): Buffer => frame({ ...app, entries: [{ ...entry, ...e }] });

  const cases: Array<[string, Buffer, RegExp]> = [
    ['truncated MessagePack', Buffer.from([0x82, 0xa1, 0x74]), /not valid MessagePack/],
    ['the reserved MessagePack byte 0xc1', Buffer.from([0xc1]), /frame must be a map/],
    ['an empty frame', Buffer.alloc(0), /not valid MessagePack/],
    ['trailing bytes after the frame', Buffer.concat([frame(heartbeat), Buffer.from([0x01])]), /not valid MessagePack/],
    ['a frame that is not a map', pack([heartbeat]), /frame must be a map/],
    ['a handshake frame', pack({ t: 'proof', m: [] }), /frame.t must be 'msgs'/],
    ['a frame with an extra field', pack({ t: 'msgs', m: [heartbeat], x: 1 }), /unexpected field "x"/],
    ['a frame whose m is not an array', pack({ t: 'msgs', m: heartbeat }), /frame.m must be an array/],
    ['a frame with no messages', frame(), /must not be empty/],
    ['a message that is not a map', frame('hello'), /must be a map/],
    ['a null message', frame(null), /must be a map/],
    ['a message that decodes to a Date', frame(new Date(0)), /must be a map/],
    ['an unknown message type', frame({ ...heartbeat, type: 'install' }), /not a known message type/],
    ['a prototype property as type', frame({ ...heartbeat, type: 'toString' }), /not a known message type/],
    ['a missing field', frame({ type: 'heartbeat', from: 'n1', to: 'n2', term: 1, commit: 0 }), /context is missing/],
    ['an unknown field', frame({ ...heartbeat, extra: true }), /unexpected field "extra"/],
    ['a negative term', frame({ ...heartbeat, term: -1 }), /term must be a non-negative safe integer/],
    ['a fractional term', frame({ ...heartbeat, term: 1.5 }), /term must be a non-negative safe integer/],
    ['a term above 2^53', frame({ ...heartbeat, term: 2 ** 53 }), /term must be a non-negative safe integer/],
    ['a NaN commit', frame({ ...heartbeat, commit: NaN }), /commit must be a non-negative safe integer/],
    ['a term given as a string', frame({ ...heartbeat, term: '1' }), /term must be a non-negative safe integer/],
    ['an empty from', frame({ ...heartbeat, from: '' }), /from must be a non-empty string/],
    ['a numeric to', frame({ ...heartbeat, to: 2 }), /to must be a non-empty string/],
    ['a 256-byte node id', frame({ ...heartbeat, from: 'x'.repeat(256) }), /longer than 255 bytes/],
    ['a 1025-byte context', frame({ ...heartbeat, context: 'c'.repeat(1025) }), /context is longer than 1024 bytes/],
    ['a transfer flag that is a number', frame({ type: 'vote', from: 'n1', to: 'n2', term: 1, lastLogIndex: 0, lastLogTerm: 0, transfer: 0 }), /transfer must be a boolean/],
    ['a reject flag that is null', frame({ type: 'voteResp', from: 'n1', to: 'n2', term: 1, reject: null }), /reject must be a boolean/],
    ['entries that are not an array', frame({ ...app, entries: entry }), /entries must be an array/],
    ['an entry of unknown kind', withEntry({ kind: 'bogus' }), /kind must be one of noop\|command\|config/],
    ['entry data given as a string', withEntry({ data: 'x' }), /data must be binary data/],
    ['entry data given as an array of numbers', withEntry({ data: [1, 2] }), /data must be binary data/],
    ['an entry with an extra field', withEntry({ extra: 1 }), /unexpected field "extra"/],
    ['an entry that does not follow prevIndex', withEntry({ index: 7 }), /index is 7, expected 6/],
    ['an entry term below prevTerm', withEntry({ term: 1 }), /term 1 is below the term before it/],
    ['an entry term above the message term', withEntry({ term: 4 }), /above the message term/],
    [
      'entry terms that decrease',
      frame({ ...app, entries: [{ ...entry, term: 3 }, { ...entry, index: 7, term: 2 }] }),
      /term 2 is below the term before it \(3\)/,
    ],
    ['prevTerm above the message term', frame({ ...app, prevTerm: 4, entries: [] }), /prevTerm 4 is above the message term/],
    ['a non-zero prevTerm at prevIndex 0', frame({ ...app, prevIndex: 0, prevTerm: 1, entries: [] }), /prevTerm must be 0/],
    ['a snapshot config with an empty voter id', frame({ ...snapshot, meta: { ...snapshot.meta, config: { voters: [''], learners: [] } } }), /voters\[0\] must be a non-empty string/],
    ['a snapshot config without learners', frame({ ...snapshot, meta: { ...snapshot.meta, config: { voters: ['n1'] } } }), /learners is missing/],
    ['a snapshot chunk that is a string', frame({ ...snapshot, chunk: 's' }), /chunk must be binary data/],
    ['a snapshot checksum that is not a sha256 digest', frame({ ...snapshot, checksum: 'abc' }), /checksum must be empty or a sha256 hex digest/],
    ['a valid message followed by a bad one', frame(heartbeat, { ...heartbeat, term: -1 }), /frame.m\[1\].term/],
  ];

  it.each(cases)('rejects %s', (_what, bytes, message) => {
    expect(() => decodeMessages(bytes)).toThrow(PeerProtocolError);
    expect(() => decodeMessages(bytes)).toThrow(message);
  });

  it('rejects a 64-bit integer beyond the safe range', () => {
    // {t:'msgs', m:[heartbeat with term = uint64 2^60]} written by hand: msgpackr would not emit it.
    const good = frame({ ...heartbeat, term: 7 });
    const at = good.indexOf(Buffer.from([0xa4, ...Buffer.from('term'), 0x07]));
    expect(at).toBeGreaterThan(0);
    const bad = Buffer.concat([good.subarray(0, at + 5), Buffer.from([0xcf, 0x10, 0, 0, 0, 0, 0, 0, 0]), good.subarray(at + 6)]);
    expect(() => decodeMessages(bad)).toThrow(/term must be a non-negative safe integer/);
  });

  it('turns any garbage into a PeerProtocolError, never another exception', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 200 }),
          fc.anything().map((v) => pack(v)),
          fc.anything().map((v) => frame(v)),
        ),
        (bytes) => {
          try {
            decodeMessages(bytes);
          } catch (err) {
            expect(err).toBeInstanceOf(PeerProtocolError);
            return;
          }
          // Decoding succeeded only if the bytes really were a valid frame: then it must round-trip.
          const again = decodeMessages(encodeMessages(decodeMessages(bytes)));
          expect(again).toEqual(decodeMessages(bytes));
        },
      ),
      { numRuns: 1000 },
    );
  });
});
