// The storage-node clean-up job a purge queues in a journal: everything a worker
// needs to make the DELETE a user's own device would make (Tokenserver's
// purge_old_records signs one with a token holding uid, node, fxa_uid and fxa_kid),
// because the record itself is gone once the purge entry applies.
import { endpointOf } from './wire.js';

/** The journal item's data for one purged record. */
export interface CleanupJob {
  readonly service: string;
  readonly uid: number;
  readonly email: string;
  /** The email's local part: FxA's account id, as the storage node knows the user. */
  readonly fxaUid: string;
  /** The node whose data goes (the record's, or the purge's override node). */
  readonly node: string;
  /** Where the DELETE goes: the service's pattern filled in for that node and uid. */
  readonly endpoint: string;
  readonly generation: number;
  readonly keysChangedAt: number;
  readonly clientState: string;
  /** `{keys-changed-at or generation, 13 digits}-{client state's bytes in base64url}`; null when the client state is not hex. */
  readonly fxaKid: string | null;
  readonly replacedAt: number;
}

interface PurgedRecord {
  readonly uid: number;
  readonly email: string;
  readonly node: string;
  readonly generation: number;
  readonly keysChangedAt: number;
  readonly clientState: string;
  readonly replacedAt: number;
}

const HEX = /^(?:[0-9a-fA-F]{2})*$/;

/**
 * The key id the storage node files the user's data under (Tokenserver's format_key_id):
 * the keys-changed-at, or the generation when none was seen, zero-padded to 13 digits,
 * then the client state's bytes in unpadded base64url.
 */
export function fxaKidOf(r: Pick<PurgedRecord, 'generation' | 'keysChangedAt' | 'clientState'>): string | null {
  if (!HEX.test(r.clientState)) return null;
  const stamp = String(r.keysChangedAt !== 0 ? r.keysChangedAt : r.generation).padStart(13, '0');
  return `${stamp}-${hexToBase64url(r.clientState)}`;
}

/** Without Buffer: the client library also runs in browsers. */
function hexToBase64url(hex: string): string {
  let binary = '';
  for (let i = 0; i < hex.length; i += 2) binary += String.fromCharCode(parseInt(hex.slice(i, i + 2), 16));
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

export function cleanupJob(service: string, pattern: string, r: PurgedRecord, node: string = r.node): CleanupJob {
  return {
    service,
    uid: r.uid,
    email: r.email,
    fxaUid: r.email.split('@', 1)[0]!,
    node,
    endpoint: endpointOf(pattern, service, node, r.uid),
    generation: r.generation,
    keysChangedAt: r.keysChangedAt,
    clientState: r.clientState,
    fxaKid: fxaKidOf(r),
    replacedAt: r.replacedAt,
  };
}

/** A journal item's data as a clean-up job, or a reason it is not one (a worker flags such items). */
export function parseCleanupJob(data: unknown): CleanupJob | string {
  if (typeof data !== 'object' || data === null) return 'not a map';
  const d = data as Record<string, unknown>;
  for (const f of ['service', 'email', 'node', 'endpoint', 'clientState'] as const) if (typeof d[f] !== 'string') return `${f} is not text`;
  for (const f of ['uid', 'generation', 'keysChangedAt'] as const) if (typeof d[f] !== 'number') return `${f} is not a number (queued by an older Vera, which carried no generation)`;
  let url: URL;
  try {
    url = new URL(d.endpoint as string);
  } catch {
    return `endpoint ${JSON.stringify(d.endpoint)} is not a URL`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `endpoint ${url.href} is not http(s)`;
  return data as CleanupJob;
}
