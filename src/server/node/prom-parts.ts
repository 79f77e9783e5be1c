// prom-client's metric classes, required one by one. Its index also requires the
// default process metrics and, through them, @opentelemetry/api: about 90 files and
// some 40 ms of CPU at start, before the member can serve. The default metrics are
// loaded once it serves (ServerMetrics.collectProcessMetrics), which is why these are
// prom-client's private paths (lib/...), not its index: they shorten a member's start.
// package.json pins prom-client's exact version, and test/server/prom-parts.test.ts
// fails by name if an upgrade moves any of these files.
import { createRequire } from 'node:module';
import type * as Prom from 'prom-client';

const require = createRequire(import.meta.url);

export const Registry = require('prom-client/lib/registry') as typeof Prom.Registry;
export const Counter = require('prom-client/lib/counter') as typeof Prom.Counter;
export const Gauge = require('prom-client/lib/gauge') as typeof Prom.Gauge;
export const Histogram = require('prom-client/lib/histogram') as typeof Prom.Histogram;
export type Registry = Prom.Registry;

/** prom-client's collectDefaultMetrics, loaded on first use. */
export function defaultMetricsCollector(): typeof Prom.collectDefaultMetrics {
  return require('prom-client/lib/defaultMetrics') as typeof Prom.collectDefaultMetrics;
}
