// What the CLI touches outside itself, bundled so tests can run main() in-process
// with captured output, a fake environment and their own stop signal.

export interface CliIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** Aborted when a long-running verb (start, watch, push --hold) should stop. */
  readonly stop: AbortSignal;
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
  };
}

/** Resolves when `signal` aborts. */
export function stopped(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
