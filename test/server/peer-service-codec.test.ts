// The peer service's messages are decoded as strictly as Raft messages: exact fields,
// types and sizes; anything else is a PeerProtocolError.
import { describe, expect, it } from 'vitest';
import { packFrame, PeerProtocolError } from '../../src/raft/transport/codec.js';
import fc from 'fast-check';
import { BadServiceFields, decodeServiceMessage, encodeServiceMessage, MAX_RELAYED_BYTES, type ServiceMessage } from '../../src/server/peer-service/codec.js';

describe('peer service codec', () => {
  it.each<ServiceMessage>([
    { k: 'fwd', id: 1, rid: 'n2/tag/1', body: new Uint8Array([0x81, 0xa1, 0x76, 0x09]) },
    { k: 'fwdOk', id: 7, index: 42, term: 3 },
    { k: 'fwdErr', id: 8, code: 'NOT_LEADER', message: 'not leader', notProposed: true, leader: 'n3' },
    { k: 'fwdErr', id: 9, code: 'UNAVAILABLE', message: '', notProposed: true, retryAfterMs: 200 },
    { k: 'op', id: 3, session: 's1', principal: 'alice', remote: '10.0.0.1:5000', frameBytes: 40, req: new Uint8Array([0x81, 0xa2, 0x6f, 0x70, 0xa1, 0x78]) },
    { k: 'op', id: 4, session: 's1', remote: '', frameBytes: 0, req: new Uint8Array([0x80]) },
    { k: 'op', id: 5, session: '', remote: '10.0.0.1:5000', frameBytes: 9, req: new Uint8Array([0x80]) },
    { k: 'opOk', id: 3, result: new Uint8Array([0x80]), index: 0 },
    { k: 'opErr', id: 4, code: 'NOT_LEADER', message: 'no', notRun: true, index: 12, leader: 'n1' },
    { k: 'opErr', id: 5, code: 'UNAVAILABLE', message: 'busy', notRun: true, index: 12, retryAfterMs: 200, reason: 'not-proposed' },
  ])('round-trips %o', (m) => {
    const plain = (x: ServiceMessage): unknown => Object.fromEntries(Object.entries(x).map(([k, v]) => [k, v instanceof Uint8Array ? [...v] : v]));
    expect(plain(decodeServiceMessage(encodeServiceMessage(m)))).toEqual(plain(m));
  });

  it.each([
    ['a missing field', { k: 'fwdOk', id: 1, index: 2 }],
    ['an extra field', { k: 'fwdOk', id: 1, index: 2, term: 1, x: 0 }],
    ['a negative id', { k: 'fwdOk', id: -1, index: 2, term: 1 }],
    ['index 0', { k: 'fwdOk', id: 1, index: 0, term: 1 }],
    ['a body that is not binary', { k: 'fwd', id: 1, rid: 'r', body: 'x' }],
    ['an empty request id', { k: 'fwd', id: 1, rid: '', body: new Uint8Array(1) }],
    ['a long request id', { k: 'fwd', id: 1, rid: 'r'.repeat(321), body: new Uint8Array(1) }],
    ['an unknown error code', { k: 'fwdErr', id: 1, code: 'OOPS', message: 'm', notProposed: true }],
    ['a non-boolean notProposed', { k: 'fwdErr', id: 1, code: 'UNAVAILABLE', message: 'm', notProposed: 1 }],
    ['a bad leader id', { k: 'fwdErr', id: 1, code: 'NOT_LEADER', message: 'm', notProposed: true, leader: '' }],
    ['an op without its session', { k: 'op', id: 1, remote: '', frameBytes: 0, req: new Uint8Array(1) }],
    ['an op with a session id past its bound', { k: 'op', id: 1, session: 's'.repeat(129), remote: '', frameBytes: 0, req: new Uint8Array(1) }],
    ['an op whose principal is null', { k: 'op', id: 1, session: 's', principal: null, remote: '', frameBytes: 0, req: new Uint8Array(1) }],
    ['an op whose request is not binary', { k: 'op', id: 1, session: 's', remote: '', frameBytes: 0, req: { op: 'x' } }],
    ['an op whose request is past the bound', { k: 'op', id: 1, session: 's', remote: '', frameBytes: 0, req: new Uint8Array(MAX_RELAYED_BYTES + 1) }],
    ['an opOk without its index', { k: 'opOk', id: 1, result: new Uint8Array(1) }],
    ['an opOk with an extra field', { k: 'opOk', id: 1, result: new Uint8Array(1), index: 1, term: 2 }],
    ['an opErr without notRun', { k: 'opErr', id: 1, code: 'UNAVAILABLE', message: 'm', index: 1 }],
    ['an opErr with a long reason', { k: 'opErr', id: 1, code: 'UNAVAILABLE', message: 'm', notRun: false, index: 1, reason: 'r'.repeat(65) }],
  ])('refuses %s, keeping the link (a known kind)', (_what, value) => {
    expect(() => decodeServiceMessage(packFrame(value))).toThrow(BadServiceFields);
  });

  it.each([
    ['not a map', [1, 2]],
    ['an unknown kind', { k: 'fwd2', id: 1 }],
    ['no kind', { id: 1 }],
  ])('refuses %s as a PeerProtocolError (the link drops)', (_what, value) => {
    expect(() => decodeServiceMessage(packFrame(value))).toThrow(PeerProtocolError);
  });

  it('a bad field names the kind, and the id when readable', () => {
    const err = (() => {
      try {
        decodeServiceMessage(packFrame({ k: 'op', id: 9, session: 's', remote: '', frameBytes: -1, req: new Uint8Array(1) }));
      } catch (e) {
        return e;
      }
    })();
    expect(err).toMatchObject({ kind: 'op', id: 9 });
  });

  it('every answer a handler can make encodes to something the decoder takes', () => {
    const text = fc.oneof(fc.string({ maxLength: 400 }), fc.string({ unit: 'binary', maxLength: 400 }));
    const retry = fc.option(fc.oneof(fc.double(), fc.integer(), fc.constant(Number.MAX_VALUE)), { nil: undefined });
    fc.assert(
      fc.property(text, fc.option(text, { nil: undefined }), retry, fc.boolean(), (message, reason, retryAfterMs, asRelay) => {
        const m: ServiceMessage = asRelay
          ? { k: 'opErr', id: 1, code: 'CONFLICT', message, notRun: false, index: 3, ...(reason === undefined ? {} : { reason }), ...(retryAfterMs === undefined ? {} : { retryAfterMs }) }
          : { k: 'fwdErr', id: 1, code: 'CONFLICT', message, notProposed: true, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
        const back = decodeServiceMessage(encodeServiceMessage(m));
        expect(back.k).toBe(m.k);
      }),
      { numRuns: 100 },
    );
    const hinted = decodeServiceMessage(encodeServiceMessage({ k: 'opErr', id: 1, code: 'CONFLICT', message: 'm', notRun: false, index: 1, reason: 'r'.repeat(66), retryAfterMs: 2.5 }));
    expect(hinted).toEqual({ k: 'opErr', id: 1, code: 'CONFLICT', message: 'm', notRun: false, index: 1, retryAfterMs: 3 });
  });

  it('refuses bytes that are not MessagePack', () => {
    expect(() => decodeServiceMessage(new Uint8Array([0xc1]))).toThrow(PeerProtocolError);
  });
});
