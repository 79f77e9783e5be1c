// Exit codes of the `vera` command, and the error that means "you called it wrong".

export const EXIT = {
  ok: 0,
  /** The server answered with an error (or failed while running). */
  serverError: 1,
  /** Bad flags or arguments. */
  usage: 2,
  /** No server could be reached. */
  cannotConnect: 3,
} as const;

/** Bad command-line input: printed with a pointer to --help, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
