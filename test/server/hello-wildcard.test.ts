// A member whose only known address is a wildcard (here its --peers host is 0.0.0.0)
// leaves itself out of hello's `members`, and `members` is left out when empty: a client
// that learnt ws://0.0.0.0:PORT would dial its own machine (review so8a-1, finding 1).
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, killAll, VeraProcess } from '../support/vera-process.js';
import { pollUntil } from '../support/poll.js';
import { COMMAND_VERSION } from '../../src/families/registry.js';
import { SESSION_FLAGS, status, waitForLeadership } from './fixture.js';
import { WireClient } from './wire-client.js';

let vp: VeraProcess | undefined;

afterAll(async () => {
  await killAll();
  vp?.removeData();
});

describe("hello's members on a member listed with a wildcard host", () => {
  it('names the role but no member', async () => {
    const [peerPort, clientPort] = [await freePort(), await freePort()];
    // It listens on loopback; the book, from --peers, says 0.0.0.0.
    const member = await VeraProcess.start({ peerPort, clientPort, peers: `n1=0.0.0.0:${peerPort}/${clientPort}`, args: SESSION_FLAGS });
    vp = member;
    await waitForLeadership(member);
    await pollUntil('the current command version', async () => (((await status(member)).commandVersion as { active: number }).active >= COMMAND_VERSION ? true : undefined));
    const client = await WireClient.connect(member.url, 'json');
    const reply = await client.request('hello', { timeoutMs: 5000 });
    expect(reply).toMatchObject({ ok: true, node: 'n1', role: 'leader' });
    expect(reply).not.toHaveProperty('members');
    await client.request('bye');
    client.terminate();
  });
});
