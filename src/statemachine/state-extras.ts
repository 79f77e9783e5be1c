// What a snapshot or backup carries besides the db's keys: the files each family
// keeps beside the db (family.filesInState), as records after every db key.
import type { AnyFamily } from './family.js';
import type { StateExtras } from '../raft/state-transfer.js';
import type { VeraDb } from './types.js';

/** `families`: the registry, handed in as to StateMachine.open. */
export function stateExtras(db: VeraDb, families: readonly AnyFamily[]): StateExtras {
  return async function* (snapshot) {
    for (const family of families) if (family.filesInState !== undefined) yield* family.filesInState(db, snapshot);
  };
}
