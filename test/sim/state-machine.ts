// The simulated application state machine: it only records how far it has
// applied and a digest of everything applied, which is enough to compare
// replicas. It is durable (survives a crash with its applied index), like the
// real state machine that writes each entry and its applied index in one
// LevelDB batch; so a restarted node resumes applying at applied + 1.

import type { Entry } from '../../src/raft/types.js';
import { entryContentHash } from './hash.js';

export class SimStateMachine {
  applied = 0;
  digest = 0x811c9dc5;
  commandsApplied = 0;

  apply(entry: Entry): void {
    if (entry.index !== this.applied + 1) {
      throw new Error(`state machine asked to apply index ${entry.index} after ${this.applied} (driver bug)`);
    }
    this.applied = entry.index;
    if (entry.kind === 'command') this.commandsApplied++;
    let h = Math.imul(this.digest ^ entry.index, 0x01000193);
    h = Math.imul(h ^ entry.term, 0x01000193);
    h = Math.imul(h ^ entryContentHash(entry), 0x01000193);
    this.digest = h >>> 0;
  }
}
