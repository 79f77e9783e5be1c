// The lag family's key layout: 0x0007 the notification index each session acknowledged (see docs/storage.md).
import { assertSessionId, Bucket, bucketKey, KeyReader } from '../../keys/index.js';

const LAG = '/lag/';

// ---------------------------------------------------------------- 0x0007 client lag

/** Highest notification index a session acknowledged: 0x0007 + '/lag/' + id. */
export function lagKey(session: string): Buffer {
  assertSessionId(session);
  return bucketKey(Bucket.lag, LAG, session);
}

export function decodeLagKey(raw: Uint8Array): string {
  const reader = KeyReader.of(raw, Bucket.lag, 'lag');
  reader.marker(LAG);
  return reader.session(reader.rest());
}
