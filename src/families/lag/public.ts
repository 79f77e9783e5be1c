// What other families may use of the lag family (docs/architecture.md "A family's
// public surface"): how far behind a session's acknowledgements are (observe shows it).
export { lagOf } from './queries.js';
