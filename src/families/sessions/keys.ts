// The sessions family's key layout: 0x0004 client (session) records (see docs/storage.md).
import { assertSessionId, bucketKey, KeyReader } from '../../keys/index.js';

/** The family's buckets (seed 003's numbers, docs/storage.md): the 2-byte prefix of each of its keys. */
export const SessionsBucket = {
  /** session id -> the session record. */
  client: 0x0004,
} as const;

const CLIENT = '/client/';

// ---------------------------------------------------------------- 0x0004 clients (sessions)

/** Client (session) record: 0x0004 + '/client/' + id. */
export function clientKey(session: string): Buffer {
  assertSessionId(session);
  return bucketKey(SessionsBucket.client, CLIENT, session);
}

export function decodeClientKey(raw: Uint8Array): string {
  const reader = KeyReader.of(raw, SessionsBucket.client, 'client');
  reader.marker(CLIENT);
  return reader.session(reader.rest());
}
