// Reading a small JSON request body (the membership endpoints, families' POST routes).
import type { IncomingMessage } from 'node:http';
import { parseJson } from '../../protocol/json.js';
import { VeraError } from '../../protocol/index.js';

/** The largest body read: these endpoints take a few fields, never data. */
export const MAX_BODY_BYTES = 64 * 1024;

/** The body as a JSON object; TOO_LARGE past MAX_BODY_BYTES, BAD_REQUEST if it is not a JSON object. */
export async function readJsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  return parseJsonObject(await readBody(req));
}

/** The body's bytes; TOO_LARGE past MAX_BODY_BYTES. */
export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new VeraError('TOO_LARGE', `request body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** `bytes` as a JSON object; BAD_REQUEST if they are not one. */
export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = parseJson(Buffer.from(bytes).toString('utf8'));
  } catch (err) {
    if (err instanceof VeraError) throw err; // a value JSON cannot carry exactly (json.ts)
    throw new VeraError('BAD_REQUEST', 'request body must be a JSON object');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new VeraError('BAD_REQUEST', 'request body must be a JSON object');
  return parsed as Record<string, unknown>;
}
