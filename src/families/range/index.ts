// The range family: reads over many lists and long lists, page by page. The
// paths below a prefix (recursively, in order, with the newest index of each),
// and a list's items after an index. Each answer says the applied index it
// reflects and where the next page starts. It replicates nothing: no commands,
// no buckets, only a server side (a kit plugin).
import { pluginOnlyFamily } from '../../statemachine/family.js';

export const range = pluginOnlyFamily('range', async () => (await import('./server.js')).plugin);
