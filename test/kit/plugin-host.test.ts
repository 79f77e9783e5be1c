// The kit carries a whole family's server side (issue 33): a plugin's instance is made
// once per member, its leader duty starts when the member leads and stops when the server
// closes, its HTTP route stands for one of its ops, it sees every applied entry (its own
// values, null for others), its metrics reach /metrics, and close runs at the end. The
// probe is the counter family with these seams added, on a real member in this process.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { counter, type CounterState } from '../../src/families/counter/index.js';
import { COUNTER_OPS, type CounterValue } from '../../src/families/counter/wire.js';
import { plugin as counterPlugin } from '../../src/families/counter/server.js';
import { opRequest, type Plugin } from '../../src/kit/index.js';
import { CounterClient } from '../../src/families/counter/client.js';
import { startServer, stopServer } from '../support/member.js';
import { untilCommandVersion } from '../server/fixture.js';

interface Probe {
  created: number;
  /** What calling the host from createServer did. */
  earlyCall: string;
  readonly events: string[];
  ticks: number;
  readonly applied: Array<readonly [number, unknown]>;
}

function probePlugin(probe: Probe): Plugin<typeof COUNTER_OPS, CounterState> {
  return {
    ...counterPlugin,
    createServer: (host) => {
      probe.created++;
      try {
        host.now();
        probe.earlyCall = 'answered';
      } catch (err) {
        probe.earlyCall = String(err);
      }
      const counters = counterPlugin.createServer(host);
      return {
        handlers: counters.handlers,
        duties: [
          {
            name: 'probe-duty',
            periodMs: 10,
            start: () => probe.events.push(`start leading=${host.isLeader()}`),
            tick: () => void probe.ticks++,
            stop: () => probe.events.push('stop'),
          },
        ],
        http: [
          {
            prefix: '/v1/probe',
            get: (rest) => opRequest(COUNTER_OPS.get, { name: decodeURIComponent(rest.slice(1)), consistency: 'stale' }, host.limits),
          },
        ],
        applied: (index, value) => probe.applied.push([index, value]),
        metrics: async () => `# TYPE vera_probe_ticks counter\nvera_probe_ticks ${probe.ticks}\n`,
        close: () => probe.events.push('close'),
      };
    },
  };
}

async function start(probe: Probe): Promise<{ http: string; counters: CounterClient }> {
  // The registered family itself (the store keys its state by it), with the probe for its plugin.
  vi.spyOn(counter, 'plugin').mockImplementation(async () => probePlugin(probe));
  const { url, client } = await startServer();
  const counters = new CounterClient(client);
  await untilCommandVersion(() => counters.get('warm-up'));
  return { http: url.replace('ws://', 'http://'), counters };
}

afterEach(async () => {
  await stopServer();
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('a kit plugin on a member', () => {
  it('gets one instance, whose host answers only once the member is open', async () => {
    const probe: Probe = { created: 0, earlyCall: '', events: [], ticks: 0, applied: [] };
    const { counters } = await start(probe);
    expect(probe.created).toBe(1);
    expect(probe.earlyCall).toMatch(/the counter plugin called its host before the member was open/);
    expect((await counters.add('n', 2)).value).toBe(2);
    expect(probe.created).toBe(1);
  });

  it('runs its duty while leading and stops it, then closes, when the server closes', async () => {
    // Intervals (the duty's among them) are fake, moved on with real time while the member
    // runs; after close, advancing them by hand runs any interval left, at once.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'], shouldAdvanceTime: true, advanceTimeDelta: 5 });
    const probe: Probe = { created: 0, earlyCall: '', events: [], ticks: 0, applied: [] };
    const { http } = await start(probe);
    expect(probe.events[0]).toBe('start leading=true');
    await expect.poll(() => probe.ticks).toBeGreaterThan(1);
    // Its metrics are appended to the member's.
    const text = await (await fetch(`${http}/metrics`)).text();
    expect(text).toMatch(/^vera_probe_ticks [1-9]\d*$/m);
    await stopServer();
    expect(probe.events).toEqual(['start leading=true', 'stop', 'close']);
    const ticks = probe.ticks;
    vi.advanceTimersByTime(50); // the duty's timer is gone: 5 periods pass with no tick
    expect(probe.ticks).toBe(ticks);
  });

  it('answers its HTTP route through its op, and sees each applied entry with its own values only', async () => {
    const probe: Probe = { created: 0, earlyCall: '', events: [], ticks: 0, applied: [] };
    const { http, counters } = await start(probe);
    const added: CounterValue = await counters.add('orders', 5);
    const res = await fetch(`${http}/v1/probe/orders`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ name: 'orders', value: 5, exists: true });
    // The op's own schema judges the route's request.
    const bad = await fetch(`${http}/v1/probe/${encodeURIComponent('bad name!')}`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: 'BAD_REQUEST', message: expect.stringContaining('name must be') } });

    const own = probe.applied.filter(([, v]) => v !== null);
    expect(own.map(([, v]) => v)).toContainEqual(added);
    // Other families' entries (the client's session, the command version) come with null, in log order.
    expect(probe.applied.some(([, v]) => v === null)).toBe(true);
    const indexes = probe.applied.map(([i]) => i);
    expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
  });
});
