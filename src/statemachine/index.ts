// Public surface of the state machine.
export { StateMachine } from './state-machine.js';
export { CommandError, UnknownCommandError } from './family.js';
export { CorruptValueError } from './codec.js';
export { bookOf, configOf, encodeMembers, initialMembers, MEMBERS_KEY, type Member } from './members.js';
export {
  StateMachineError,
  type ApplyError,
  type ApplyErrorCode,
  type ApplyOutcome,
  type ApplyResult,
  type ApplySuccess,
  type AppliedEvent,
  type VeraDb,
} from './types.js';
