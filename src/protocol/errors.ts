// Error codes of the client protocol (../shared/PROTOCOL.md "Errors") and the one
// error class that server and client both throw, so a code means the same thing
// on either side of the wire.

export const ERROR_CODES = [
  'BAD_REQUEST',
  'TOO_LARGE',
  'NOT_LEADER',
  'NO_LEADER',
  'NOT_FOUND',
  'FORBIDDEN',
  'CONFLICT',
  'SESSION_EXPIRED',
  'UNAUTHORIZED',
  'RATE_LIMITED',
  'QUOTA_EXCEEDED',
  'UNAVAILABLE',
  'TIMEOUT',
  'INTERNAL',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const CODE_SET: ReadonlySet<string> = new Set(ERROR_CODES);

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && CODE_SET.has(value);
}

/**
 * The `reason` of an UNAVAILABLE refusal made before the request was proposed (the leader's
 * queue of uncommitted writes was full, leadership was moving, a membership change was
 * pending): nothing changed, so a client may send the write again after `retryAfterMs`.
 */
export const NOT_PROPOSED = 'not-proposed';

/** Extra fields an error may carry next to `code` and `message` on the wire. */
export interface ErrorHints {
  /** NOT_LEADER: the leader's client URL, `ws://host:port`. */
  readonly leader?: string;
  /** NO_LEADER, RATE_LIMITED, UNAVAILABLE: how long to wait before retrying. */
  readonly retryAfterMs?: number;
  /** A family's machine-readable reason beside the code, e.g. node assignment's `invalid-generation`. */
  readonly reason?: string;
}

/** The shape every protocol error has; VeraError satisfies it, and so do cheap plain objects. */
export interface ProtocolError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly hints?: ErrorHints;
}

export class VeraError extends Error implements ProtocolError {
  override readonly name = 'VeraError';
  readonly code: ErrorCode;
  readonly hints: ErrorHints;

  constructor(code: ErrorCode, message: string, hints: ErrorHints = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.hints = hints;
  }

  /** Builds a VeraError from the `error` object of a reply frame; anything malformed becomes INTERNAL. */
  static fromWire(error: unknown): VeraError {
    if (typeof error !== 'object' || error === null) {
      return new VeraError('INTERNAL', 'server sent an error reply without an error object');
    }
    const fields = error as Record<string, unknown>;
    const message = typeof fields.message === 'string' ? fields.message : '(no message)';
    if (!isErrorCode(fields.code)) {
      return new VeraError('INTERNAL', `server sent an unknown error code ${JSON.stringify(fields.code)}: ${message}`);
    }
    const hints: { leader?: string; retryAfterMs?: number; reason?: string } = {};
    if (typeof fields.leader === 'string') hints.leader = fields.leader;
    if (typeof fields.reason === 'string') hints.reason = fields.reason;
    if (typeof fields.retryAfterMs === 'number' && Number.isFinite(fields.retryAfterMs) && fields.retryAfterMs >= 0) {
      hints.retryAfterMs = fields.retryAfterMs;
    }
    return new VeraError(fields.code, message, hints);
  }
}

