// Reading a member's /metrics (the Prometheus text format) into samples, and
// turning two scrapes into rates and latency percentiles, as Prometheus's own
// rate() and histogram_quantile() would (the bucket interpolation is the same).

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    const value = Number(m[4]);
    if (Number.isFinite(value) || m[4] === '+Inf') out.push({ name: m[1]!, labels, value });
  }
  return out;
}

/** The sum of every sample named `name` (over all label sets). */
export function total(samples: readonly Sample[], name: string): number {
  let sum = 0;
  for (const s of samples) if (s.name === name) sum += s.value;
  return sum;
}

/** The `q` quantile of a histogram's observations between two scrapes (in the histogram's unit), or null with none. */
export function quantileBetween(before: readonly Sample[], after: readonly Sample[], name: string, q: number): number | null {
  const buckets = (samples: readonly Sample[]): Map<number, number> => {
    const m = new Map<number, number>();
    for (const s of samples) {
      if (s.name !== `${name}_bucket`) continue;
      const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
      m.set(le, (m.get(le) ?? 0) + s.value);
    }
    return m;
  };
  const a = buckets(before);
  const b = buckets(after);
  const bounds = [...b.keys()].sort((x, y) => x - y);
  const counts = bounds.map((le) => (b.get(le) ?? 0) - (a.get(le) ?? 0));
  const n = counts.at(-1) ?? 0;
  if (n <= 0) return null;
  const rank = q * n;
  for (let i = 0; i < bounds.length; i++) {
    if (counts[i]! >= rank) {
      const upper = bounds[i]!;
      const lower = i === 0 ? 0 : bounds[i - 1]!;
      if (!Number.isFinite(upper)) return lower;
      const below = i === 0 ? 0 : counts[i - 1]!;
      const inBucket = counts[i]! - below;
      return inBucket <= 0 ? upper : lower + ((upper - lower) * (rank - below)) / inBucket;
    }
  }
  return null;
}
