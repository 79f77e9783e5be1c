// The counter family's server side, written against the kit: typed handlers on an
// instance made per member from a FamilyHost. Nothing here imports the server.
import type { FamilyHost, Plugin, PluginServer } from '../../kit/index.js';
import { COUNTER_OPS, type CounterValue } from './wire.js';
import type { CounterState } from './index.js';

type Ops = typeof COUNTER_OPS;

function createServer(host: FamilyHost<CounterState>): PluginServer<Ops> {
  const currentValue = (name: string): CounterValue => {
    const value = host.state().get(name);
    return { name, value: value ?? 0, exists: value !== undefined };
  };
  return {
    handlers: {
      add: async ({ name, delta, ifValue }) => {
        if (!host.isLeader()) throw host.notLeader();
        return (await host.propose({ op: 'add', name, delta, ...(ifValue === undefined ? {} : { ifValue }) })) as CounterValue;
      },
      get: async ({ name, consistency }) => {
        if (consistency === 'linearizable') {
          if (!host.isLeader()) throw host.notLeader();
          await host.barrier();
        }
        return currentValue(name);
      },
      remove: async ({ name }) => {
        if (!host.isLeader()) throw host.notLeader();
        return (await host.propose({ op: 'remove', name })) as { removed: boolean };
      },
    },
  };
}

const resource = (name: string): string => `counter:${name}`;

export const plugin: Plugin<Ops, CounterState> = {
  ops: COUNTER_OPS,
  needs: {
    add: ({ name }) => [{ perm: 'write', resource: resource(name) }],
    get: ({ name }) => [{ perm: 'read', resource: resource(name) }],
    remove: ({ name }) => [{ perm: 'write', resource: resource(name) }],
  },
  touchesNoLists: 'counters live in their own bucket, not in lists',
  createServer,
};
