// The client wire protocol, shared by the server and the client library
// (../shared/PROTOCOL.md, docs/protocol.md): frame codecs, request and reply
// types, validation, error and close codes, limits, path rules. It imports
// nothing from the server, the state machine, Raft or the CLI, so the client
// can be used (and bundled) without them; test/architecture/imports.test.ts
// keeps it that way.
export * from './errors.js';
export * from './types.js';
export {
  boolField,
  checkDataSize,
  dataField,
  describe,
  helloFirstError,
  invalid,
  isCoreRequest,
  onlyFields,
  optional,
  packData,
  packedData,
  pathField,
  uintField,
  validateRequest,
  type Validation,
  type ValidateOptions,
} from './validate.js';
export type { FamilyRequest, FamilyResult, ProtocolExtensions, RequestBuilder } from './extension.js';
export { packValue } from './msgpack.js';
export { PackedValue } from './packed.js';
export { decodeFrame, encodeError, encodeFrame, encodeNotify, encodeReply, encodeRequest, NotifyFrames, type DecodedFrame, type EncodedFrame } from './client-frames.js';
export { decodeServerFrame, isItem, isItemList, type ServerFrame } from './server-frames.js';
export { MAX_PATH_BYTES, parentPath, pathAndAncestors, validatePath, type PathRules } from './path.js';
export { MAX_SESSION_ID_BYTES, validateSessionId } from './session-id.js';
export { utf8Length, type Bytes } from './platform.js';
export { buildersOf, defineOp, typedRequest, type AnyOpSchema, type OpSchema, type RequestOfSchema, type ResultOfSchema } from './op-schema.js';
