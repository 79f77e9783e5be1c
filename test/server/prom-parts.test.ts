// prom-parts.ts requires prom-client's private files one by one (a member's start time,
// issue 32). Nothing in prom-client promises those paths: this test names the one that
// moved or changed if an upgrade breaks them, rather than a member failing at start.
import { createRequire } from 'node:module';
import * as prom from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Counter, defaultMetricsCollector, Gauge, Histogram, Registry } from '../../src/server/node/prom-parts.js';

const require = createRequire(import.meta.url);

describe("prom-client's private files", () => {
  it.each([
    ['prom-client/lib/registry', prom.Registry],
    ['prom-client/lib/counter', prom.Counter],
    ['prom-client/lib/gauge', prom.Gauge],
    ['prom-client/lib/histogram', prom.Histogram],
    ['prom-client/lib/defaultMetrics', prom.collectDefaultMetrics],
  ] as const)('%s still exports what the package index does', (path, exported) => {
    let loaded: unknown;
    expect(() => (loaded = require(path)), `${path} is gone: prom-parts.ts must follow prom-client's layout`).not.toThrow();
    expect(loaded, `${path} no longer exports ${exported.name}`).toBe(exported);
  });

  it('are what prom-parts hands out, and they work together', async () => {
    expect([Registry, Counter, Gauge, Histogram, defaultMetricsCollector()]).toEqual([prom.Registry, prom.Counter, prom.Gauge, prom.Histogram, prom.collectDefaultMetrics]);
    const registry = new Registry();
    new Counter({ name: 'probe_total', help: 'probe', registers: [registry] }).inc();
    expect(await registry.metrics()).toMatch(/^probe_total 1$/m);
  });
});
