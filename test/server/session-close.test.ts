// How a session's connection ends, on a real server: since step 8a of docs/scale-out.md the
// connection is closed where the closeSession applies (not by the expiry tick), so these pin
// what clients see. An expired session's connection gets 4001; a `bye` gets its reply and
// then a normal close (1000), never 4001.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, type VeraProcess } from '../support/vera-process.js';
import { openSession, SESSION_TIMEOUT_MIN_MS, startLeader } from './fixture.js';

let vp: VeraProcess;

beforeAll(async () => {
  vp = await startLeader();
});

afterAll(async () => {
  await killAll();
  vp?.removeData();
});

describe('the end of a session closes its connection', () => {
  it('a session that expires (its client went silent) has its connection closed with 4001', async () => {
    const { client } = await openSession(vp, 'json', { timeoutMs: SESSION_TIMEOUT_MIN_MS });
    // Nothing more is sent: the session expires, and the leader closes its connection.
    const closed = await client.waitClose(10_000);
    expect(closed.code).toBe(4001);
  });

  it('bye is answered, then the connection is closed normally (1000), not as an ended session', async () => {
    const { client } = await openSession(vp, 'msgpack');
    const id = client.newId();
    client.send({ id, op: 'bye' });
    const reply = await client.waitReply(id);
    expect(reply.value).toStrictEqual({ id, ok: true });
    const closed = await client.waitClose();
    expect(closed.code).toBe(1000);
    // The reply came before the close: it is among the frames, and nothing came after the close.
    expect(client.frames.at(-1)?.seq).toBe(reply.seq);
  });
});
