// Tells the family contract (src/statemachine/family.ts) what a family's `server()` loads: the
// server's ServerPart. Declared here, on the server's side, so the contract never imports
// server code (it once did, which put 68 files in one loop of type imports).
import type { ServerPart } from './family-part.js';

declare module '../../statemachine/family.js' {
  interface ServerPartSlot {
    readonly part: ServerPart;
  }
}
