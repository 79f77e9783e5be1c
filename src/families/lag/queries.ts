// The lag family's queries (once methods of the StateMachine, which now only applies).
import type { StateReader } from '../../statemachine/family.js';
import { checkSession } from '../query-checks.js';
import { lag } from './index.js';

/** Highest notification index the session acknowledged (0 if none). */
export function lagOf(sm: StateReader, session: string): number {
  checkSession(session);
  return sm.stateOf(lag).of(session);
}
