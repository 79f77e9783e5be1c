// An in-memory CliIO for running main() inside tests.
import type { CliIO } from '../../src/cli/io.js';

export interface CapturedIO extends CliIO {
  readonly out: () => string;
  readonly err: () => string;
  /** Resolves once stdout matches. */
  readonly waitForOut: (pattern: RegExp) => Promise<void>;
  readonly stopNow: () => void;
}

export function captureIO(options: { env?: Record<string, string | undefined>; cwd?: string; stdin?: string } = {}): CapturedIO {
  let out = '';
  let err = '';
  const controller = new AbortController();
  let waiters: Array<{ pattern: RegExp; resolve: () => void }> = [];
  return {
    stdout: (text) => {
      out += text;
      waiters = waiters.filter((w) => (w.pattern.test(out) ? (w.resolve(), false) : true));
    },
    stderr: (text) => {
      err += text;
    },
    env: options.env ?? {},
    cwd: options.cwd ?? '/srv/vera',
    stop: controller.signal,
    readStdin: (maxBytes) => Buffer.from(options.stdin ?? '', 'utf8').subarray(0, maxBytes),
    out: () => out,
    err: () => err,
    waitForOut: (pattern) => (pattern.test(out) ? Promise.resolve() : new Promise((resolve) => waiters.push({ pattern, resolve }))),
    stopNow: () => controller.abort(),
  };
}
