// The client's side of scale-out (docs/scale-out.md, stage 1): hello's `role` and
// `members`, the ring of servers that starts at a random position and learns the
// members, and close code 4009 (leaderUnreachable).
import { describe, expect, it } from 'vitest';
import { checkResult } from '../../src/client/results.js';
import { CloseCode } from '../../src/protocol/index.js';

const HELLO = { session: 's1', timeoutMs: 10_000, node: 'n1', leader: 'n1', term: 1, index: 0 };

describe('hello result: role and members', () => {
  it('takes role and members, and roles this client does not know', () => {
    const members = ['ws://127.0.0.1:7001', 'wss://b.example:7002'];
    expect(checkResult('hello', { ...HELLO, role: 'follower', members })).toMatchObject({ role: 'follower', members });
    expect(checkResult('hello', { ...HELLO, role: 'witness' }).role).toBe('witness');
    expect(checkResult('hello', HELLO).members).toBeUndefined();
  });

  it.each([
    ['a role that is not a string', { role: 1 }, /role is not a string/],
    ['members that are not a list', { members: 'ws://127.0.0.1:7001' }, /members is not a list of strings/],
    ['members that are not all strings', { members: ['ws://127.0.0.1:7001', 7] }, /members is not a list of strings/],
  ])('refuses %s as a malformed reply (INTERNAL)', (_what, extra, message) => {
    expect(() => checkResult('hello', { ...HELLO, ...extra })).toThrow(message);
  });

  it('has the close code 4009 for a member that cannot reach the leader', () => {
    expect(CloseCode.leaderUnreachable).toBe(4009);
  });
});
