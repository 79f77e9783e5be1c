// What other families may use of the cluster family (docs/architecture.md "A family's
// public surface"): its state, the cluster's active command version.
export { cluster } from './index.js';
