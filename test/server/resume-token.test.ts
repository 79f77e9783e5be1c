// Sessions only their creator can resume, in every mode: the hello that opens a
// session answers a resume token (only its hash is replicated), and a resume
// without it, or with a wrong one, is UNAUTHORIZED and leaves the session where
// it was, with authentication off and on loopback too (the session id is
// public: every watcher sees it as an item's owner). A session opened before
// resume tokens has none to show and cannot be resumed at all. The client
// library keeps the token and sends it with every resume.
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../src/client/index.js';
import { openSession, startLeader } from './fixture.js';
import { WireClient } from './wire-client.js';
import { freePort, VeraProcess } from '../support/vera-process.js';
import { pollUntil } from '../support/poll.js';
import { fetchStatus } from '../failover/cluster.js';

const processes: VeraProcess[] = [];
const clients: VeraClient[] = [];
const wires: WireClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  for (const w of wires.splice(0)) w.terminate();
  for (const p of processes.splice(0)) {
    await p.stop();
    p.removeData();
  }
});

async function wire(p: VeraProcess): Promise<WireClient> {
  const w = await WireClient.connect(p.url, 'json');
  wires.push(w);
  return w;
}

async function leader(): Promise<VeraProcess> {
  const p = await startLeader();
  processes.push(p);
  return p;
}

describe('resume tokens', () => {
  it('on the default start, a resume by the public id alone or with a wrong token is refused and takes nothing; the token resumes', async () => {
    const vp = await leader();
    // The hello right after the election already gets a token: it waits for the command version being raised.
    const s = await openSession(vp, 'json');
    wires.push(s.client);
    const { session, resume } = s.hello;
    expect(resume).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const item = (await s.client.call('push', { path: '/locks/a', data: 'mine' })).item as { index: number; owner: string };
    expect(item.owner).toBe(session); // the id is public

    const byId = await wire(vp);
    const taken = await byId.request('hello', { session });
    expect(taken.error).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('resume token') });
    const wrong = await wire(vp);
    const stolen = await wrong.request('hello', { session, resume: 'A'.repeat(32) });
    expect(stolen.error).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('does not match') });
    // Neither took the session: its connection still serves it, and its lock is still held.
    expect(await s.client.call('ping')).toMatchObject({ index: expect.any(Number) });
    expect((await s.client.call('get', { path: '/locks/a' })).items).toStrictEqual([item]);
    expect(s.client.closed).toBeNull();

    const bad = await wire(vp);
    expect((await bad.request('hello', { resume })).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('resume goes with session') });

    const rightful = await wire(vp);
    expect(await rightful.hello({ session, resume })).toMatchObject({ session });
    expect((await s.client.waitClose()).code).toBe(4002); // moved to the rightful resumer
  });

  it('a lease is a live session that no hello may resume, whatever it sends', async () => {
    const vp = await leader();
    const s = await openSession(vp, 'json');
    wires.push(s.client);
    const { lease } = (await s.client.call('lease.grant', { ttlMs: 60_000 })) as { lease: string };
    expect(lease).toMatch(/^lease-/);
    const w = await wire(vp);
    const taken = await w.request('hello', { session: lease, resume: s.hello.resume });
    expect(taken.error).toMatchObject({ code: 'UNAUTHORIZED', message: `${lease} is a lease, not a session a connection can resume` });
    expect(await s.client.call('lease.show', { lease })).toMatchObject({ lease });
  });

  it('the client library keeps the token and resumes with it; a bare id opens a new session', async () => {
    const vp = await leader();
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
    const bare = await connect(vp.url, { timeoutMs: 5_000, session: first.session });
    clients.push(bare);
    expect(bare.session).not.toBe(first.session);
    expect(again.state).toBe('open');
  });

  it('a session opened before the cluster ran resume tokens cannot be resumed, with or without a token', async () => {
    // Two members of three: n3 is never heard from, so the cluster stays below command version 6.
    const ports = await Promise.all(Array.from({ length: 6 }, () => freePort()));
    const peers = [0, 1, 2].map((i) => `n${i + 1}=127.0.0.1:${ports[2 * i]}/${ports[2 * i + 1]}`).join(',');
    const secret = randomBytes(16).toString('hex');
    const members = await Promise.all([0, 1].map((i) => VeraProcess.start({ id: `n${i + 1}`, peerPort: ports[2 * i]!, clientPort: ports[2 * i + 1]!, peers, secret })));
    processes.push(...members);
    const lead = await pollUntil('a leader', async () => {
      for (const m of members) if ((await fetchStatus(m.clientPort)).role === 'leader') return m;
      return undefined;
    });
    const old = await openSession(lead, 'json');
    wires.push(old.client);
    expect(old.hello.resume).toBeUndefined();
    await old.client.call('push', { path: '/legacy', data: 1 });

    for (const resume of [undefined, 'C'.repeat(32)]) {
      const thief = await wire(lead);
      const reply = await thief.request('hello', { session: old.hello.session, ...(resume === undefined ? {} : { resume }) });
      expect(reply.error).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('opened before resume tokens') });
    }
    // Its own connection is untouched.
    expect((await old.client.call('get', { path: '/legacy' })).items).toHaveLength(1);
    expect(old.client.closed).toBeNull();
  });
});
