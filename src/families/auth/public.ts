// What other families may use of the auth family (docs/architecture.md "A family's
// public surface"): its state, for the switch's token key and the users' roles and
// quotas, and the rule that turns those settings into one user's storage limits.
export { auth } from './index.js';
export { limitsOf } from './quotas.js';
