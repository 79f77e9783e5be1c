// What the CLI touches outside itself, bundled so tests can run main() in-process
// with captured output, a fake environment and their own stop signal.
import { readSync } from 'node:fs';

export interface CliIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** Aborted when a long-running verb (start, watch, push --hold) should stop. */
  readonly stop: AbortSignal;
  /** Reads standard input to its end, or to `maxBytes` (DATA given as `-`). */
  readonly readStdin: (maxBytes: number) => Buffer;
}

/** The real process: stdout/stderr, process.env, and Ctrl-C / SIGTERM as the stop signal. */
export function processIO(): CliIO {
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    if (controller.signal.aborted) {
      // A second Ctrl-C means "now": skip the clean shutdown.
      process.exit(signal === 'SIGINT' ? 130 : 143);
    }
    controller.abort(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // `vera get /big | head`: the reader went away, which ends the output, not the command with a stack trace.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    env: process.env,
    cwd: process.cwd(),
    stop: controller.signal,
    readStdin: (maxBytes) => {
      // Synchronous on purpose: DATA is read before anything connects.
      const chunks: Buffer[] = [];
      let total = 0;
      const chunk = Buffer.alloc(64 * 1024);
      for (;;) {
        let n: number;
        try {
          n = readSync(0, chunk, 0, chunk.length, null);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'EAGAIN') continue;
          if ((err as NodeJS.ErrnoException).code === 'EOF') break;
          throw err;
        }
        if (n === 0) break;
        chunks.push(Buffer.from(chunk.subarray(0, n)));
        total += n;
        if (total >= maxBytes) break;
      }
      return Buffer.concat(chunks);
    },
  };
}

/** Resolves when `signal` aborts. */
export function stopped(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
