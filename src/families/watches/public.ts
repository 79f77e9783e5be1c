// What other families may use of the watches family (docs/architecture.md "A family's
// public surface"): the watches a session holds (observe shows them).
export { watchesOf } from './queries.js';
