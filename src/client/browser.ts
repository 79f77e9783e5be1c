// The client library for browsers: what `/ui/vera-client.js` exports (one ES
// module built by scripts/build-ui.ts). The same code as on Node, with the
// browser's WebSocket under it (transport.browser.ts) and no Node built-ins;
// docs/client.md says how to use it.
//
//   import { connect } from 'http://127.0.0.1:1919/ui/vera-client.js';
//   const client = await connect(location.origin, { encoding: 'json' });
export * from './index.js';
export { JournalClient } from '../families/journal/client.js';
export type { Claim, ClaimedItem, FlagEvent, FlaggedItem, FlagPage, JournalInfo, JournalSettingsInput, NewItem, ProcessOptions, Worker } from '../families/journal/client.js';
export { AssignClient } from '../families/assign/client.js';
export type { Assignment, Lookup, NodeInfo, NodeInput, PurgeResult, ServiceInfo, ServiceInput, UserRecord } from '../families/assign/client.js';
export { HibernateClient } from '../families/hibernate/client.js';
export type { FreezeResult, UnitInfo } from '../families/hibernate/client.js';
export { AuthClient } from '../families/auth/client.js';
export type { LoginResult } from '../families/auth/client.js';
export { AuditClient } from '../families/audit/client.js';
export type { AuditPage } from '../families/audit/client.js';
export { ObserveClient } from '../families/observe/client.js';
export type { ClusterView, MemberView, SessionDetail, SessionView } from '../families/observe/client.js';
export { KvClient } from '../families/kv/client.js';
export type { Compare, PutOptions, PutResult, Txn, TxnResult, TxnWrite } from '../families/kv/client.js';
export { LeaseClient } from '../families/lease/client.js';
export type { KeptAlive, LeaseInfo } from '../families/lease/client.js';
export { RangeClient } from '../families/range/client.js';
export type { ItemsPage, PathsPage, RangeOptions } from '../families/range/client.js';
