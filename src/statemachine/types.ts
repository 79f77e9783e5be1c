// What applying an entry reports back, and the data shapes queries return.
// These are the shapes the server turns into protocol replies and notify frames.
import type { ClassicLevel } from 'classic-level';

/** The one LevelDB shared by the Raft log and the state machine, with raw byte keys and values. */
export type VeraDb = ClassicLevel<Buffer, Buffer>;

/**
 * What an applied entry reports changed, in order, for the server (notifier, event log). The
 * kernel only carries these from a family's plan to the outcome: the lists family says what
 * one is (its ChangeEvent) by filling in this slot (src/families/lists/item.ts).
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by declaration merging in src/families/lists/item.ts
export interface EventSlot {}
export type AppliedEvent = EventSlot extends { readonly event: infer E } ? E : unknown;

/** Codes a command can fail with at apply time; the same on every peer. */
export type ApplyErrorCode = 'BAD_REQUEST' | 'NOT_FOUND' | 'FORBIDDEN' | 'CONFLICT' | 'SESSION_EXPIRED' | 'QUOTA_EXCEEDED';

export interface ApplyError {
  readonly ok: false;
  readonly code: ApplyErrorCode;
  readonly message: string;
}

/**
 * The results of the ops of the families Vera had before the envelope (lists, sessions,
 * watches, lag), by op name: what each op's success carries besides `ok` and `op`. Empty
 * here: each of those families adds its own ops' results by declaration merging (e.g.
 * src/families/lists/index.ts), so the kernel names none of them.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by declaration merging in the first families' index.ts
export interface LegacyResults {}

export type ApplySuccess =
  /** The kernel's own entries. */
  | { readonly ok: true; readonly op: 'noop' | 'config' }
  | { [Op in keyof LegacyResults]: { readonly ok: true; readonly op: Op } & LegacyResults[Op] }[keyof LegacyResults]
  /** The result of a family added after these: opaque to the kernel, read by the family's own server part. */
  | FamilySuccess;

export interface FamilySuccess {
  readonly ok: true;
  readonly op: 'family';
  readonly family: string;
  readonly value: unknown;
}

export type ApplyResult = ApplySuccess | ApplyError;

export interface ApplyOutcome {
  readonly index: number;
  /**
   * True when the entry was at or below the applied index and so was not
   * applied again; `result` is then `{ok: true, op: 'noop'}` and there are no events.
   */
  readonly ignored: boolean;
  readonly result: ApplyResult;
  /** Changes to lists, in the order they were made (key order within one entry). */
  readonly events: readonly AppliedEvent[];
  /** The envelope's request id, when the entry is a write a member forwarded (docs/scale-out.md). */
  readonly r?: string;
}

/** Misuse of the state machine (bad query argument, out-of-order entry). */
export class StateMachineError extends Error {
  override readonly name = 'StateMachineError';
  constructor(
    readonly code: 'BAD_REQUEST' | 'OUT_OF_ORDER',
    message: string,
  ) {
    super(message);
  }
}

/** One write of an entry's LevelDB batch (what a family's plan lists; the family contract re-exports it). */
export type BatchOp = { type: 'put'; key: Buffer; value: Buffer } | { type: 'del'; key: Buffer };
