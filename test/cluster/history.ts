// A recorder for concurrent client operations on Vera lists, the input of the
// linearizability checker (linearizability.ts).
//
// Each operation is recorded when it is invoked and again when it completes, with
// times from one monotonic clock (performance.now() by default). The outcome says
// how much we know:
//   ok      - the server answered with a result;
//   fail    - the server answered with an error that proves the operation took no
//             effect (e.g. NOT_LEADER, BAD_REQUEST) or that it was evaluated and
//             refused (CONFLICT for a compare-and-set push, NOT_FOUND for a delete);
//   unknown - timeout, lost connection, UNAVAILABLE: it may or may not have happened.
// When unsure, record `unknown`: a wrong `fail` can make a correct server look
// broken, a wrong `unknown` only makes the check weaker.

import { performance } from 'node:perf_hooks';

/** A malformed history or a misuse of the recorder; the checker refuses to guess. */
export class HistoryError extends Error {
  override readonly name = 'HistoryError';
}

export type OpKind = 'push' | 'delete' | 'get';

/** An item of a list, as the protocol returns it. */
export interface HistoryItem {
  readonly index: number;
  readonly data: unknown;
  readonly owner?: string | null;
}

export type OpOutcome<V> =
  | { readonly kind: 'ok'; readonly value: V }
  | { readonly kind: 'fail'; readonly code: string }
  | { readonly kind: 'unknown' };

export interface PushArgs {
  readonly data: unknown;
  /** Compare-and-set: succeed only if the list's newest item has this index (0 = empty list). */
  readonly ifLastIndex?: number;
}
export interface DeleteArgs {
  readonly index: number;
}
export type GetArgs = Readonly<Record<string, never>>;

/** What each operation takes and what it returns when ok. */
export interface OpSignatures {
  push: { args: PushArgs; value: HistoryItem };
  delete: { args: DeleteArgs; value: null };
  get: { args: GetArgs; value: readonly HistoryItem[] };
}
export type ArgsOf<K extends OpKind> = OpSignatures[K]['args'];
export type ValueOf<K extends OpKind> = OpSignatures[K]['value'];

interface OpRecordOf<K extends OpKind> {
  /** Unique within one history; the order of invocation. */
  readonly id: number;
  readonly client: string;
  readonly op: K;
  readonly path: string;
  readonly args: ArgsOf<K>;
  readonly invokedAt: number;
  /** When the client got its answer or gave up; null while (or if forever) pending. */
  readonly completedAt: number | null;
  readonly outcome: OpOutcome<ValueOf<K>>;
}
export type PushOp = OpRecordOf<'push'>;
export type DeleteOp = OpRecordOf<'delete'>;
export type GetOp = OpRecordOf<'get'>;
export type HistoryOp = PushOp | DeleteOp | GetOp;

/**
 * Error codes after which the operation certainly did not change anything. CONFLICT
 * and NOT_FOUND are evaluated answers (the checker uses them as reads); the others
 * are refusals before anything was proposed. SESSION_EXPIRED, TIMEOUT, UNAVAILABLE
 * and INTERNAL are left out on purpose: a request may have been committed before
 * the client heard any of those.
 */
export const DEFINITE_FAILURE_CODES: ReadonlySet<string> = new Set([
  'BAD_REQUEST',
  'TOO_LARGE',
  'NOT_LEADER',
  'NO_LEADER',
  'NOT_FOUND',
  'FORBIDDEN',
  'CONFLICT',
  'UNAUTHORIZED',
  'RATE_LIMITED',
]);

/** Maps a thrown error to an outcome: a definite failure when its `code` says so, unknown otherwise. */
export function classifyFailure(error: unknown): OpOutcome<never> {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code === 'string' && DEFINITE_FAILURE_CODES.has(code)) return { kind: 'fail', code };
  return { kind: 'unknown' };
}

/** An invoked operation waiting for its outcome; settles exactly once. */
export class PendingOp<K extends OpKind> {
  private settled = false;

  constructor(
    readonly id: number,
    private readonly onSettle: (outcome: OpOutcome<ValueOf<K>>) => void,
  ) {}

  ok(value: ValueOf<K>): void {
    this.settle({ kind: 'ok', value });
  }

  fail(code: string): void {
    if (typeof code !== 'string' || code.length === 0) throw new HistoryError(`op #${this.id}: a failure needs an error code`);
    this.settle({ kind: 'fail', code });
  }

  /** The client gave up without knowing whether the operation happened. */
  unknown(): void {
    this.settle({ kind: 'unknown' });
  }

  settle(outcome: OpOutcome<ValueOf<K>>): void {
    if (this.settled) throw new HistoryError(`op #${this.id} was already completed`);
    this.settled = true;
    this.onSettle(outcome);
  }
}

type MutableOp = { -readonly [P in keyof HistoryOp]: HistoryOp[P] };

export interface HistoryRecorderOptions {
  /** The monotonic clock, in ms; performance.now() unless a test injects one. */
  readonly now?: () => number;
}

export class HistoryRecorder {
  private readonly records: MutableOp[] = [];
  private readonly now: () => number;

  constructor(options: HistoryRecorderOptions = {}) {
    this.now = options.now ?? (() => performance.now());
  }

  /** Records an invocation now; call ok/fail/unknown on the result when it completes. */
  begin<K extends OpKind>(client: string, op: K, path: string, args: ArgsOf<K>): PendingOp<K> {
    if (typeof client !== 'string' || client.length === 0) throw new HistoryError('client must be a non-empty string');
    if (typeof path !== 'string' || !path.startsWith('/')) throw new HistoryError(`path must start with "/", got ${JSON.stringify(path)}`);
    const record = {
      id: this.records.length,
      client,
      op,
      path,
      args,
      invokedAt: this.now(),
      completedAt: null,
      outcome: { kind: 'unknown' },
    } as MutableOp;
    this.records.push(record);
    return new PendingOp<K>(record.id, (outcome) => {
      record.completedAt = this.now();
      record.outcome = outcome as MutableOp['outcome'];
    });
  }

  /**
   * Runs `call` as one recorded operation: its value is recorded as ok, a thrown
   * error through `classify` (definite failure or unknown). Returns or rethrows
   * whatever `call` does, so workloads can react to errors as usual.
   */
  async run<K extends OpKind>(
    client: string,
    op: K,
    path: string,
    args: ArgsOf<K>,
    call: () => Promise<ValueOf<K>>,
    classify: (error: unknown) => OpOutcome<never> = classifyFailure,
  ): Promise<ValueOf<K>> {
    const pending = this.begin(client, op, path, args);
    let value: ValueOf<K>;
    try {
      value = await call();
    } catch (error) {
      pending.settle(classify(error));
      throw error;
    }
    pending.ok(value);
    return value;
  }

  /** A snapshot of every recorded operation in invocation order (pending ones as unknown, completedAt null). */
  history(): HistoryOp[] {
    return this.records.map((r) => ({ ...r }) as HistoryOp);
  }

  get size(): number {
    return this.records.length;
  }
}
