// Where a Vera leader's CPU time goes under S2 at 256 in flight, in the
// buckets that tell the cost of TLS and authentication apart from the rest:
// the permission checks and per-user meter, Node's TLS layer, and native work
// no JavaScript frame called (where decrypting what arrives ends up).
import { summarizeProfile, type CpuProfile, type ProfileEntry } from '../lib/cpu-profile.js';

export interface ProfileBucket {
  readonly name: string;
  readonly selfMs: number;
  /** Share of the busy (non-idle) time, percent. */
  readonly percent: number;
}

export interface SecurityProfile {
  /** The profiled window and how much of it the leader's main thread was busy. */
  readonly totalMs: number;
  readonly busyMs: number;
  /** Writes a second during the profiled run (its own, not a measured one). */
  readonly opsPerSec: number;
  /** The leader's busy main-thread time per write, microseconds. */
  readonly busyUsPerOp: number;
  readonly buckets: readonly ProfileBucket[];
  readonly topFunctions: readonly ProfileEntry[];
  /** The saved profile, relative to the repository. */
  readonly file: string | null;
}

interface BucketSpec {
  readonly name: string;
  readonly match: (functionName: string, url: string) => boolean;
}

/** The native functions a stream write ends in (StreamBase): under TLS each encrypts what it writes. */
const SOCKET_WRITES = new Set(['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String', 'writeAsciiString', 'writeUcs2String']);

/** The buckets, first match wins; what matches none is "everything else". */
export const BUCKETS: readonly BucketSpec[] = [
  { name: 'permission checks and per-user meter (server/access, server/principal-limits, families/auth)', match: (_f, url) => /\/dist\/server\/(access|principal-limits)\.js$/.test(url) || url.includes('/dist/families/auth/') },
  { name: "Node's TLS layer (node:_tls_wrap, node:tls, internal/tls)", match: (_f, url) => /^node:(_tls_|tls$|internal\/tls\/)/.test(url) },
  { name: 'crypto (node:crypto, internal/crypto)', match: (_f, url) => /^node:(crypto$|internal\/crypto\/)/.test(url) },
  { name: 'socket writes (writev, writeBuffer; with TLS, their encryption)', match: (f, url) => url === '' && SOCKET_WRITES.has(f) },
  { name: 'garbage collector', match: (f, url) => url === '' && f === '(garbage collector)' },
  { name: 'native work outside any JavaScript frame ((program): socket reads, TLS decryption, libuv)', match: (f, url) => url === '' && f === '(program)' },
];

/** Self time of every profile node, as summarizeProfile counts it. */
function selfTimes(profile: CpuProfile): Map<number, number> {
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  if (samples.length > 0 && deltas.length === samples.length) {
    for (let i = 0; i < samples.length; i++) {
      const dt = i + 1 < deltas.length ? deltas[i + 1]! : (profile.endTime - profile.startTime) / samples.length;
      selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + Math.max(0, dt));
    }
  } else {
    const total = profile.endTime - profile.startTime;
    const hits = profile.nodes.reduce((s, n) => s + (n.hitCount ?? 0), 0) || 1;
    for (const n of profile.nodes) selfUs.set(n.id, ((n.hitCount ?? 0) / hits) * total);
  }
  return selfUs;
}

/** Busy time per bucket (BUCKETS, then "everything else"), and the usual summary. */
export function securityProfile(profile: CpuProfile, opsPerSec: number, file: string | null): SecurityProfile {
  const summary = summarizeProfile(profile, 10);
  const selfUs = selfTimes(profile);
  const byBucket = new Map<string, number>();
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    const { functionName, url } = node.callFrame;
    if (us === 0 || functionName === '(idle)') continue;
    const bucket = BUCKETS.find((b) => b.match(functionName, url))?.name ?? 'everything else';
    byBucket.set(bucket, (byBucket.get(bucket) ?? 0) + us);
  }
  const busyUs = summary.busyMs * 1000;
  const buckets = [...BUCKETS.map((b) => b.name), 'everything else'].map((name) => {
    const us = byBucket.get(name) ?? 0;
    return { name, selfMs: Math.round(us / 100) / 10, percent: busyUs > 0 ? Math.round((us / busyUs) * 1000) / 10 : 0 };
  });
  const ops = (opsPerSec * summary.totalMs) / 1000;
  return {
    totalMs: Math.round(summary.totalMs),
    busyMs: Math.round(summary.busyMs),
    opsPerSec: Math.round(opsPerSec),
    busyUsPerOp: ops > 0 ? Math.round((busyUs / ops) * 10) / 10 : 0,
    buckets,
    topFunctions: summary.topFunctions,
    file,
  };
}
