// The range family: reads over many lists and long lists, page by page. The
// paths below a prefix (recursively, in order, with the newest index of each),
// and a list's items after an index. Each answer says the applied index it
// reflects and where the next page starts. It replicates nothing: no commands,
// no buckets, only a server part.
import type { Family } from '../family.js';

export const range: Family<never, null> = {
  name: 'range',
  since: 1,
  buckets: [],
  ops: {},
  load: async () => null,
  plan: () => {
    throw new Error('the range family has no commands');
  },
  goesAlone: () => false,
  server: async () => (await import('./server.js')).server,
};
