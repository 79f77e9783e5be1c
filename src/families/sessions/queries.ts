// The sessions family's queries (once methods of the StateMachine, which now only applies).
import type { StateReader } from '../../statemachine/family.js';
import type { SessionInfo } from './codec.js';
import { sessions } from './index.js';

/** Live sessions (as of the applied index). */
export function liveSessions(sm: StateReader): ReadonlyMap<string, SessionInfo> {
  return sm.stateOf(sessions).sessions;
}
