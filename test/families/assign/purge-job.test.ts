// A purge job's entries on a real state machine: started, stepped from the cursor it
// is at, stopped or done, its progress in replicated state (it survives a reload).
// A step that no longer matches the job (an old leader's, a repeat, an earlier job's)
// changes nothing, so the counts stay exact across leader changes.
import { afterEach, describe, expect, it } from 'vitest';
import type { AssignValue } from '../../../src/families/assign/apply.js';
import type { AssignCommand } from '../../../src/families/assign/commands.js';
import { AssignState } from '../../../src/families/assign/state.js';
import { AssignHarness, SERVICE } from './harness.js';

let h: AssignHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

type JobValue = Extract<AssignValue, { op: 'purgeJob' }>;
const SETTINGS = { graceMs: 0, max: 2, force: false, uidMin: 0, uidMax: 0, overrideNode: '', journal: '' };

async function job(command: AssignCommand): Promise<JobValue> {
  const v = await h!.ok(command);
  if (v.op !== 'purgeJob') throw new Error(`${command.op} gave ${v.op}`);
  await h!.checkInvariants();
  return v;
}

/** Three users re-keyed once: uids 1-3 current then replaced, 4-6 current. */
async function threeReplaced(): Promise<void> {
  for (const e of ['a', 'b', 'c']) await h!.login(`${e}@example.com`, { generation: 1, keysChangedAt: 1, clientState: 'aa' });
  for (const e of ['a', 'b', 'c']) await h!.login(`${e}@example.com`, { generation: 2, keysChangedAt: 2, clientState: 'bb' });
  h!.now += 10;
}

const step = (fields: Partial<Extract<AssignCommand, { op: 'purgeStep' }>>): AssignCommand => ({
  op: 'purgeStep',
  service: SERVICE,
  seq: 1,
  from: '',
  to: '',
  done: false,
  before: h!.now,
  uids: [],
  skipped: 0,
  overridden: 0,
  activeData: 0,
  ...fields,
});

describe('a purge job', () => {
  it('steps from its cursor, counts each record once, ignores a step that no longer matches, and ends done', async () => {
    h = await AssignHarness.open();
    await h.service();
    await h.addNode('https://a', 10);
    await threeReplaced();
    const started = await job({ op: 'purgeStart', service: SERVICE, settings: SETTINGS });
    expect(started.job).toMatchObject({ seq: 1, state: 'running', cursor: '', batches: 0, purged: 0, startedAt: h.now, endedAt: 0 });
    // A second start while it runs is refused and changes nothing.
    expect(await h.run({ op: 'purgeStart', service: SERVICE, settings: SETTINGS })).toMatchObject({ ok: false, code: 'CONFLICT' });
    const first = await job(step({ uids: [1, 2], to: '5:2', skipped: 1 }));
    expect(first).toMatchObject({ changed: true, job: { cursor: '5:2', batches: 1, purged: 2, skipped: 1, state: 'running' } });
    expect((await h.users()).map((u) => u.uid).sort()).toEqual([3, 4, 5, 6]);
    expect(h.node('https://a')).toMatchObject({ load: 3 });
    // The same step again (a new leader proposing what the old one had committed): nothing.
    const repeat = await job(step({ uids: [1, 2, 3], to: '5:3', skipped: 1 }));
    expect(repeat).toMatchObject({ changed: false, job: { cursor: '5:2', batches: 1, purged: 2, skipped: 1 } });
    expect((await h.users()).map((u) => u.uid).sort()).toEqual([3, 4, 5, 6]);
    // A step of another job: nothing either.
    expect((await job(step({ seq: 2, from: '5:2', uids: [3], to: '5:3' }))).changed).toBe(false);
    const last = await job(step({ from: '5:2', uids: [3], to: '5:3', done: true }));
    expect(last.job).toMatchObject({ state: 'done', batches: 2, purged: 3, skipped: 1, endedAt: h.now, cursor: '5:3' });
    expect((await job(step({ from: '5:3', uids: [4] }))).changed).toBe(false);
    expect((await h.users()).map((u) => u.uid).sort()).toEqual([4, 5, 6]);
    // Ended: a new one may start, with the next seq and fresh counts.
    const again = await job({ op: 'purgeStart', service: SERVICE, settings: { ...SETTINGS, uidMin: 4, uidMax: 9 } });
    expect(again.job).toMatchObject({ seq: 2, state: 'running', purged: 0, uidMin: 4, uidMax: 9 });
  });

  it('is stopped by an operator or failed by the duty (only the job it names), and its progress survives a reload', async () => {
    h = await AssignHarness.open();
    await h.service();
    await h.addNode('https://a', 10);
    await threeReplaced();
    expect(await h.run({ op: 'purgeStop', service: SERVICE })).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    expect(await h.run({ op: 'purgeStart', service: 'nope', settings: SETTINGS })).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    await job({ op: 'purgeStart', service: SERVICE, settings: { ...SETTINGS, force: true, journal: 'cleanup', overrideNode: 'https://x' } });
    await job(step({ uids: [2], to: '5:2' }));
    // The duty failing an earlier job's seq changes nothing; the operator's stop does.
    expect((await job({ op: 'purgeStop', service: SERVICE, seq: 7, error: 'journal cleanup does not exist' })).changed).toBe(false);
    const stopped = await job({ op: 'purgeStop', service: SERVICE });
    expect(stopped).toMatchObject({ changed: true, job: { state: 'stopped', endedAt: h.now, purged: 1, error: '' } });
    expect((await job({ op: 'purgeStop', service: SERVICE })).changed).toBe(false);
    expect((await job(step({ from: '5:2', uids: [1] }))).changed).toBe(false);
    const failed = await job({ op: 'purgeStart', service: SERVICE, settings: SETTINGS });
    expect((await job({ op: 'purgeStop', service: SERVICE, seq: failed.job.seq, error: 'journal cleanup does not exist' })).job).toMatchObject({ state: 'failed', error: 'journal cleanup does not exist' });
    // What a member restarting (or a new leader) loads is what was applied.
    const loaded = await h.sm.read('reload', (db, snapshot) => AssignState.load(db, snapshot));
    expect(loaded.purgeJobs.get(SERVICE)).toEqual(h.sm.stateOf((await import('../../../src/families/assign/index.js')).assign).purgeJobs.get(SERVICE));
    expect(loaded.purgeJobs.get(SERVICE)).toMatchObject({ seq: 2, state: 'failed' });
  });

  it('refuses bad settings and steps as it decodes the entry', async () => {
    h = await AssignHarness.open();
    await h.service();
    for (const settings of [
      { ...SETTINGS, max: 0 },
      { ...SETTINGS, uidMin: 5, uidMax: 4 },
      { ...SETTINGS, overrideNode: 'https://x' },
      { ...SETTINGS, journal: 'no spaces allowed' },
      { ...SETTINGS, extra: 1 },
    ]) {
      expect(await h.runRaw({ op: 'purgeStart', service: SERVICE, settings }), JSON.stringify(settings)).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    }
    expect(await h.runRaw({ ...step({}), from: 'nowhere' })).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    expect(h.sm.stateOf((await import('../../../src/families/assign/index.js')).assign).purgeJobs.size).toBe(0);
  });
});
