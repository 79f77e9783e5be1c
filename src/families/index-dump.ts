// A plain, sorted copy of the first four families' in-memory indexes, for tests
// and diagnostics: equal dumps mean equal indexes (the determinism test compares them).
import { entriesInKeyOrder } from '../keys/index.js';
import type { SessionInfo } from './sessions/codec.js';
import type { StateReader } from '../statemachine/family.js';
import { lag } from './lag/index.js';
import { lists } from './lists/index.js';
import { sessions } from './sessions/index.js';
import { watches } from './watches/index.js';

export interface IndexDump {
  readonly sessions: Array<[string, SessionInfo]>;
  readonly exactWatchers: Array<[string, string[]]>;
  readonly prefixWatchers: Array<[string, string[]]>;
  readonly newestIndex: Array<[string, number]>;
  readonly lag: Array<[string, number]>;
}

export function inspectIndexes(sm: StateReader): IndexDump {
  return {
    sessions: entriesInKeyOrder(sm.stateOf(sessions).sessions).map(([k, v]) => [k, { ...v }]),
    ...sm.stateOf(watches).dump(),
    newestIndex: sm.stateOf(lists).dump(),
    lag: sm.stateOf(lag).dump(),
  };
}
