// Reads what trace-probe.ts wrote: each phase's writes beside every member's traced applies
// (TRACE lines in vera-N.log): which writes overlapped a hibernation entry's apply on some
// member, their p99 against the others', and the applies' times per member.
//   node bench/hibernate/trace-report.mjs DIR [SLOT_MS]
import { readFileSync } from 'node:fs';
const [dir, slotArg] = process.argv.slice(2);
const SLOT = Number(slotArg ?? 0);
const { leader, phases } = JSON.parse(readFileSync(`${dir}/writes.json`, 'utf8'));
const members = ['n1', 'n2', 'n3'];
const HIB = /freezeUnits|commitFreeze|dropHot|thawBegin|thawStep|^thaw$|freeze/;
const spans = Object.fromEntries(members.map((m) => {
  const out = { apply: [], ready: [] };
  for (const line of readFileSync(`${dir}/vera-${m}.log`, 'utf8').split('\n')) {
    if (!line.startsWith('TRACE ')) continue;
    const f = line.split(' ');
    if (f[1] === 'apply') out.apply.push({ at: Number(f[2]), ms: Number(f[3]), n: Number(f[4]), ops: f[5] ?? '' });
    else out.ready.push({ at: Number(f[2]), ms: Number(f[3]), persist: Number(f[4]), apply: Number(f[5]), appended: Number(f[6]), committed: Number(f[7]) });
  }
  return [m, out];
}));
const q = (a, p) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN; };
const f1 = (x) => (Number.isNaN(x) ? '-' : x.toFixed(1));
console.log(`leader ${leader}`);
for (const ph of phases) {
  const lat = ph.writes.map(([, ms]) => ms);
  console.log(`\n== round ${ph.round} ${ph.phase}: ${((ph.to - ph.from) / 1000).toFixed(2)} s, writes n ${lat.length} p50 ${f1(q(lat, 0.5))} p99 ${f1(q(lat, 0.99))} max ${f1(Math.max(...lat))}`);
  const inPhase = (s) => s.at + s.ms >= ph.from && s.at <= ph.to;
  for (const m of members) {
    const hib = spans[m].apply.filter((s) => inPhase(s) && HIB.test(s.ops.split(',')[0] ?? ''));
    const other = spans[m].apply.filter((s) => inPhase(s) && !HIB.test(s.ops.split(',')[0] ?? ''));
    const ready = spans[m].ready.filter(inPhase);
    const byOp = {};
    for (const s of hib) (byOp[s.ops] ??= []).push(s.ms);
    const ops = Object.entries(byOp).map(([op, ms]) => `${op} n${ms.length} p50 ${f1(q(ms, 0.5))} p90 ${f1(q(ms, 0.9))} max ${f1(Math.max(...ms))} sum ${f1(ms.reduce((a, b) => a + b, 0))}`).join(' | ');
    console.log(`  ${m}${m === leader ? '*' : ' '} ready>=1ms n ${ready.length} p90 ${f1(q(ready.map((r) => r.ms), 0.9))} max ${f1(Math.max(...ready.map((r) => r.ms)))} (persist max ${f1(Math.max(...ready.map((r) => r.persist)))}) | other applies>=1ms n ${other.length} p90 ${f1(q(other.map((s) => s.ms), 0.9))} max ${f1(Math.max(0, ...other.map((s) => s.ms)))} | ${ops}`);
  }
  if (ph.phase === 'freeze' || ph.phase === 'thaw') {
    const hibSpans = members.flatMap((m) => spans[m].apply.filter((s) => inPhase(s) && HIB.test(s.ops.split(',')[0] ?? '')).map((s) => ({ ...s, m })));
    const over = [], clear = [];
    for (const [at, ms] of ph.writes) (hibSpans.some((s) => s.at < at + ms && s.at + s.ms > at) ? over : clear).push(ms);
    console.log(`  writes overlapping a hibernation apply on some member: ${over.length} (${(100 * over.length / Math.max(1, lat.length)).toFixed(0)}%) p50 ${f1(q(over, 0.5))} p99 ${f1(q(over, 0.99))} | the rest ${clear.length} p50 ${f1(q(clear, 0.5))} p99 ${f1(q(clear, 0.99))}`);
    const slow = [...ph.writes].sort((a, b) => b[1] - a[1]).slice(0, Math.max(1, Math.floor(lat.length / 100)));
    const t0 = ph.from;
    const hist = new Map();
    for (const [at] of slow) { const k = Math.floor((at - t0) / 500) * 0.5; hist.set(k, (hist.get(k) ?? 0) + 1); }
    console.log(`  the slowest 1% by start (s: count): ${[...hist].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${k.toFixed(1)}:${v}`).join(' ')}`);
    if (SLOT > 0) {
      for (let t = ph.from; t < ph.to; t += SLOT) {
        const w = ph.writes.filter(([at]) => at >= t && at < t + SLOT).map(([, ms]) => ms);
        const per = members.map((m) => { const a = spans[m].apply.filter((s) => s.at >= t && s.at < t + SLOT); const h = a.filter((s) => HIB.test(s.ops.split(',')[0] ?? '')); return `${m} hib ${String(h.length).padStart(2)}/${f1(h.reduce((x, s) => x + s.ms, 0)).padStart(5)}ms max ${f1(Math.max(0, ...a.map((s) => s.ms))).padStart(5)}`; });
        console.log(`   ${((t - ph.from) / 1000).toFixed(2).padStart(6)}s n ${String(w.length).padStart(4)} p50 ${f1(q(w, 0.5)).padStart(5)} p99 ${f1(q(w, 0.99)).padStart(5)} | ${per.join(' | ')}`);
      }
    }
  }
}
