// Every crash point of freeze and thaw on a real process: the process kills
// itself (SIGKILL, VERA_CRASH_AT) at the point, restarts on the same data
// directory, and the unit's items are all there, read through the normal get
// (which thaws the unit if it is still frozen); the start after that leaves no
// cold file of the now Hot unit.
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connect } from '../../../src/client/client.js';
import { HibernateClient } from '../../../src/families/hibernate/client.js';
import { CRASH_POINTS, DRAIN_CRASH_POINTS, THAW_STEP_CRASH_POINTS } from '../../../src/families/hibernate/crash-points.js';
import { HOT_STEP } from '../../../src/families/hibernate/server.js';
import { STEP_BYTES } from '../../../src/families/hibernate/pacing.js';
import { startLeader, untilCommandVersion, waitForLeadership } from '../../server/fixture.js';
import { pollUntil } from '../../support/poll.js';
import { killAll, VeraProcess } from '../../support/vera-process.js';

afterAll(async () => {
  await killAll();
});

describe('hibernation crash points, kill -9 on a real process', () => {
  const cases = [
    ...CRASH_POINTS.map((point) => ({ point, twoEntries: false })),
    // The same points in commitFreeze, the second entry of a freeze in two.
    ...CRASH_POINTS.filter((p) => p.startsWith('freeze')).map((point) => ({ point, twoEntries: true })),
  ];
  for (const { point, twoEntries } of cases) {
    it(`a crash at ${point}${twoEntries ? ' (freezing in two entries)' : ''} leaves the unit whole`, { timeout: 60_000 }, async () => {
      const vp = await startLeader({ env: { VERA_CRASH_AT: point } });
      const client = await connect(vp.url, { timeoutMs: 10_000, requestTimeoutMs: 10_000 });
      const hib = new HibernateClient(client);
      await untilCommandVersion(() => hib.units());
      for (const data of ['a', 'b', 'c']) await client.push('/users/zoe/items', data, { persistent: true, watch: false });
      const freeze = (): Promise<unknown> => (twoEntries ? hib.freezeMany(['/users/zoe']) : hib.freeze('/users/zoe'));
      const dies = point.startsWith('freeze') ? freeze() : freeze().then(() => hib.thaw('/users/zoe'));
      await dies.catch(() => undefined); // the answer is lost with the process
      const exit = await vp.exited;
      expect(exit.signal).toBe('SIGKILL');
      await client.close().catch(() => undefined);

      const again = await VeraProcess.start({ dataDir: vp.dataDir });
      await waitForLeadership(again);
      const reader = await connect(again.url, { timeoutMs: 10_000 });
      // A freeze the crash left begun is finished by the new leader (Frozen, or back to Hot).
      await pollUntil('no Freezing unit', async () => ((await new HibernateClient(reader).units()).every((u) => u.state !== 'freezing') ? true : undefined));
      // The get starts the unit's thaw if the crash left it frozen; either way every item is there.
      expect((await reader.get('/users/zoe/items')).items.map((i) => i.data)).toEqual(['a', 'b', 'c']);
      await pollUntil('the thaw the get started', async () => ((await new HibernateClient(reader).units()).length === 0 ? true : undefined));
      await reader.close();
      await again.stop();
      // The unit is Hot: the next start sweeps any cold file a crash or a thaw left.
      const third = await VeraProcess.start({ dataDir: vp.dataDir });
      await waitForLeadership(third);
      const coldDir = join(third.dataDir, 'cold');
      expect(existsSync(coldDir) ? readdirSync(coldDir) : []).toEqual([]);
      await third.stop();
    });
  }

  /** A unit larger than one step (server.ts HOT_STEP), pushed 100 at a time. */
  const LARGE = Math.ceil((HOT_STEP + 200) / 100) * 100;
  // Its freeze commits, then dropHot entries delete its hot entries.
  for (const point of DRAIN_CRASH_POINTS) {
    it(`a crash at ${point} (a large unit's hot entries deleted in steps) leaves the unit whole, and the next leader finishes the steps`, { timeout: 90_000 }, async () => {
      const vp = await startLeader({ env: { VERA_CRASH_AT: point } });
      const client = await connect(vp.url, { timeoutMs: 10_000, requestTimeoutMs: 10_000 });
      const hib = new HibernateClient(client);
      await untilCommandVersion(() => hib.units());
      for (let n = 0; n < LARGE; n += 100) await Promise.all(Array.from({ length: 100 }, (_, k) => client.push(k % 2 === 0 ? '/users/zoe' : '/users/zoe/items', n + k, { persistent: true, watch: false })));
      const before = [(await client.get('/users/zoe')).items, (await client.get('/users/zoe/items')).items];
      await hib.freeze('/users/zoe').catch(() => undefined); // the answer is lost with the process
      expect((await vp.exited).signal).toBe('SIGKILL');
      await client.close().catch(() => undefined);

      const again = await VeraProcess.start({ dataDir: vp.dataDir });
      await waitForLeadership(again);
      const reader = await connect(again.url, { timeoutMs: 10_000 });
      const units = new HibernateClient(reader);
      // The new leader finishes the steps: the unit is Frozen and no longer draining.
      const done = await pollUntil('the unit drained', async () => {
        const u = await units.units();
        return u.length === 1 && u[0]!.state === 'frozen' && u[0]!.draining === undefined ? u[0] : undefined;
      });
      expect(done).toMatchObject({ unit: '/users/zoe', items: LARGE });
      expect([(await reader.get('/users/zoe')).items, (await reader.get('/users/zoe/items')).items]).toEqual(before);
      // The reads started its thaw (answered from the cold file meanwhile): it ends by itself.
      await pollUntil('the thaw the reads started', async () => ((await units.units()).length === 0 ? true : undefined));
      await reader.close();
      await again.stop();
      const third = await VeraProcess.start({ dataDir: vp.dataDir });
      await waitForLeadership(third);
      const coldDir = join(third.dataDir, 'cold');
      expect(existsSync(coldDir) ? readdirSync(coldDir) : []).toEqual([]);
      await third.stop();
    });
  }

  it('a unit of few but large items (its file over STEP_BYTES) thaws in steps too: a crash at thaw-step-written is reached', { timeout: 90_000 }, async () => {
    const vp = await startLeader({ env: { VERA_CRASH_AT: 'thaw-step-written' } });
    const client = await connect(vp.url, { timeoutMs: 10_000, requestTimeoutMs: 10_000 });
    const hib = new HibernateClient(client);
    await untilCommandVersion(() => hib.units());
    // 24 items of 8 KiB that do not compress: far fewer items than a step, a file of several steps' bytes.
    const data = Array.from({ length: 24 }, () => randomBytes(6 * 1024).toString('base64'));
    for (const d of data) await client.push('/users/zoe/items', d, { persistent: true, watch: false });
    const frozen = await hib.freeze('/users/zoe');
    expect(frozen).toMatchObject({ frozen: true, items: 24 });
    expect((frozen as { bytes: number }).bytes).toBeGreaterThan(2 * STEP_BYTES);
    // In one entry (as before the bound) the thaw would not pass the step's crash point, and would answer.
    expect(await hib.thaw('/users/zoe').then(() => 'answered', () => 'lost with the process')).toBe('lost with the process');
    expect((await vp.exited).signal).toBe('SIGKILL');
    await client.close().catch(() => undefined);
    const again = await VeraProcess.start({ dataDir: vp.dataDir });
    await waitForLeadership(again);
    const reader = await connect(again.url, { timeoutMs: 10_000 });
    await pollUntil('the unit thawed', async () => ((await new HibernateClient(reader).units()).length === 0 ? true : undefined));
    expect((await reader.get('/users/zoe/items')).items.map((i) => i.data)).toEqual(data);
    await reader.close();
    await again.stop();
  });

  for (const point of THAW_STEP_CRASH_POINTS) {
    it(`a crash at ${point} (a large unit thawed in steps) leaves the unit whole, and the next leader finishes the thaw`, { timeout: 90_000 }, async () => {
      const vp = await startLeader({ env: { VERA_CRASH_AT: point } });
      const client = await connect(vp.url, { timeoutMs: 10_000, requestTimeoutMs: 10_000 });
      const hib = new HibernateClient(client);
      await untilCommandVersion(() => hib.units());
      for (let n = 0; n < LARGE; n += 100) await Promise.all(Array.from({ length: 100 }, (_, k) => client.push(k % 2 === 0 ? '/users/zoe' : '/users/zoe/items', n + k, { persistent: true, watch: false })));
      const before = [(await client.get('/users/zoe')).items, (await client.get('/users/zoe/items')).items];
      expect(await hib.freeze('/users/zoe')).toMatchObject({ frozen: true, items: LARGE });
      await hib.thaw('/users/zoe').catch(() => undefined); // the answer is lost with the process
      expect((await vp.exited).signal).toBe('SIGKILL');
      await client.close().catch(() => undefined);

      const again = await VeraProcess.start({ dataDir: vp.dataDir });
      await waitForLeadership(again);
      const reader = await connect(again.url, { timeoutMs: 10_000 });
      const units = new HibernateClient(reader);
      // A stale read while the thaw is half done is served from the cold file, whole.
      expect([(await reader.get('/users/zoe', { consistency: 'stale' })).items, (await reader.get('/users/zoe/items', { consistency: 'stale' })).items]).toEqual(before);
      // The new leader finishes the thaw.
      await pollUntil('the unit thawed', async () => ((await units.units()).length === 0 ? true : undefined));
      expect([(await reader.get('/users/zoe')).items, (await reader.get('/users/zoe/items')).items]).toEqual(before);
      await reader.close();
      await again.stop();
    });
  }
});
