// What applying an entry reports back, and the data shapes queries return.
// These are the shapes the server turns into protocol replies and notify frames.
import type { ClassicLevel } from 'classic-level';

/** The one LevelDB shared by the Raft log and the state machine, with raw byte keys and values. */
export type VeraDb = ClassicLevel<Buffer, Buffer>;

/** An item of a list (PROTOCOL.md "Paths and data"). */
export interface Item {
  readonly index: number;
  /** The owning session, or null for a persistent item. */
  readonly owner: string | null;
  readonly data: unknown;
}

export interface ChangeEvent {
  /** The index of the entry that made the change. */
  readonly index: number;
  readonly type: 'push' | 'delete';
  readonly path: string;
  readonly item: Item;
}

/** Codes a command can fail with at apply time; the same on every peer. */
export type ApplyErrorCode = 'BAD_REQUEST' | 'NOT_FOUND' | 'FORBIDDEN' | 'CONFLICT' | 'SESSION_EXPIRED' | 'QUOTA_EXCEEDED';

export interface ApplyError {
  readonly ok: false;
  readonly code: ApplyErrorCode;
  readonly message: string;
}

export type ApplySuccess =
  | { readonly ok: true; readonly op: 'noop' | 'config' | 'closeSession' | 'delete' | 'unwatch' | 'ack' }
  | { readonly ok: true; readonly op: 'openSession'; readonly session: string }
  /** `unwatched`: the push's implicit watch was left out, the session being at its watch limit. */
  | { readonly ok: true; readonly op: 'push'; readonly item: Item; readonly unwatched?: true }
  /** `items` is present for exact watches only: the list as of this entry. */
  | { readonly ok: true; readonly op: 'watch'; readonly index: number; readonly items?: readonly Item[]; readonly tooLarge?: true }
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
  readonly events: readonly ChangeEvent[];
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
