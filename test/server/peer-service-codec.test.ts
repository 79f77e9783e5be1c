// The peer service's messages are decoded as strictly as Raft messages: exact fields,
// types and sizes; anything else is a PeerProtocolError.
import { describe, expect, it } from 'vitest';
import { packFrame, PeerProtocolError } from '../../src/raft/transport/codec.js';
import { decodeServiceMessage, encodeServiceMessage, type ServiceMessage } from '../../src/server/peer-service/codec.js';

describe('peer service codec', () => {
  it.each<ServiceMessage>([
    { k: 'fwd', id: 1, rid: 'n2/tag/1', body: new Uint8Array([0x81, 0xa1, 0x76, 0x09]) },
    { k: 'fwdOk', id: 7, index: 42, term: 3 },
    { k: 'fwdErr', id: 8, code: 'NOT_LEADER', message: 'not leader', notProposed: true, leader: 'n3' },
    { k: 'fwdErr', id: 9, code: 'UNAVAILABLE', message: '', notProposed: true, retryAfterMs: 200 },
  ])('round-trips %o', (m) => {
    const decoded = decodeServiceMessage(encodeServiceMessage(m));
    expect(decoded.k === 'fwd' ? { ...decoded, body: [...decoded.body] } : decoded).toEqual(m.k === 'fwd' ? { ...m, body: [...m.body] } : m);
  });

  it.each([
    ['not a map', [1, 2]],
    ['an unknown kind', { k: 'fwd2', id: 1 }],
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
  ])('refuses %s', (_what, value) => {
    expect(() => decodeServiceMessage(packFrame(value))).toThrow(PeerProtocolError);
  });

  it('refuses bytes that are not MessagePack', () => {
    expect(() => decodeServiceMessage(new Uint8Array([0xc1]))).toThrow(PeerProtocolError);
  });
});
