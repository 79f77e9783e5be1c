// Sessions only their creator can resume: the hello that opens a session answers
// a resume token (only its hash is replicated); resuming with a wrong token is
// refused and leaves the session where it was; without a token a session resumes
// by id, as the shared contract says, except on a server whose client port is
// exposed (--insecure), which requires the token. The client library keeps the
// token and sends it with every resume.
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../src/client/index.js';
import { openSession, startLeader, untilCommandVersion } from './fixture.js';
import { WireClient } from './wire-client.js';
import type { VeraProcess } from '../support/vera-process.js';

let vp: VeraProcess | null = null;
const clients: VeraClient[] = [];
const wires: WireClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  for (const w of wires.splice(0)) await w.close().catch(() => undefined);
  await vp?.stop();
  vp = null;
});

async function wire(p: VeraProcess): Promise<WireClient> {
  const w = await WireClient.connect(p.url, 'json');
  wires.push(w);
  return w;
}

/** A session opened once the cluster records resume tokens (command version 6). */
async function opened(p: VeraProcess): Promise<{ session: string; resume: string; owner: WireClient }> {
  const probe = await connect(p.url, { timeoutMs: 10_000 });
  clients.push(probe);
  await untilCommandVersion(async () => {
    const c = await connect(p.url, { timeoutMs: 10_000 });
    clients.push(c);
    if (c.resumeToken === null) throw new Error('no resume token yet');
  });
  const s = await openSession(p, 'json');
  wires.push(s.client);
  expect(s.hello.resume).toMatch(/^[A-Za-z0-9_-]{32}$/);
  return { session: s.hello.session, resume: s.hello.resume!, owner: s.client };
}

describe('resume tokens', () => {
  it('a wrong token is refused and leaves the session with its owner; the right one or none (as the contract has it) resumes', async () => {
    vp = await startLeader();
    const { session, resume, owner } = await opened(vp);
    const item = (await owner.call('push', { path: '/locks/a', data: 'mine' })).item as { owner: string };
    expect(item.owner).toBe(session); // the id is public

    const thief = await wire(vp);
    const stolen = await thief.request('hello', { session, resume: 'A'.repeat(32) });
    expect(stolen.error).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('does not match') });
    // The owner's connection was not taken over.
    expect(await owner.call('ping')).toMatchObject({ index: expect.any(Number) });

    const bad = await wire(vp);
    expect((await bad.request('hello', { resume })).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('resume goes with session') });

    const rightful = await wire(vp);
    expect(await rightful.hello({ session, resume })).toMatchObject({ session });
    const byId = await wire(vp);
    expect(await byId.hello({ session })).toMatchObject({ session });
  });

  it('on an exposed server (--insecure) a session resumes only with its token', async () => {
    vp = await startLeader({ args: ['--insecure'] });
    const { session, resume } = await opened(vp);
    const byId = await wire(vp);
    expect((await byId.request('hello', { session })).error).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('resume token') });
    const rightful = await wire(vp);
    expect(await rightful.hello({ session, resume })).toMatchObject({ session });
  });

  it('the client library keeps the token and resumes with it', async () => {
    vp = await startLeader({ args: ['--insecure'] });
    await opened(vp);
    const first = await connect(vp.url, { timeoutMs: 10_000 });
    clients.push(first);
    expect(first.resumeToken).not.toBeNull();
    await first.push('/presence/a', 'here');
    // Another client resumes it with the token (as a restarted process would), and the first is moved off.
    const again = await connect(vp.url, { timeoutMs: 10_000, session: first.session, resume: first.resumeToken! });
    clients.push(again);
    expect(again.session).toBe(first.session);
    expect((await again.get('/presence/a')).items.map((i) => i.owner)).toEqual([first.session]);
    await expect(connect(vp.url, { timeoutMs: 5_000, session: first.session, resume: 'B'.repeat(32) })).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });
});
