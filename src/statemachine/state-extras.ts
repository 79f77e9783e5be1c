// What a snapshot or backup carries besides the db's keys: the files each family
// keeps beside the db (family.filesInState), as records after every db key.
import { FAMILIES } from '../families/registry.js';
import type { StateExtras } from '../raft/state-transfer.js';
import type { VeraDb } from './types.js';

export function stateExtras(db: VeraDb): StateExtras {
  return async function* (snapshot) {
    for (const family of FAMILIES) if (family.filesInState !== undefined) yield* family.filesInState(db, snapshot);
  };
}
