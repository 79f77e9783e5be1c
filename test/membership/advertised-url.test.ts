// hello's `members` names a member by the address book's client address (the `--peers` host
// with its client port), as followers' NOT_LEADER hints do, never by a wildcard bind address
// a client would take for its own machine (docs/protocol.md, `role` and `members`).
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { isWildcardHost, MemberDirectory } from '../../src/server/admin/membership.js';

const logger = pino({ level: 'silent' });
const noop = (): void => undefined;

function directory(selfUrl: string): MemberDirectory {
  return new MemberDirectory('n1', [], () => selfUrl, null, noop, logger);
}

describe("hello's members", () => {
  it("use the book's host and client port, not the bind address", async () => {
    const d = directory('ws://0.0.0.0:1919');
    await d.update([{ id: 'n1', voter: true, address: { host: '10.0.0.1', peerPort: 2919, clientPort: 1919 } }]);
    expect(d.servingUrls('n1')).toEqual(['ws://10.0.0.1:1919']);
  });

  it('leave out a member whose only known address is a wildcard', async () => {
    for (const host of ['0.0.0.0', '::']) {
      const d = directory('ws://127.0.0.1:1919');
      await d.update([{ id: 'n1', voter: true, address: { host, peerPort: 2919, clientPort: 1919 } }]);
      expect(d.servingUrls('n1'), host).toEqual([]);
    }
    for (const bound of ['ws://0.0.0.0:1919', 'ws://[::]:1919']) expect(directory(bound).servingUrls('n1'), bound).toEqual([]);
  });

  it("fall back to this member's own bind address while the book has none for it, and name no leader that is unknown", () => {
    expect(directory('ws://127.0.0.1:1919').servingUrls('n1')).toEqual(['ws://127.0.0.1:1919']);
    expect(directory('ws://127.0.0.1:1919').servingUrls('n2')).toEqual([]);
    expect(directory('ws://127.0.0.1:1919').servingUrls(null)).toEqual([]);
  });

  it('tell wildcard hosts from dialable ones', () => {
    for (const host of ['0.0.0.0', '::', '[::]', '::0', '0:0:0:0:0:0:0:0', '']) expect(isWildcardHost(host), host).toBe(true);
    for (const host of ['127.0.0.1', '::1', '[::1]', 'example.org', '10.0.0.0']) expect(isWildcardHost(host), host).toBe(false);
  });
});
