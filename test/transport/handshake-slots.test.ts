import { describe, expect, it } from 'vitest';
import { decideHandshakeSlot, remoteIp, type PendingHandshake } from '../../src/raft/transport/handshake-slots.js';

const MEMBER = '10.0.0.1';
const isMember = (address: string): boolean => address === MEMBER;
const limits = { total: 4, perAddress: 2 };

function conn(address: string, progressed = false): PendingHandshake & { name: string } {
  return { address, progressed, name: `${address}${progressed ? '+hello' : ''}` };
}

describe('decideHandshakeSlot', () => {
  it('admits while there is room and the address is under its quota', () => {
    expect(decideHandshakeSlot([], '192.0.2.1', isMember, limits)).toEqual({ kind: 'admit' });
    expect(decideHandshakeSlot([conn('192.0.2.1')], '192.0.2.1', isMember, limits)).toEqual({ kind: 'admit' });
  });

  it('refuses a stranger address over its quota even with room left', () => {
    const decision = decideHandshakeSlot([conn('192.0.2.1'), conn('192.0.2.1')], '192.0.2.1', isMember, limits);
    expect(decision.kind).toBe('refuse');
  });

  it('exempts a member address from the per-address quota', () => {
    expect(decideHandshakeSlot([conn(MEMBER), conn(MEMBER)], MEMBER, isMember, limits)).toEqual({ kind: 'admit' });
  });

  it('when full, evicts strangers before member addresses, the silent before those that sent a hello, the oldest first', () => {
    const oldMember = conn(MEMBER);
    const helloStranger = conn('192.0.2.1', true);
    const silentStranger = conn('192.0.2.2');
    const laterSilentStranger = conn('192.0.2.3');
    const pending = [oldMember, helloStranger, silentStranger, laterSilentStranger];
    expect(decideHandshakeSlot(pending, MEMBER, isMember, limits)).toEqual({ kind: 'evict', victim: silentStranger });
    expect(decideHandshakeSlot([oldMember, helloStranger, conn(MEMBER, true), conn(MEMBER)], MEMBER, isMember, limits)).toEqual({ kind: 'evict', victim: helloStranger });
    const members = [conn(MEMBER, true), conn(MEMBER), conn(MEMBER, true), conn(MEMBER)];
    expect(decideHandshakeSlot(members, MEMBER, isMember, limits)).toEqual({ kind: 'evict', victim: members[1] });
  });

  it('never lets a stranger evict a connection from a member address', () => {
    const members = [conn(MEMBER), conn(MEMBER), conn(MEMBER), conn(MEMBER)];
    expect(decideHandshakeSlot(members, '192.0.2.9', isMember, limits).kind).toBe('refuse');
    const mixed = [conn(MEMBER), conn('192.0.2.1', true), conn(MEMBER), conn(MEMBER)];
    expect(decideHandshakeSlot(mixed, '192.0.2.9', isMember, limits)).toEqual({ kind: 'evict', victim: mixed[1] });
  });

  it('writes IPv4-mapped IPv6 addresses as IPv4', () => {
    expect(remoteIp('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(remoteIp('::1')).toBe('::1');
    expect(remoteIp(undefined)).toBe('?');
  });
});
