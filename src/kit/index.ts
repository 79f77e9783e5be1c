// The kit: what a family is written against (issue 33). The op schemas live in the
// protocol package, which the client shares; the server-side contract is here.
export { defineOp, invalid, type OpSchema, type RequestOfSchema, type ResultOfSchema } from '../protocol/index.js';
export type { AnyPlugin, FamilyHost, OpCaller, OpHandler, Plugin, PluginCommand, PluginNeed, PluginServer } from './plugin.js';
