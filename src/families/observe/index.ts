// The observe family: read-only views of the cluster and its sessions (who
// holds them, what they watch, how far behind their notifications are) for
// operators and the dashboard. It replicates nothing: no commands, no buckets,
// only a server side (a kit plugin).
import { pluginOnlyFamily } from '../../statemachine/family.js';

export const observe = pluginOnlyFamily('observe', async () => (await import('./server.js')).plugin);
