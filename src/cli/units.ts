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

const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const SIZE_UNITS: Readonly<Record<string, number>> = { '': 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2 };

// A bare number is milliseconds; otherwise one or more number-unit parts, largest
// unit first, each unit at most once (`1h30m`, `1d12h`, `2m30s`, `1500ms`).
const DURATION_PART = /(\d+)(ms|s|m|h|d)/gy;
const DURATION_EXPECTED = 'a duration like 5000 (milliseconds), 500ms, 5s, 2m, 1h, 7d or 1h30m';

/** Milliseconds from `5000`, `500ms`, `5s`, `2m`, `1h`, `7d`, or combinations such as `1h30m`. */
export function parseDuration(value: string | number, what: string): number {
  const text = String(value).trim().toLowerCase();
  const refuse = (): never => {
    throw new UsageError(`${what} must be ${DURATION_EXPECTED}, got ${JSON.stringify(value)}`);
  };
  if (/^\d+$/.test(text)) return positiveSafe(Number(text), refuse);
  let total = 0;
  let end = 0;
  let lastUnitMs = Infinity;
  DURATION_PART.lastIndex = 0;
  for (let m = DURATION_PART.exec(text); m !== null; m = DURATION_PART.exec(text)) {
    const unitMs = DURATION_UNITS[m[2]!]!;
    if (unitMs >= lastUnitMs) refuse(); // `30s1m` or `1m1m`: almost surely a typo
    lastUnitMs = unitMs;
    total += Number(m[1]) * unitMs;
    end = DURATION_PART.lastIndex;
  }
  if (end === 0 || end !== text.length) refuse();
  return positiveSafe(total, refuse);
}

function positiveSafe(n: number, refuse: () => never): number {
  return Number.isSafeInteger(n) && n > 0 ? n : refuse();
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
