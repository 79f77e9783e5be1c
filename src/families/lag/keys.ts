// The lag family's key layout: 0x0007 the notification index each session acknowledged (see docs/storage.md).
import { assertSessionId, bucketKey, KeyReader } from '../../keys/index.js';

/** The family's buckets (seed 003's numbers, docs/storage.md): the 2-byte prefix of each of its keys. */
export const LagBucket = {
  /** session id -> the notification index it acknowledged. */
  lag: 0x0007,
} as const;

const LAG = '/lag/';

// ---------------------------------------------------------------- 0x0007 client lag

/** Highest notification index a session acknowledged: 0x0007 + '/lag/' + id. */
export function lagKey(session: string): Buffer {
  assertSessionId(session);
  return bucketKey(LagBucket.lag, LAG, session);
}

export function decodeLagKey(raw: Uint8Array): string {
  const reader = KeyReader.of(raw, LagBucket.lag, 'lag');
  reader.marker(LAG);
  return reader.session(reader.rest());
}
