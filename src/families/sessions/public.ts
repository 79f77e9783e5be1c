// What other families may use of the sessions family (docs/architecture.md "A family's
// public surface"): its state (which sessions live, and whose principal each holds), why
// a command's session may not act, and the live sessions as a read sees them.
export { sessions, sessionProblem } from './index.js';
export { liveSessions } from './queries.js';
