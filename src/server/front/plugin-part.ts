// Runs a kit plugin (src/kit/plugin.ts) as a server part: its op schemas become
// the family's protocol ops, its needs the permission checks, and its handlers
// are called on the member's own instance, made from a FamilyHost on first use.
// The FamilyHost is the only view of the front end a plugin gets.
import { buildersOf, typedRequest, type AnyOpSchema } from '../../protocol/index.js';
import type { AnyPlugin, FamilyHost, PluginServer } from '../../kit/plugin.js';
import type { AnyFamily } from '../../statemachine/family.js';
import { expectOk, notLeaderError, type FrontEnd } from './context.js';
import { proposeTimed, type FamilyOp, type FamilyOpCall, type ServerPart } from './family-part.js';
import type { AnyCommand } from '../../families/core-commands.js';

function hostOf(fe: FrontEnd, family: AnyFamily): FamilyHost<unknown> {
  const sm = fe.node.stateMachine;
  const log = fe.logger.child({ family: family.name });
  return {
    propose: async (command) => {
      const result = expectOk(await proposeTimed(fe, { ...command, family: family.name } as unknown as AnyCommand));
      return result.op === 'family' ? result.value : undefined;
    },
    barrier: () => fe.node.linearizableBarrier(fe.readTimeoutMs),
    state: () => sm.stateOf(family),
    now: () => sm.clock,
    isLeader: () => fe.isLeader(),
    notLeader: () => notLeaderError(fe),
    log: { info: (fields, msg) => log.info(fields, msg), warn: (fields, msg) => log.warn(fields, msg) },
  };
}

/** The server part of `family`, whose server side is `plugin`. */
export function pluginPart(family: AnyFamily, plugin: AnyPlugin): ServerPart {
  // One instance per front end (a test process may run several members).
  const instances = new WeakMap<FrontEnd, PluginServer<Record<string, AnyOpSchema>>>();
  const instanceFor = (fe: FrontEnd): PluginServer<Record<string, AnyOpSchema>> => {
    let instance = instances.get(fe);
    if (instance === undefined) {
      instance = plugin.createServer(hostOf(fe, family)) as PluginServer<Record<string, AnyOpSchema>>;
      instances.set(fe, instance);
    }
    return instance;
  };
  const schemas = Object.entries(plugin.ops as Record<string, AnyOpSchema>);
  const builders = buildersOf(schemas.map(([, schema]) => schema));
  const protocolOps: Record<string, FamilyOp> = {};
  for (const [key, schema] of schemas) {
    const needs = plugin.needs[key] as (request: object) => ReturnType<FamilyOp['needs']>;
    protocolOps[schema.name] = {
      build: builders.get(schema.name)!,
      needs: (request) => needs(typedRequest(schema, request)),
      // Declared by the plugin: its ops use no list, so no path guard has anything to do.
      touches: () => [],
      handle: async (call: FamilyOpCall) => {
        const handler = instanceFor(call.fe).handlers[key]!;
        const result = await handler(typedRequest(schema, call.request), { session: call.session, user: call.principal, remote: call.remote });
        return result as Readonly<Record<string, unknown>>;
      },
    };
  }
  return { protocolOps };
}
