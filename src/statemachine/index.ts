// Public surface of the state machine.
export { StateMachine } from './state-machine.js';
export {
  CommandError,
  MAX_REMOTE_LENGTH,
  MAX_TIMEOUT_MS,
  decodeCommand,
  encodeCommand,
  encodeEntryCommand,
  requiredVersion,
  UnknownCommandError,
  type AnyCommand,
  type FamilyCommand,
  type AckCommand,
  type CloseSessionCommand,
  type Command,
  type CommandOp,
  type DeleteCommand,
  type OpenSessionCommand,
  type PushCommand,
  type WatchCommand,
} from './commands.js';
export { CorruptValueError } from './codec.js';
export { bookOf, configOf, encodeMembers, initialMembers, MEMBERS_KEY, type Member } from './members.js';
export {
  StateMachineError,
  type ApplyError,
  type ApplyErrorCode,
  type ApplyOutcome,
  type ApplyResult,
  type ApplySuccess,
  type ChangeEvent,
  type ChildrenView,
  type Item,
  type ListView,
  type SessionInfo,
  type VeraDb,
} from './types.js';
