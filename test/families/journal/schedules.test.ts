// Repeatable jobs (issue 35, item 10): the cron parser and its ticks in time zones, a tick
// entry making exactly one job (a tick proposed twice, as two leaders would, makes one),
// the catch-up rules, and schedules on a real server through the client, the CLI and HTTP,
// bad ones refused changing nothing. The three-member test with leader kills is
// schedules-failover.test.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { latestCronTick, nextCronTick, parseCron, type CronSpec } from '../../../src/families/journal/cron.js';
import { FAILURES_SINCE } from '../../../src/families/journal/index.js';
import type { JournalValue } from '../../../src/families/journal/apply.js';
import type { ScheduleSpec } from '../../../src/families/journal/schedules.js';
import { StateMachine } from '../../../src/statemachine/state-machine.js';
import { REGISTRY } from '../../../src/families/registry.js';
import { journal } from '../../../src/families/journal/index.js';
import { stopServer } from '../../support/member.js';
import { pollUntil } from '../../support/poll.js';
import { JournalHarness, SETTINGS } from './harness.js';
import { refusal, startV9 } from './v9-server.js';

const open: JournalHarness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
  await stopServer();
});

const utc = (text: string): number => Date.parse(`${text}Z`);
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString().replace(':00.000Z', 'Z'));
function spec(text: string): CronSpec {
  const s = parseCron(text);
  if (typeof s === 'string') throw new Error(s);
  return s;
}

describe('the cron parser', () => {
  const accepted: Array<[string, Partial<Record<'minutes' | 'hours' | 'days' | 'months' | 'weekdays', number[]>>]> = [
    ['* * * * *', { minutes: Array.from({ length: 60 }, (_, i) => i), weekdays: [0, 1, 2, 3, 4, 5, 6] }],
    ['0 9 * * 1-5', { minutes: [0], hours: [9], weekdays: [1, 2, 3, 4, 5] }],
    ['*/15 0,12 1 * *', { minutes: [0, 15, 30, 45], hours: [0, 12], days: [1] }],
    ['5-20/5 1-3 * jan,Jul SUN', { minutes: [5, 10, 15, 20], hours: [1, 2, 3], months: [1, 7], weekdays: [0] }],
    ['0 0 * * 7', { weekdays: [0] }],
    ['30/10 * * * *', { minutes: [30, 40, 50] }],
    ['0 0 L * *'.replace('L', '31'), { days: [31] }],
    ['@hourly', { minutes: [0], hours: Array.from({ length: 24 }, (_, i) => i) }],
    ['@weekly', { minutes: [0], hours: [0], weekdays: [0] }],
  ];
  it.each(accepted)('accepts %s', (text, fields) => {
    const s = spec(text);
    for (const [field, values] of Object.entries(fields)) expect([...s[field as keyof typeof fields]].sort((a, b) => a - b), field).toEqual(values);
  });

  const refused: Array<[unknown, string]> = [
    ['* * * *', '5 fields'],
    ['* * * * * *', '5 fields'],
    ['60 * * * *', 'minute field'],
    ['* 24 * * *', 'hour field'],
    ['* * 0 * *', 'day of month field'],
    ['* * * 13 *', 'month field'],
    ['* * * * 8', 'day of week field'],
    ['5-1 * * * *', 'runs backwards'],
    ['*/0 * * * *', 'step must be'],
    ['*/61 * * * *', 'step must be'],
    ['a * * * *', 'not a number'],
    ['* * * foo *', 'not a number or a name'],
    ['1,,2 * * * *', 'expected *'],
    ['@reboot', '5 fields'],
    ['', 'cron must be a string'],
    [42, 'cron must be a string'],
    ['* '.repeat(200), 'cron must be a string'],
  ];
  it.each(refused)('refuses %j', (text, why) => {
    expect(parseCron(text)).toEqual(expect.stringContaining(why));
  });

  // The first tick after a time, in a zone: [cron, zone, after (UTC), first tick (UTC)].
  const ticks: Array<[string, string, string, string | null]> = [
    ['*/15 * * * *', 'UTC', '2026-01-10T12:07', '2026-01-10T12:15Z'],
    ['*/15 * * * *', 'UTC', '2026-01-10T12:15', '2026-01-10T12:30Z'], // strictly after
    ['0 9 * * 1-5', 'UTC', '2026-01-09T09:00', '2026-01-12T09:00Z'], // Friday to Monday
    ['0 9 * * *', 'Europe/Paris', '2026-01-10T00:00', '2026-01-10T08:00Z'], // UTC+1 in winter
    ['0 9 * * *', 'Europe/Paris', '2026-07-10T00:00', '2026-07-10T07:00Z'], // UTC+2 in summer
    ['0 9 * * *', 'Asia/Kolkata', '2026-01-10T00:00', '2026-01-10T03:30Z'], // a half-hour offset
    ['30 2 * * *', 'Europe/Paris', '2026-03-28T02:00', '2026-03-30T00:30Z'], // 02:30 does not exist on 29 March: skipped that day
    ['30 1 * * *', 'America/New_York', '2026-11-01T05:30', '2026-11-02T06:30Z'], // 01:30 comes twice on 1 November: once
    ['0 0 1 * *', 'UTC', '2026-01-31T12:00', '2026-02-01T00:00Z'],
    ['0 0 29 2 *', 'UTC', '2026-01-01T00:00', '2028-02-29T00:00Z'], // two years off
    ['0 0 30 2 *', 'UTC', '2026-01-01T00:00', null], // never
    ['0 12 13 * 5', 'UTC', '2026-02-01T00:00', '2026-02-06T12:00Z'], // day of month OR Friday (both restricted)
    ['0 12 * 2 5', 'UTC', '2026-02-01T00:00', '2026-02-06T12:00Z'], // a Friday of February
  ];
  it.each(ticks)('%s in %s after %s ticks at %s', (cron, tz, after, expected) => {
    expect(iso(nextCronTick(spec(cron), tz, utc(after)))).toBe(expected);
  });

  it('finds the latest tick of a long gap without walking it minute by minute', () => {
    const every = spec('* * * * *');
    const now = utc('2026-06-01T10:30:30');
    const started = performance.now();
    expect(iso(latestCronTick(every, 'UTC', utc('2026-01-01T00:00'), now))).toBe('2026-06-01T10:30Z');
    expect(performance.now() - started).toBeLessThan(2000);
    expect(latestCronTick(every, 'UTC', utc('2026-06-01T10:30'), now)).toBeNull();
    expect(iso(latestCronTick(spec('0 0 1 1 *'), 'UTC', utc('2020-06-01T00:00'), now))).toBe('2026-01-01T00:00Z');
  });
});

const everySecond = (id = 's1', catchUp: 'one' | 'none' = 'one'): ScheduleSpec => ({ id, timing: { everyMs: 1000 }, catchUp, job: { data: { report: id }, priority: 7 } });
const made = (v: JournalValue): string | null | undefined => (v.op === 'tick' ? v.key : undefined);

describe('schedules in apply', () => {
  async function harness(): Promise<JournalHarness> {
    const h = await JournalHarness.open();
    open.push(h);
    await h.activate(FAILURES_SINCE);
    h.now = 5_000_500;
    await h.ok({ op: 'create', name: 'jobs', settings: { ...SETTINGS, timeoutMs: 60_000 } });
    await h.ok({ op: 'schedule', name: 'jobs', schedule: everySecond() });
    return h;
  }

  it('a tick makes one job; the same tick again, as a new leader would propose it, is refused and makes none', async () => {
    const h = await harness();
    h.now = 5_001_020;
    expect(made(await h.ok({ op: 'tick', name: 'jobs', id: 's1', tick: 5_001_000 }))).toBe('s1@1970-01-01T01:23:21.000Z');
    // The old leader's entry and the new leader's land one after the other in the log.
    expect(await h.run({ op: 'tick', name: 'jobs', id: 's1', tick: 5_001_000 })).toMatchObject({ ok: false, code: 'CONFLICT' });
    // An earlier tick too (the schedule's last tick only moves forward).
    expect(await h.run({ op: 'tick', name: 'jobs', id: 's1', tick: 5_000_000 })).toMatchObject({ ok: false, code: 'CONFLICT' });
    const items = await h.items('jobs');
    expect([...items.keys()]).toEqual(['s1@1970-01-01T01:23:21.000Z']);
    expect(items.get('s1@1970-01-01T01:23:21.000Z')).toMatchObject({ data: { report: 's1' }, priority: 7, status: 'waiting', processAt: 5_001_020 });
    // The job is done, and the tick proposed once more: nothing comes back.
    const claim = await h.ok({ op: 'claim', name: 'jobs', max: 1 });
    if (claim.op !== 'claim') throw new Error('claim');
    await h.ok({ op: 'done', name: 'jobs', key: claim.items[0]!.key, lease: claim.lease });
    expect(await h.run({ op: 'tick', name: 'jobs', id: 's1', tick: 5_001_000 })).toMatchObject({ ok: false, code: 'CONFLICT' });
    expect((await h.items('jobs')).size).toBe(0);
    h.now = 5_002_000;
    expect(made(await h.ok({ op: 'tick', name: 'jobs', id: 's1', tick: 5_002_000 }))).toBe('s1@1970-01-01T01:23:22.000Z');
    // What a restarted member loads knows the last tick.
    const reloaded = await StateMachine.open(h.temp.db, REGISTRY);
    expect(reloaded.stateOf(journal).schedules.get('jobs')?.get('s1')).toMatchObject({ lastTick: 5_002_000, produced: 2, skipped: 0 });
  });

  it('refuses a tick from the future, off the schedule, or of no schedule, changing nothing', async () => {
    const h = await harness();
    h.now = 5_001_999;
    expect(await h.run({ op: 'tick', name: 'jobs', id: 's1', tick: 5_002_000 })).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    expect(await h.run({ op: 'tick', name: 'jobs', id: 's1', tick: 5_001_500 })).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    expect(await h.run({ op: 'tick', name: 'jobs', id: 'nope', tick: 5_001_000 })).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    expect((await h.items('jobs')).size).toBe(0);
    expect(h.sm.stateOf(journal).schedules.get('jobs')?.get('s1')).toMatchObject({ lastTick: 5_000_500, produced: 0 });
  });

  it("after a gap, catchUp 'one' makes one job for the latest tick; 'none' skips a tick that comes late", async () => {
    const h = await harness();
    await h.ok({ op: 'schedule', name: 'jobs', schedule: everySecond('quiet', 'none') });
    h.now = 5_060_000; // a minute without a leader: 59 ticks missed
    expect(made(await h.ok({ op: 'tick', name: 'jobs', id: 's1', tick: 5_060_000 }))).toBe('s1@1970-01-01T01:24:20.000Z');
    expect(await h.ok({ op: 'tick', name: 'jobs', id: 'quiet', tick: 5_049_000 })).toMatchObject({ key: null, skipped: 'late' });
    expect(made(await h.ok({ op: 'tick', name: 'jobs', id: 'quiet', tick: 5_059_000 }))).toBe('quiet@1970-01-01T01:24:19.000Z'); // within the grace
    expect([...(await h.items('jobs')).keys()].sort()).toEqual(['quiet@1970-01-01T01:24:19.000Z', 's1@1970-01-01T01:24:20.000Z']);
    expect(h.sm.stateOf(journal).schedules.get('jobs')?.get('quiet')).toMatchObject({ produced: 1, skipped: 1, lastTick: 5_059_000 });
  });

  it('a full journal skips the tick; replacing keeps the last tick; unschedule and drop remove it; at most 100 per journal', async () => {
    const h = await harness();
    await h.ok({ op: 'configure', name: 'jobs', settings: { ...SETTINGS, timeoutMs: 60_000, maxItems: 1 } });
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'x', data: 0 }] });
    h.now = 5_001_000;
    expect(await h.ok({ op: 'tick', name: 'jobs', id: 's1', tick: 5_001_000 })).toMatchObject({ key: null, skipped: 'full' });
    expect(await h.ok({ op: 'schedule', name: 'jobs', schedule: { ...everySecond(), catchUp: 'none' } })).toMatchObject({ replaced: true });
    expect(h.sm.stateOf(journal).schedules.get('jobs')?.get('s1')).toMatchObject({ lastTick: 5_001_000, catchUp: 'none', skipped: 1 });
    await h.ok({ op: 'unschedule', name: 'jobs', id: 's1' });
    expect(await h.run({ op: 'unschedule', name: 'jobs', id: 's1' })).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    expect(await h.run({ op: 'tick', name: 'jobs', id: 's1', tick: 5_002_000 })).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    for (let i = 0; i < 100; i++) await h.ok({ op: 'schedule', name: 'jobs', schedule: everySecond(`s${i}`) });
    expect(await h.run({ op: 'schedule', name: 'jobs', schedule: everySecond('s100') })).toMatchObject({ ok: false, code: 'QUOTA_EXCEEDED' });
    expect(await h.ok({ op: 'schedule', name: 'jobs', schedule: everySecond('s99') })).toMatchObject({ replaced: true });
    await h.ok({ op: 'drop', name: 'jobs' });
    expect(h.sm.stateOf(journal).schedules.has('jobs')).toBe(false);
    expect(await h.indexKeys(0x0032)).toEqual([]);
  });

  it('before command version 9 a schedule is refused', async () => {
    const h = await JournalHarness.open();
    open.push(h);
    await h.ok({ op: 'create', name: 'jobs', settings: SETTINGS });
    expect(await h.run({ op: 'schedule', name: 'jobs', schedule: everySecond() })).toMatchObject({ ok: false });
    expect(h.sm.stateOf(journal).schedules.size).toBe(0);
  });
});

describe('schedules on a server', () => {
  it('the leader makes one job per tick; listed by the client, the CLI and HTTP; removed', async () => {
    const { journals, cli, http } = await startV9();
    await journals.create('reports', { timeoutMs: 60_000 });
    const answer = await journals.schedule('reports', 'fast', { everyMs: 200, data: { kind: 'fast' }, priority: 3 });
    expect(answer.replaced).toBe(false);
    expect(answer.nextTick % 200).toBe(0);
    expect(await cli('schedule', 'reports', 'nightly', '--cron', '0 2 * * *', '--tz', 'Europe/Paris', '--catch-up', 'none', '--data', '{"kind":"nightly"}')).toMatchObject({
      code: 0,
      out: expect.stringMatching(/^added schedule nightly of reports; next tick \d{4}-\d\d-\d\dT0[01]:00:00.000Z\n$/),
    });
    await pollUntil('three ticks of fast', async () => ((await journals.show('reports')).counts.waiting >= 3 ? true : undefined), 10_000);
    const page = await journals.items('reports', 'waiting', { limit: 1000 });
    const ticks = page.items.map((j) => Date.parse(j.key.slice('fast@'.length)));
    expect(page.items.every((j) => j.key.startsWith('fast@') && j.priority === 3 && (j.data as { kind: string }).kind === 'fast')).toBe(true);
    expect(ticks.every((t) => t % 200 === 0)).toBe(true);
    expect(new Set(ticks).size).toBe(ticks.length);
    const listed = await journals.schedules('reports');
    expect(listed.map((s) => s.schedule)).toEqual(['fast', 'nightly']);
    expect(listed[1]).toMatchObject({ cron: '0 2 * * *', tz: 'Europe/Paris', catchUp: 'none', data: { kind: 'nightly' }, produced: 0 });
    expect(listed[0]!.produced).toBeGreaterThanOrEqual(3);
    const viaHttp = (await fetch(`${http}/v1/journals/reports/schedules`).then((r) => r.json())) as { schedules: Array<{ schedule: string }> };
    expect(viaHttp.schedules.map((s) => s.schedule)).toEqual(['fast', 'nightly']);
    expect((await cli('schedules', 'reports')).out).toMatch(/^fast {2}every 200 ms {2}catch-up one {2}\d+ made, 0 skipped {2}next .*\nnightly {2}cron '0 2 \* \* \*' Europe\/Paris {2}catch-up none {2}0 made/);
    expect(await cli('unschedule', 'reports', 'fast')).toMatchObject({ code: 0, out: 'removed schedule fast of reports\n' });
    const after = (await journals.show('reports')).counts.waiting;
    // A tick in flight when the schedule went is refused (NOT_FOUND); a few round trips later nothing more comes.
    for (let i = 0; i < 5; i++) await journals.show('reports');
    expect((await journals.schedules('reports')).map((s) => s.schedule)).toEqual(['nightly']);
    expect((await journals.show('reports')).counts.waiting).toBe(after);
  });

  it('refuses bad schedules with a clear error, changing nothing', async () => {
    const { journals, cli } = await startV9();
    await journals.create('reports');
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{}, /everyMs or cron/],
      [{ everyMs: 1000, cron: '* * * * *' }, /everyMs or cron/],
      [{ everyMs: 99 }, /everyMs must be an integer in \[100/],
      [{ everyMs: 1.5e3 + 0.5 }, /everyMs must be/],
      [{ everyMs: 1000, tz: 'UTC' }, /tz goes with cron/],
      [{ cron: '61 * * * *' }, /minute field '61'/],
      [{ cron: '* * * *' }, /5 fields/],
      [{ cron: '* * * * *', tz: 'Mars/Olympus' }, /not a time zone this server knows/],
      [{ cron: '* * * * *', tz: '../etc' }, /IANA time zone/],
      [{ cron: '0 0 30 2 *' }, /never fires/],
      [{ everyMs: 1000, catchUp: 'all' }, /catchUp must be 'one' or 'none'/],
      [{ everyMs: 1000, priority: 256 }, /priority must be/],
      [{ everyMs: 1000, retry: { attempts: 0 } }, /retry.attempts/],
      [{ everyMs: 1000, data: 'x'.repeat(70_000) }, /data is \d+ bytes/],
      [{ everyMs: 1000, color: 'red' }, /color/],
    ];
    for (const [input, why] of bad) {
      const err = await refusal(journals.schedule('reports', 'r1', input as never));
      expect(err.code, JSON.stringify(input).slice(0, 80)).toMatch(/BAD_REQUEST|TOO_LARGE/);
      expect(err.message, JSON.stringify(input).slice(0, 80)).toMatch(why);
    }
    expect((await refusal(journals.schedule('reports', 'bad id!', { everyMs: 1000 }))).message).toMatch(/schedule \(its id\)/);
    expect((await refusal(journals.schedule('nope', 'r1', { everyMs: 1000 }))).code).toBe('NOT_FOUND');
    expect((await refusal(journals.unschedule('reports', 'r1'))).code).toBe('NOT_FOUND');
    expect(await journals.schedules('reports')).toEqual([]);
    expect(await cli('schedule', 'reports', 'r1', '--cron', '* * *')).toMatchObject({ code: 2, err: expect.stringContaining('--cron: must have 5 fields') });
    expect(await cli('schedule', 'reports', 'r1')).toMatchObject({ code: 2, err: expect.stringContaining('--every or cron') });
    expect(await journals.schedules('reports')).toEqual([]);
  });
});
