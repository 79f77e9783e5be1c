// The TypeScript client library for Vera. See docs/protocol.md for the wire contract.
export { connect, VeraClient } from './client.js';
export type { ClientEvents, ClientState, ConnectedInfo, ConnectOptions, GetOptions, PushOptions, WatchOptions } from './client.js';
export type { TlsClientOptions } from './connection.js';
export type { ClientEvent, ResyncEvent } from './notifications.js';
export type { BackoffOptions } from './backoff.js';
export { sessionUrl, leaderSessionUrl, httpBaseUrl } from './urls.js';
export { VeraError, isErrorCode, ERROR_CODES } from '../protocol/index.js';
export type { ErrorCode, ErrorHints } from '../protocol/index.js';
export type { ChangeEvent, Encoding, GetResult, Item, JsonValue, LsResult, ResyncList, WatchResult } from '../protocol/index.js';
