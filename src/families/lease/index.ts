// The lease family: lifetimes with their own TTL, kept alive by keep-alives and
// independent of any connection (etcd's model), beside the sessions a
// connection holds. A lease is a session no connection is bound to: it is
// opened and closed through the sessions family's entries, its clock is the
// leader's session clock (expiry decided by the leader and committed), and the
// items it owns (put or pushed with `lease`, family kv) are deleted with it in
// the entry that ends it, with an event to every watcher. It replicates nothing
// of its own: no commands, no buckets, only a server side (a kit plugin). See docs/kv.md.
import { pluginOnlyFamily } from '../../statemachine/family.js';

export const lease = pluginOnlyFamily('lease', async () => (await import('./server.js')).plugin);
