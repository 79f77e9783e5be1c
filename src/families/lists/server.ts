// The lists family's client ops: push, delete and ls, core ops the connection
// judges (permissions, path guards) before it calls them. (A get is answered by
// the connection itself, which streams large lists at the pace the client reads.)
// A kit plugin.
import { packedData, VeraError, type PushRequest, type PushResult } from '../../protocol/index.js';
import type { CoreCaller, FamilyHost, Plugin } from '../../kit/index.js';
import type { ApplySuccess } from '../../statemachine/types.js';
import { wireItem } from './item.js';
import { WATCH_IF_ROOM_SINCE, type ListsCommand } from './index.js';
import type { ListsState } from './state.js';
import { userQuotaFor } from '../../kit/index.js';

type ListsHost = FamilyHost<ListsState, ApplySuccess, ListsCommand>;

async function push(host: ListsHost, req: PushRequest, { session, frameBytes }: CoreCaller): Promise<PushResult> {
  host.admitWrite(frameBytes);
  const { watchesPerSession, itemsPerSession, bytesPerSession, itemsPerList } = host.limits;
  const active = host.commandVersion();
  const r = await host.propose({
    op: 'push',
    session,
    path: req.path,
    // The bytes the data was measured in ride on into the entry, the stored item and the reply.
    data: packedData(req),
    persistent: req.persistent ?? false,
    watch: req.watch ?? true,
    ...(req.ifLastIndex === undefined ? {} : { ifLastIndex: req.ifLastIndex }),
    // Judged in apply, so concurrent pushes cannot together pass a limit.
    quota: { watches: watchesPerSession, items: itemsPerSession, bytes: bytesPerSession, listItems: itemsPerList },
    // The user's storage quota, judged in apply too.
    ...userQuotaFor(active, host.userLimits),
    // A watch the client did not ask for never refuses its push (once every member applies that rule).
    ...(req.watch === undefined && active >= WATCH_IF_ROOM_SINCE ? { watchIfRoom: true as const } : {}),
  });
  if (r.op !== 'push') throw new VeraError('INTERNAL', `push applied as ${r.op}`);
  return r.unwatched === true ? { item: wireItem(r.item), watched: false } : { item: wireItem(r.item) };
}

export const plugin: Plugin<Record<string, never>, ListsState, ApplySuccess, ListsCommand> = {
  ops: {},
  needs: {},
  touchesNoLists: 'the lists family answers only core ops, whose paths the connection judges',
  createServer: (host) => ({
    handlers: {},
    coreOps: {
      push: (req, caller) => push(host, req, caller),
      delete: async (req, { session }) => {
        await host.propose({ op: 'delete', session, path: req.path, index: req.index });
        return {};
      },
      ls: async (req) => {
        await host.barrier();
        // Lists held outside the item bucket (hibernated ones) are children too; listing them thaws nothing.
        return host.lists.childrenOf(req.path);
      },
    },
  }),
};
