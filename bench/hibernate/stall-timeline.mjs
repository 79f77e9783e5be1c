// Reads what stall-probe.ts wrote: the active set's write latency per slot of a phase
// (p50, p99), next to each member's busy and GC time in that slot and which of
// hibernation's functions it ran (from the CPU profiles):
//   node bench/hibernate/stall-timeline.mjs DIR ROUND freeze|thaw [SLOT_MS]
import { readFileSync } from 'node:fs';
const [dir, round, phase, slotArg] = process.argv.slice(2);
const SLOT = Number(slotArg ?? 500) * 1000;
const w = JSON.parse(readFileSync(`${dir}/writes${round}.json`, 'utf8'));
const writes = w[phase];
const members = ['n1', 'n2', 'n3'];
const profs = Object.fromEntries(members.map((m) => [m, JSON.parse(readFileSync(`${dir}/${phase}${round}-${m}.cpuprofile`, 'utf8'))]));
const t0 = profs.n1.startTime;
const slots = new Map();
const slot = (t) => Math.floor((t - t0) / SLOT);
for (const [at, ms] of writes) { const s = slot(at); if (!slots.has(s)) slots.set(s, { lat: [], m: {} }); slots.get(s).lat.push(ms); }
const FN = /readUnit|deflateInSlices|installNow|HeldKeys|of$|commitFreezes|dropHot|thawStep|readInSlices|unpackV1Held|binPairsAt|thaw$|seal|packedParts|frozenAfter/;
for (const m of members) {
  const prof = profs[m]; const byId = new Map(prof.nodes.map((n) => [n.id, n])); const parent = new Map();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const tag = new Map();
  for (const n of prof.nodes) { let p = n.id; let hit = null; while (p !== undefined) { const x = byId.get(p); if ((x.callFrame.url || '').includes('/hibernate/')) hit = x.callFrame.functionName; p = parent.get(p); } tag.set(n.id, hit); }
  let t = prof.startTime;
  for (let i = 0; i < prof.samples.length; i++) {
    t += prof.timeDeltas[i]; const dt = prof.timeDeltas[i + 1] ?? 0; const id = prof.samples[i];
    const s = slot(t); if (!slots.has(s)) slots.set(s, { lat: [], m: {} }); const o = slots.get(s);
    o.m[m] ??= { busy: 0, gc: 0, hib: new Map() };
    const fn = byId.get(id).callFrame.functionName;
    if (fn === '(idle)') continue;
    o.m[m].busy += dt; if (fn === '(garbage collector)') o.m[m].gc += dt;
    const h = tag.get(id); if (h) o.m[m].hib.set(h, (o.m[m].hib.get(h) ?? 0) + dt);
  }
}
const q = (a, p) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : 0; };
for (const [s, o] of [...slots].sort((a, b) => a[0] - b[0])) {
  const ms = members.map((m) => { const x = o.m[m]; if (!x) return `${m} -`; return `${m} ${(x.busy / 1000).toFixed(0).padStart(3)}(gc${(x.gc / 1000).toFixed(0)}) ${[...x.hib].sort((a, b) => b[1] - a[1]).slice(0, 2).map(([k, v]) => `${k}:${(v / 1000).toFixed(0)}`).join(',')}`.padEnd(50); });
  console.log(`${(s * SLOT / 1e6).toFixed(1).padStart(5)}s n=${String(o.lat.length).padStart(4)} p50 ${q(o.lat, 0.5).toFixed(0).padStart(3)} p99 ${q(o.lat, 0.99).toFixed(0).padStart(4)} | ${ms.join('| ')}`);
}
