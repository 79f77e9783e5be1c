// The issue's targets, checked against one run's figures. Each check says
// whether it is met and by how much it is missed (or beaten).
import type { SystemName } from '../systems/system.js';
import { DISPLAY_NAMES } from '../systems/system.js';
import { buildFigures, scenarioData, stepKey, stepLabel, type Figure } from './figures.js';
import type { SystemResult } from './results.js';

export type TargetStatus = 'met' | 'not met' | 'n/a';

export interface TargetCheck {
  readonly scenario: string;
  readonly target: string;
  readonly status: TargetStatus;
  readonly detail: string;
}

const fmt = (v: number, unit: string): string => `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${unit}`;
const x = (v: number): string => `${v.toFixed(2)}x`;

/** "at least k times the other's" for a higher-is-better figure. */
function atLeastTimes(fig: Figure | undefined, other: SystemName, k: number, scenario: string, what: string): TargetCheck {
  const target = `${what}: at least ${k}x ${DISPLAY_NAMES[other]}'s`;
  const v = fig?.values.vera;
  const o = fig?.values[other];
  if (fig === undefined || v === undefined || o === undefined || o === 0) return { scenario, target, status: 'n/a', detail: missing(fig, other) };
  const r = v / o;
  const detail = `Vera ${fmt(v, fig.unit)} vs ${fmt(o, fig.unit)}: ${x(r)}` + (r >= k ? '' : `, ${x(k / r)} short of the target`);
  return { scenario, target, status: r >= k ? 'met' : 'not met', detail };
}

/** "at most k times the other's" for a lower-is-better figure. */
function atMostTimes(fig: Figure | undefined, other: SystemName, k: number, scenario: string, what: string, strict = false): TargetCheck {
  const target = strict ? `${what}: lower than ${DISPLAY_NAMES[other]}'s` : `${what}: at most ${k === 0.5 ? 'half' : k === 1 / 3 ? 'a third' : `${k}x`} of ${DISPLAY_NAMES[other]}'s`;
  const v = fig?.values.vera;
  const o = fig?.values[other];
  if (fig === undefined || v === undefined || o === undefined) return { scenario, target, status: 'n/a', detail: missing(fig, other) };
  const limit = o * k;
  const met = strict ? v < limit : v <= limit;
  const detail = `Vera ${fmt(v, fig.unit)} vs ${fmt(o, fig.unit)}` + (o > 0 ? `: ${x(v / o)}` : '') + (met ? '' : `, ${fmt(v - limit, fig.unit)} over the limit of ${fmt(limit, fig.unit)}`);
  return { scenario, target, status: met ? 'met' : 'not met', detail };
}

function missing(fig: Figure | undefined, other: SystemName): string {
  if (fig === undefined) return 'not measured in this run';
  if (fig.values.vera === undefined) return 'Vera figure missing (scenario failed, skipped or not run)';
  return `${DISPLAY_NAMES[other]} figure missing (not run, failed, or unsupported by its client)`;
}

export function checkTargets(results: readonly SystemResult[]): TargetCheck[] {
  const figures = buildFigures(results);
  const fig = (key: string): Figure | undefined => figures.find((f) => f.key === key);
  const checks: TargetCheck[] = [];
  const others: SystemName[] = ['etcd', 'zookeeper'];

  for (const o of others) checks.push(atLeastTimes(fig('s1.ops'), o, 2, 'S1', 'sequential write ops/s'));
  const vera = results.find((r) => r.system === 'vera');
  const floor = vera?.fsyncFloor.latencyMs.p50;
  const s1p50 = fig('s1.p50')?.values.vera;
  if (floor === undefined || s1p50 === undefined || !Number.isFinite(floor)) {
    checks.push({ scenario: 'S1', target: 'p50 within 3x the fsync floor', status: 'n/a', detail: 'not measured' });
  } else {
    const r = s1p50 / floor;
    checks.push({ scenario: 'S1', target: 'p50 within 3x the fsync floor', status: r <= 3 ? 'met' : 'not met', detail: `Vera p50 ${fmt(s1p50, 'ms')} vs floor p50 ${fmt(floor, 'ms')}: ${x(r)}` + (r <= 3 ? '' : `, ${x(r / 3)} over`) });
  }

  for (const level of [256, 1024]) {
    for (const o of others) checks.push(atLeastTimes(fig(`s2.${level}.ops`), o, 2, 'S2', `${level} in flight, ops/s`));
    for (const o of others) checks.push(atMostTimes(fig(`s2.${level}.p99`), o, 1, 'S2', `${level} in flight, p99`, true));
  }

  // The issue's fan-out is 1,000 watchers; a --quick run checks its largest one instead.
  const fanouts = vera === undefined ? [] : scenarioData(vera, 's3') ?? [];
  const widest = Math.max(0, ...fanouts.map((f) => f.watchers));
  checks.push(atMostTimes(widest > 0 ? fig(`s3.${widest}.p99`) : undefined, 'etcd', 0.5, 'S3', `${widest.toLocaleString('en-US')} watchers, notification p99`));
  if (fanouts.length === 0) checks.push({ scenario: 'S3', target: 'no notification lost', status: 'n/a', detail: 'not measured' });
  else {
    const lost = fanouts.reduce((s, f) => s + f.lost, 0);
    const counted = fanouts.reduce((s, f) => s + f.received, 0);
    checks.push({ scenario: 'S3', target: 'no notification lost', status: lost === 0 ? 'met' : 'not met', detail: `${counted} notifications counted, ${lost} lost` });
  }

  const s4 = vera === undefined ? undefined : scenarioData(vera, 's4');
  if (s4 === undefined || s4.sinceLastOwnerBytesMs.count === 0) checks.push({ scenario: 'S4', target: 'delete seen no earlier than the timeout and at most 150 ms after it', status: 'n/a', detail: 'not measured' });
  else {
    const { min, max } = s4.sinceLastOwnerBytesMs;
    const early = min < s4.ttlMs;
    const late = max > s4.ttlMs + 150 || s4.missed > 0;
    const parts = [`after the owner's last bytes: ${fmt(min, 'ms')} to ${fmt(max, 'ms')} for a ${s4.ttlMs} ms timeout`];
    if (early) parts.push(`${fmt(s4.ttlMs - min, 'ms')} too early`);
    if (max > s4.ttlMs + 150) parts.push(`${fmt(max - s4.ttlMs - 150, 'ms')} later than allowed`);
    if (s4.missed > 0) parts.push(`${s4.missed} deletes never seen`);
    checks.push({ scenario: 'S4', target: 'delete seen no earlier than the timeout and at most 150 ms after it', status: early || late ? 'not met' : 'met', detail: parts.join('; ') });
  }

  checks.push(atMostTimes(fig('s5.median'), 'zookeeper', 0.5, 'S5', 'median failover gap'));
  checks.push(atMostTimes(fig('s5.median'), 'etcd', 1 / 3, 'S5', 'median failover gap'));
  checks.push(atMostTimes(fig('s5.rejoin'), 'etcd', 1, 'S5', 'median rejoin after a restart (issue 32)'));
  const elections = fig('s2.elections')?.values.vera;
  checks.push(
    elections === undefined
      ? { scenario: 'S5', target: 'zero unnecessary elections under S2 load', status: 'n/a', detail: 'not measured' }
      : { scenario: 'S5', target: 'zero unnecessary elections under S2 load', status: elections === 0 ? 'met' : 'not met', detail: `${elections} election(s) during S2` },
  );

  const readLevels = [...new Set(figures.filter((f) => /^s6\.linearizable\.\d+\.ops$/.test(f.key)).map((f) => f.key))];
  if (readLevels.length === 0) checks.push({ scenario: 'S6', target: "linearizable reads: at least 2x etcd's ops/s", status: 'n/a', detail: 'not measured' });
  for (const key of readLevels) checks.push(atLeastTimes(fig(key), 'etcd', 2, 'S6', `linearizable reads, ${key.split('.')[2]} in flight, ops/s`));

  const s7keys = vera === undefined ? [] : (scenarioData(vera, 's7')?.steps ?? []).map(stepKey);
  for (const key of s7keys) checks.push(atMostTimes(fig(`s7.${key}.rss`), 'etcd', 1, 'S7', `largest member RSS at ${stepLabel(key)}`, false));
  const steps = vera === undefined ? [] : (scenarioData(vera, 's7')?.steps ?? []).filter((s) => s.sessions === 0);
  const first = steps[0];
  const last = steps[steps.length - 1];
  if (first === undefined || last === undefined || first === last) checks.push({ scenario: 'S7', target: 'write p50 flat (within 1.5x) as the data grows', status: 'n/a', detail: 'fewer than two data sizes measured' });
  else {
    const r = last.writeLatencyMs.p50 / first.writeLatencyMs.p50;
    checks.push({
      scenario: 'S7',
      target: 'write p50 flat (within 1.5x) as the data grows',
      status: r <= 1.5 ? 'met' : 'not met',
      detail: `p50 ${fmt(first.writeLatencyMs.p50, 'ms')} at ${first.items} items, ${fmt(last.writeLatencyMs.p50, 'ms')} at ${last.items} items: ${x(r)}${last.items < 1_000_000 ? ` (measured up to ${last.items} items, not 10^6)` : ''}`,
    });
  }
  return checks;
}
