// The sessions family's key layout: 0x0004 client (session) records (see docs/storage.md).
import { assertSessionId, Bucket, bucketKey, KeyReader } from '../../keys/index.js';

const CLIENT = '/client/';

// ---------------------------------------------------------------- 0x0004 clients (sessions)

/** Client (session) record: 0x0004 + '/client/' + id. */
export function clientKey(session: string): Buffer {
  assertSessionId(session);
  return bucketKey(Bucket.client, CLIENT, session);
}

export function decodeClientKey(raw: Uint8Array): string {
  const reader = KeyReader.of(raw, Bucket.client, 'client');
  reader.marker(CLIENT);
  return reader.session(reader.rest());
}
