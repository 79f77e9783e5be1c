// The server learns the client ops and leader duties of each family from the
// registry alone: every op of the protocol but hello, ping and get (which the
// connection answers itself) is answered by exactly one family.
import { describe, expect, it } from 'vitest';
import type { AnyFamily } from '../../src/statemachine/family.js';
import { FAMILIES } from '../../src/families/registry.js';
import { OPS } from '../../src/protocol/index.js';
import { loadPlugins } from '../../src/server/front/plugin-part.js';
import { DEFAULT_DUTY_TIMINGS } from '../../src/server/front/leader-duties.js';

describe('the families\u2019 server parts', () => {
  it('answer every client op but hello, ping and get, and declare duties that have periods', async () => {
    const parts = await loadPlugins(FAMILIES);
    expect(Object.keys(parts.ops).sort()).toEqual(OPS.filter((op) => !['hello', 'ping', 'get'].includes(op)).sort());
    expect(parts.duties.map((d) => d.name).sort()).toEqual(['ack-flush', 'assign-purge', 'audit-flush', 'command-version', 'hibernate-idle', 'journal-drops', 'journal-expiry', 'journal-result-expiry', 'journal-schedules', 'journal-timeouts', 'session-expiry']);
    for (const duty of parts.duties) expect(DEFAULT_DUTY_TIMINGS[duty.name] ?? duty.periodMs).toBeGreaterThan(0);
  });

  it('refuses two families answering the same op', async () => {
    const copy = { ...FAMILIES[1]!, name: 'lists-again' } as AnyFamily;
    await expect(loadPlugins([...FAMILIES, copy])).rejects.toThrow(/client op push is answered by two families \(the second is lists-again\)/);
  });

  it('refuses an op whose plugin does not say what it needs, so none is served unjudged', async () => {
    const counter = FAMILIES.find((f) => f.name === 'counter')!;
    const plugin = await counter.plugin!();
    const { get: _get, ...needs } = plugin.needs;
    const unjudged = { ...counter, plugin: async () => ({ ...plugin, needs }) } as AnyFamily;
    await expect(loadPlugins(FAMILIES.map((f) => (f === counter ? unjudged : f)))).rejects.toThrow(/the plugin declares no needs for counter\.get/);
  });

  // A misspelt key (the op's wire name instead of its key) would leave the op unjudged or unguarded.
  it('refuses needs or touches declared for an op the plugin does not have', async () => {
    const counter = FAMILIES.find((f) => f.name === 'counter')!;
    const plugin = await counter.plugin!();
    const swap = (changed: object): AnyFamily[] => FAMILIES.map((f) => (f === counter ? ({ ...counter, plugin: async () => ({ ...plugin, ...changed }) } as AnyFamily) : f));
    await expect(loadPlugins(swap({ needs: { ...plugin.needs, 'counter.get': () => [] } }))).rejects.toThrow('the plugin declares needs for counter.get, which is none of its ops');
    await expect(loadPlugins(swap({ touches: { 'counter.get': () => [] } }))).rejects.toThrow('the plugin declares touches for counter.get, which is none of its ops');
  });

  it('refuses a family that still declares the old server part instead of serving it nothing', async () => {
    const stale = { ...FAMILIES[3]!, name: 'stale', server: async () => ({}) } as unknown as AnyFamily;
    await expect(loadPlugins([...FAMILIES, stale])).rejects.toThrow('the stale family declares server(), which no longer exists');
  });

  // An answer may be a class's method (not an own property) or left undefined: neither may fall back to the default.
  it('reads a plugin\u2019s connection answers by name, methods of a class included, skipping undefined ones', async () => {
    const watches = FAMILIES.find((f) => f.name === 'watches')!;
    const plugin = await watches.plugin!();
    class Answers {
      constructor(private readonly path: string) {}
      watchesOf(): Array<{ path: string; prefix: boolean }> {
        return [{ path: this.path, prefix: true }];
      }
    }
    const answering = (connection: object): AnyFamily[] =>
      FAMILIES.map((f) => (f === watches ? ({ ...watches, plugin: async () => ({ ...plugin, createServer: (host: never) => ({ ...plugin.createServer(host), connection }) }) } as AnyFamily) : f));
    const parts = await loadPlugins(answering(new Answers('/secret')));
    expect(parts.connection.watchesOf('s')).toEqual([{ path: '/secret', prefix: true }]);
    const lag = await loadPlugins(answering({ ackedInLog: undefined, watchesOf: () => [] }));
    expect(typeof lag.connection.ackedInLog).toBe('function');
    parts.close();
    lag.close();
  });

  it('load side by side, each asked for before any has loaded, and are used in registry order', async () => {
    const asked: string[] = [];
    const loads: Array<() => void> = [];
    const delayed = FAMILIES.map((family) =>
      family.plugin === undefined
        ? family
        : ({
            ...family,
            plugin: async () => {
              asked.push(family.name);
              await new Promise<void>((loaded) => loads.push(loaded));
              return family.plugin!();
            },
          } as AnyFamily),
    );
    const loading = loadPlugins(delayed);
    const withServer = FAMILIES.filter((f) => f.plugin !== undefined).map((f) => f.name);
    // A starting member waits for these: one module load after another would add up.
    await new Promise((resolve) => setImmediate(resolve));
    expect(asked).toEqual(withServer);
    for (const loaded of loads.reverse()) loaded(); // the last finishes first
    const parts = await loading;
    expect(Object.keys(parts.ops)).toEqual(Object.keys((await loadPlugins(FAMILIES)).ops));
  });
});
