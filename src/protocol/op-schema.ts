// A family op's schema, written once and read by both ends: the client checks a
// request with it before sending, the server checks the same frame with it on
// arrival, and both sides get the request's and the result's TypeScript types
// from it. Before this, each family wrote a RequestBuilder that returned an
// untyped record, and its handlers and client re-cast every field (`r.x as string`).
import { onlyFields } from './validate.js';
import type { FamilyRequest, RequestBuilder } from './extension.js';
import type { ProtocolLimits } from './types.js';

export type Fields = Readonly<Record<string, unknown>>;

export interface OpSchema<Req extends object, Res extends object> {
  /** The op's name on the wire: `<family>.<verb>`. */
  readonly name: string;
  /** Changes nothing: a client may send it again after a lost connection, as it does a get. */
  readonly read: boolean;
  /** The fields a request may carry (anything else is refused). */
  readonly fields: readonly string[];
  /** Checks the fields (already limited to `fields`) and returns the typed request; throws `invalid(...)` naming what is wrong. */
  readonly parse: (fields: Fields, limits: ProtocolLimits) => Req;
  /** Never set: carries the result type, so a handler and a caller agree on it. */
  readonly result?: Res;
}

export type AnyOpSchema = OpSchema<object, object>;
export type RequestOfSchema<S> = S extends OpSchema<infer Req, object> ? Req : never;
export type ResultOfSchema<S> = S extends OpSchema<object, infer Res> ? Res : never;

/** An op schema; `Res` is the result type the handler returns and the caller receives. */
export function defineOp<Req extends object, Res extends object>(spec: {
  readonly name: string;
  readonly read?: boolean;
  readonly fields: readonly string[];
  readonly parse: (fields: Fields, limits: ProtocolLimits) => Req;
  /** The op was named before ops carried their family's name (kv's put and txn): a bare verb, kept as the wire has it. */
  readonly unprefixed?: boolean;
}): OpSchema<Req, Res> {
  const pattern = spec.unprefixed === true ? /^[a-z][a-zA-Z0-9]*$/ : /^[a-z][a-zA-Z0-9]*\.[a-z][a-zA-Z0-9]*$/;
  if (!pattern.test(spec.name)) throw new Error(`op name ${spec.name} is not ${spec.unprefixed === true ? 'a bare verb' : '<family>.<verb>'}`);
  return { name: spec.name, read: spec.read ?? false, fields: spec.fields, parse: spec.parse };
}

/** The request builders the frame decoder and the client's family caller take, one per schema. */
export function buildersOf(schemas: readonly AnyOpSchema[]): ReadonlyMap<string, RequestBuilder> {
  const out = new Map<string, RequestBuilder>();
  for (const schema of schemas) {
    if (out.has(schema.name)) throw new Error(`op ${schema.name} is defined twice`);
    out.set(schema.name, (frame, id, limits) => {
      onlyFields(frame, schema.fields);
      return { ...schema.parse(frame, limits), id, op: schema.name };
    });
  }
  return out;
}

/**
 * The typed request inside a request its schema's builder made. The one cast of the
 * typed ops: the builder above built `request` from `schema.parse`, so its fields are a `Req`.
 */
export function typedRequest<Req extends object>(_schema: OpSchema<Req, object>, request: FamilyRequest): Req {
  return request as unknown as Req;
}
