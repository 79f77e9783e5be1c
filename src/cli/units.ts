// Parsing of the values flags and config files carry: host:port pairs,
// durations, byte sizes, counts. Each throws a UsageError naming the flag.
import type { HostPort } from '../server/config.js';
import { UsageError } from './errors.js';

// A hostname or IPv4 address, or an IPv6 address in brackets.
const HOST = /^(?:\[[0-9a-fA-F:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)$/;

/** `HOST:PORT`, IPv6 as `[::1]:PORT`; the host is returned without brackets. */
export function parseHostPort(text: string, what: string, options: { allowPortZero: boolean }): HostPort {
  const cut = text.lastIndexOf(':');
  if (cut <= 0) throw new UsageError(`${what} must be HOST:PORT, got ${JSON.stringify(text)}`);
  return { host: parseHost(text.slice(0, cut), what), port: parsePort(text.slice(cut + 1), what, options) };
}

export function parseHost(text: string, what: string): string {
  if (!HOST.test(text)) throw new UsageError(`${what} has an invalid host ${JSON.stringify(text)}`);
  return text.startsWith('[') ? text.slice(1, -1) : text;
}

export function parsePort(text: string, what: string, options: { allowPortZero: boolean }): number {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  const min = options.allowPortZero ? 0 : 1;
  if (!(port >= min && port <= 65535)) throw new UsageError(`${what} has an invalid port ${JSON.stringify(text)} (expected ${min}-65535)`);
  return port;
}

const DURATION_UNITS: Readonly<Record<string, number>> = { '': 1, ms: 1, s: 1000, m: 60_000 };
const SIZE_UNITS: Readonly<Record<string, number>> = { '': 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2 };

/** Milliseconds: `5000`, `5000ms`, `5s`, `2m`. */
export function parseDuration(value: string | number, what: string): number {
  return parseScaled(value, what, DURATION_UNITS, 'a duration like 5000, 5s or 2m');
}

/** Bytes: `1048576`, `512KiB`, `1MiB` (K and M are binary multiples). */
export function parseSize(value: string | number, what: string): number {
  return parseScaled(value, what, SIZE_UNITS, 'a size like 1048576, 512KiB or 1MiB');
}

/** A positive whole number. */
export function parseCount(value: string | number, what: string): number {
  return parseScaled(value, what, { '': 1 }, 'a positive whole number');
}

function parseScaled(value: string | number, what: string, units: Readonly<Record<string, number>>, expected: string): number {
  const text = String(value).trim();
  const match = /^(\d+)\s*([a-zA-Z]*)$/.exec(text);
  const unit = match === null ? undefined : units[match[2]!.toLowerCase()];
  const result = match === null || unit === undefined ? NaN : Number(match[1]) * unit;
  if (!Number.isSafeInteger(result) || result <= 0) throw new UsageError(`${what} must be ${expected}, got ${JSON.stringify(value)}`);
  return result;
}
