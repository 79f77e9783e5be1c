// The watches family's queries (once methods of the StateMachine, which now only applies).
import type { StateReader } from '../../statemachine/family.js';
import { checkPath } from '../query-checks.js';
import type { WatchRef } from './keys.js';
import { watches } from './index.js';

/** Sessions to notify of a change to `path`: its exact watchers and prefix watchers of it or any ancestor. */
export function watchersOf(sm: StateReader, path: string): Set<string> {
  checkPath(path, true);
  return sm.stateOf(watches).watchersOf(path);
}

/** The watches one session holds, in key order. */
export function watchesOf(sm: StateReader, session: string): WatchRef[] {
  return sm.stateOf(watches).of(session);
}
