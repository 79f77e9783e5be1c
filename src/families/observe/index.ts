// The observe family: read-only views of the cluster and its sessions (who
// holds them, what they watch, how far behind their notifications are) for
// operators and the dashboard. It replicates nothing: no commands, no buckets,
// only a server part.
import type { Family } from '../family.js';

export const observe: Family<never, null> = {
  name: 'observe',
  since: 1,
  buckets: [],
  ops: {},
  load: async () => null,
  plan: () => {
    throw new Error('the observe family has no commands');
  },
  goesAlone: () => false,
  server: async () => (await import('./server.js')).server,
};
