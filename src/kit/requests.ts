// Builds the request an op stands for from plain fields (an HTTP route's query or
// body), checked by the op's own schema exactly as a frame of that op is.
import { buildersOf, type FamilyRequest, type OpSchema, type ProtocolLimits } from '../protocol/index.js';

/** The request of `schema`'s op with `fields`; throws BAD_REQUEST (`invalid`) naming what is wrong, as the frame decoder would. */
export function opRequest<Req extends object>(schema: OpSchema<Req, object>, fields: Readonly<Record<string, unknown>>, limits: ProtocolLimits): FamilyRequest {
  return buildersOf([schema]).get(schema.name)!(fields, 0, limits);
}
