// The kit: what a family is written against (issue 33). The op schemas live in the
// protocol package, which the client shares; the server-side contract is here.
export { defineOp, invalid, type OpSchema, type RequestOfSchema, type ResultOfSchema } from '../protocol/index.js';
export { opRequest } from './requests.js';
export { USER_QUOTA_SINCE, userQuotaFor, type StorageLimits } from './user-storage.js';
// A family's /metrics lines in the Prometheus text format (HELP, TYPE, escaped labels).
export { metricLines, type MetricSample, type MetricType } from './metrics.js';
export type {
  AnyPlugin,
  AuditFacts,
  AuditFactSeen,
  CoreCaller,
  CoreOp,
  CoreOpHandler,
  FamilyHost,
  MemberStatus,
  HostAccess,
  HostLimits,
  SessionLimits,
  HostLists,
  HostMember,
  HostSessionClocks,
  LiveSession,
  OpCaller,
  OpHandler,
  PathAccess,
  PathUse,
  Plugin,
  PluginCommand,
  PluginConnection,
  PluginDuty,
  PluginNeed,
  PluginPathGuard,
  PluginRoute,
  PluginServer,
  RunsOn,
  StoreDb,
  StoreReader,
  StoreSnapshot,
  StoredEntry,
  UserLimits,
} from './plugin.js';
