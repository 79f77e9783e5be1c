// /livez, /readyz and /healthz: live while the process answers; ready (and
// healthy, the contract's "serving") only once a family op would not be
// refused for want of a command version.
import { afterEach, describe, expect, it } from 'vitest';
import { connect } from '../../src/client/client.js';
import { AssignClient } from '../../src/families/assign/client.js';
import { readiness } from '../../src/server/http/health.js';
import { freePort, killAll, VeraProcess } from '../support/vera-process.js';
import { httpGet, startLeader, waitForLeadership } from './fixture.js';

afterEach(killAll);

describe('readiness (pure)', () => {
  const base = { leader: 'n1', active: 3, applies: 3, selfId: 'n1', members: ['n1', 'n2', 'n3'], peers: new Map([['n2', 3], ['n3', 3]]) };

  it('is ready when a leader is known and the cluster runs this build\'s version', () => {
    expect(readiness(base)).toEqual({ ready: true });
    // A member not heard from does not matter once the version is active (a dead member keeps the rest ready).
    expect(readiness({ ...base, peers: new Map() })).toEqual({ ready: true });
  });

  it('is not ready without a leader', () => {
    expect(readiness({ ...base, leader: null })).toEqual({ ready: false, reason: 'no leader' });
  });

  it('is not ready while the version every member applies is above the active one', () => {
    const r = readiness({ ...base, active: 1 });
    expect(r.ready).toBe(false);
    expect(r.ready === false && r.reason).toMatch(/version 3 is being raised/);
  });

  it('is not ready while a member that must support the version is not heard from', () => {
    const r = readiness({ ...base, active: 1, peers: new Map([['n2', 3]]) });
    expect(r.ready === false && r.reason).toMatch(/waiting to hear from n3/);
  });

  it('is ready during a rolling upgrade: a member on an older build caps what the cluster can run', () => {
    expect(readiness({ ...base, active: 2, peers: new Map([['n2', 3], ['n3', 2]]) })).toEqual({ ready: true });
  });
});

describe('the endpoints', () => {
  it('a single member: ready means its family ops are accepted at once', async () => {
    const vp = await startLeader();
    expect((await httpGet(vp, '/livez')).status).toBe(200);
    for (;;) {
      const r = await httpGet(vp, '/readyz');
      if (r.status === 200) break;
      expect(r.text).toMatch(/^not ready: /);
    }
    expect((await httpGet(vp, '/healthz')).status).toBe(200);
    const client = await connect(vp.url, { timeoutMs: 10_000 });
    try {
      // No retry: a ready member accepts a write that needs the newest command version.
      await expect(new AssignClient(client).service('sync-1.5')).resolves.toBeDefined();
    } finally {
      await client.close();
    }
  }, 60_000);

  it('two of three members: a leader, but the version cannot be raised, so not ready (and not healthy); live', async () => {
    const ports = await Promise.all([1, 2, 3, 4, 5, 6].map(() => freePort()));
    const peers = [0, 1, 2].map((i) => `n${i + 1}=127.0.0.1:${ports[2 * i]}/${ports[2 * i + 1]}`).join(',');
    const start = (i: number): Promise<VeraProcess> =>
      VeraProcess.start({ id: `n${i + 1}`, peerPort: ports[2 * i], clientPort: ports[2 * i + 1], peers, secret: 'health-test-secret' });
    const members = await Promise.all([start(0), start(1)]);
    await Promise.race(members.map((m) => waitForLeadership(m, 30_000)));
    for (const vp of members) {
      expect((await httpGet(vp, '/livez')).status).toBe(200);
      const ready = await httpGet(vp, '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.text).toMatch(/waiting to hear from n3/);
      expect((await httpGet(vp, '/healthz')).status).toBe(503);
    }
  }, 90_000);
});
