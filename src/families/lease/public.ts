// What other families may use of the lease family (docs/architecture.md "A family's
// public surface"): whether a lease can own a key now (kv's `put --lease`).
export { usableLease } from './usable.js';
