// CPU profile of a running Node server through its inspector (the same
// sampler `node --cpu-prof` uses, but started and stopped around one phase of
// the load, so the profile shows that phase only), and a summary of where the
// time went: self time by function and by module.
import WebSocket from 'ws';

export interface CpuProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number; readonly columnNumber: number };
  readonly hitCount?: number;
  readonly children?: readonly number[];
}

export interface CpuProfile {
  readonly nodes: readonly CpuProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples?: readonly number[];
  readonly timeDeltas?: readonly number[];
}

export interface ProfileEntry {
  readonly name: string;
  readonly selfMs: number;
  /** Share of the busy (non-idle) time, percent. */
  readonly percent: number;
}

export interface ProfileSummary {
  readonly totalMs: number;
  readonly idleMs: number;
  readonly busyMs: number;
  readonly topFunctions: readonly ProfileEntry[];
  readonly byModule: readonly ProfileEntry[];
}

/** Runs `during` while the inspector at `inspectorUrl` samples the CPU; returns the profile. */
export async function profileWhile(inspectorUrl: string, during: () => Promise<void>, samplingIntervalUs = 500): Promise<CpuProfile> {
  const ws = new WebSocket(inspectorUrl, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  let nextId = 1;
  const pending = new Map<number, { resolve: (r: unknown) => void; reject: (e: Error) => void }>();
  ws.on('message', (data) => {
    const msg = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string } };
    if (msg.id === undefined) return;
    const p = pending.get(msg.id);
    pending.delete(msg.id);
    if (msg.error !== undefined) p?.reject(new Error(`inspector: ${msg.error.message}`));
    else p?.resolve(msg.result);
  });
  const send = (method: string, params: Record<string, unknown> = {}): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
  try {
    await send('Profiler.enable');
    await send('Profiler.setSamplingInterval', { interval: samplingIntervalUs });
    await send('Profiler.start');
    let stopped: { profile: CpuProfile };
    try {
      await during();
    } finally {
      // Stop even when the load failed, so the server is not left sampling.
      stopped = (await send('Profiler.stop')) as { profile: CpuProfile };
    }
    await send('Profiler.disable');
    return stopped.profile;
  } finally {
    ws.close();
  }
}

/** Self time per function and per module (package, project directory, or Node internals). */
export function summarizeProfile(profile: CpuProfile, top = 15): ProfileSummary {
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  if (samples.length > 0 && deltas.length === samples.length) {
    // A sample's time is the delta to the next sample (the last one gets the mean).
    for (let i = 0; i < samples.length; i++) {
      const dt = i + 1 < deltas.length ? deltas[i + 1]! : (profile.endTime - profile.startTime) / samples.length;
      selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + Math.max(0, dt));
    }
  } else {
    const total = profile.endTime - profile.startTime;
    const hits = profile.nodes.reduce((s, n) => s + (n.hitCount ?? 0), 0) || 1;
    for (const n of profile.nodes) selfUs.set(n.id, ((n.hitCount ?? 0) / hits) * total);
  }
  const byFunction = new Map<string, number>();
  const byModule = new Map<string, number>();
  let idleUs = 0;
  let totalUs = 0;
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    if (us === 0) continue;
    totalUs += us;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    const where = url === '' ? '' : ` ${shortUrl(url)}:${lineNumber + 1}`;
    // Unnamed code without a script is V8 builtins and native bindings.
    const fn = `${functionName || (url === '' ? '(unnamed native code)' : '(anonymous)')}${where}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
    const mod = moduleOf(functionName, url);
    byModule.set(mod, (byModule.get(mod) ?? 0) + us);
  }
  const busyUs = totalUs - idleUs;
  const rank = (m: Map<string, number>): ProfileEntry[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, selfMs: Math.round(us / 100) / 10, percent: busyUs > 0 ? Math.round((us / busyUs) * 1000) / 10 : 0 }));
  return { totalMs: totalUs / 1000, idleMs: idleUs / 1000, busyMs: busyUs / 1000, topFunctions: rank(byFunction), byModule: rank(byModule) };
}

function shortUrl(url: string): string {
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) return url.slice(nm + '/node_modules/'.length);
  const dist = url.lastIndexOf('/dist/');
  if (dist >= 0) return url.slice(dist + 1);
  return url.replace(/^file:\/\//, '');
}

/** Buckets: "(garbage collector)" and friends, node:<internal>, a package name, or dist/<dir> of the project. */
export function moduleOf(functionName: string, url: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1] ?? ''}` : rest[0]!;
  }
  const dist = url.lastIndexOf('/dist/');
  if (dist >= 0) {
    const parts = url.slice(dist + 1).split('/');
    return parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts.join('/');
  }
  return shortUrl(url);
}
