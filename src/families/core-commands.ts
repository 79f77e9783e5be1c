// The commands of the four families Vera had before the entry envelope (sessions,
// lists, watches, lag) as one union: what the server proposes for the core ops and
// what decodeCommand gives back, beside the entry codec (commands.ts) that
// encodes them.
import { decodeEntryCommand, type FamilyCommand } from './commands.js';
import type { AckCommand } from './lag/index.js';
import type { DeleteCommand, PushCommand, PushQuota } from './lists/index.js';
import type { CloseSessionCommand, OpenSessionCommand, SessionQuota } from './sessions/index.js';
import type { WatchCommand, WatchQuota } from './watches/index.js';

export { MAX_QUOTA } from './fields.js';
export { MAX_REMOTE_LENGTH, MAX_TIMEOUT_MS } from './sessions/index.js';
export type { AckCommand, CloseSessionCommand, DeleteCommand, OpenSessionCommand, PushCommand, PushQuota, SessionQuota, WatchCommand, WatchQuota };

export type Command = OpenSessionCommand | CloseSessionCommand | PushCommand | DeleteCommand | WatchCommand | AckCommand;
export type CommandOp = Command['op'];

/** Any command a member proposes: one of the first four families' (no `family` field), or a later family's. */
export type AnyCommand = Command | FamilyCommand;

/** Decodes an entry's command, expecting one of the first four families'. */
export function decodeCommand(bytes: Uint8Array): Command {
  return decodeEntryCommand(bytes).command as Command;
}
