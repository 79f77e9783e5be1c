// Ops that command families add to the client protocol. The core ops (OPS) are
// validated by validate.ts; a family that answers ops of its own supplies a
// RequestBuilder for each, which checks that op's fields the same way (the field
// helpers below are the core ops' own), and the server and any client that
// speaks the op pass the builders in. An extension can never replace a core op.
import type { ProtocolLimits } from './types.js';

/** A request of an op a command family added: its fields as the family's builder checked them. */
export interface FamilyRequest {
  readonly id: number;
  readonly op: string;
  readonly [field: string]: unknown;
}

/** Checks one family op's fields; throws a VeraError (BAD_REQUEST, or TOO_LARGE) naming what is wrong. */
export type RequestBuilder = (frame: Readonly<Record<string, unknown>>, id: number, limits: ProtocolLimits) => FamilyRequest;

/** The reply fields of a family op (never `id` or `ok`, which the reply frame sets). */
export type FamilyResult = Readonly<Record<string, unknown>>;

/** The family ops a server answers (or a client speaks), by op name. */
export type ProtocolExtensions = ReadonlyMap<string, RequestBuilder>;
