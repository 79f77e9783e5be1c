// Calls a family's ops through their schemas (src/protocol/op-schema.ts): the
// request is checked by the same parse the server runs, and the result comes back
// typed, so a family client needs no casts.
import { buildersOf, type AnyOpSchema, type RequestOfSchema, type ResultOfSchema } from '../protocol/index.js';
import type { VeraClient } from './client.js';

export type TypedCall<Schemas extends Readonly<Record<string, AnyOpSchema>>> = <K extends keyof Schemas & string>(
  op: K,
  request: Omit<RequestOfSchema<Schemas[K]>, never> | Partial<RequestOfSchema<Schemas[K]>>,
) => Promise<ResultOfSchema<Schemas[K]>>;

/** A caller of `schemas`' ops on `client`; reads (schema.read) are sent again after a lost connection, as a get is. */
export function typedCaller<Schemas extends Readonly<Record<string, AnyOpSchema>>>(client: VeraClient, schemas: Schemas): TypedCall<Schemas> {
  const builders = buildersOf(Object.values(schemas));
  return async (op, request) => {
    const schema = schemas[op]!;
    // The one cast: the server answered this op, whose schema names the result type.
    return (await client.callFamilyOp(schema.name, request as Readonly<Record<string, unknown>>, builders.get(schema.name)!, schema.read)) as unknown as ResultOfSchema<Schemas[typeof op]>;
  };
}

/**
 * TypedCall, but the ops named in `Inputs` take the fields as a caller writes them (`Inputs[op]`),
 * for ops whose parse gives another shape (data not yet encoded, a policy's defaults left out):
 * the same parse checks them before sending. The other ops take their request as TypedCall's do.
 */
export type InputCall<Schemas extends Readonly<Record<string, AnyOpSchema>>, Inputs> = <K extends keyof Schemas & string>(
  op: K,
  request: K extends keyof Inputs ? Inputs[K] : Omit<RequestOfSchema<Schemas[K]>, never> | Partial<RequestOfSchema<Schemas[K]>>,
) => Promise<ResultOfSchema<Schemas[K]>>;

/** A caller of `schemas`' ops on `client` whose `Inputs` ops take a caller's own fields (see InputCall). */
export function inputCaller<Schemas extends Readonly<Record<string, AnyOpSchema>>, Inputs>(client: VeraClient, schemas: Schemas): InputCall<Schemas, Inputs> {
  const builders = buildersOf(Object.values(schemas));
  return async (op, request) => {
    const schema = schemas[op]!;
    // As typedCaller's one cast: the server answered this op, whose schema names the result type.
    return (await client.callFamilyOp(schema.name, request as Readonly<Record<string, unknown>>, builders.get(schema.name)!, schema.read)) as unknown as ResultOfSchema<Schemas[typeof op]>;
  };
}
