// Latency samples: every sample is kept (a growing Float64Array), and
// percentiles come from the sorted array, so nothing is lost to bucketing.

export interface LatencySummary {
  readonly count: number;
  /** Milliseconds. */
  readonly min: number;
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

export class Samples {
  private data: Float64Array;
  private size = 0;
  private sorted: Float64Array | null = null;

  constructor(initialCapacity = 4096) {
    if (!Number.isInteger(initialCapacity) || initialCapacity < 1) throw new RangeError(`initial capacity must be a positive integer, got ${initialCapacity}`);
    this.data = new Float64Array(initialCapacity);
  }

  get count(): number {
    return this.size;
  }

  add(value: number): void {
    if (!Number.isFinite(value)) throw new RangeError(`a sample must be a finite number, got ${value}`);
    if (this.size === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.size++] = value;
    this.sorted = null;
  }

  addAll(other: Samples): void {
    const values = other.values();
    for (let i = 0; i < values.length; i++) this.add(values[i]!);
  }

  /** The samples in the order they were added (a view; do not keep it across add()). */
  values(): Float64Array {
    return this.data.subarray(0, this.size);
  }

  /** Nearest-rank percentile, q in [0, 100]; NaN when there are no samples. */
  percentile(q: number): number {
    if (!(q >= 0 && q <= 100)) throw new RangeError(`percentile must be within [0, 100], got ${q}`);
    if (this.size === 0) return Number.NaN;
    const sorted = this.sortedValues();
    const rank = Math.max(1, Math.ceil((q / 100) * sorted.length));
    return sorted[rank - 1]!;
  }

  summary(): LatencySummary {
    if (this.size === 0) return { count: 0, min: Number.NaN, mean: Number.NaN, p50: Number.NaN, p90: Number.NaN, p99: Number.NaN, p999: Number.NaN, max: Number.NaN };
    const sorted = this.sortedValues();
    let sum = 0;
    for (let i = 0; i < sorted.length; i++) sum += sorted[i]!;
    return {
      count: this.size,
      min: sorted[0]!,
      mean: sum / sorted.length,
      p50: this.percentile(50),
      p90: this.percentile(90),
      p99: this.percentile(99),
      p999: this.percentile(99.9),
      max: sorted[sorted.length - 1]!,
    };
  }

  /** Sorted copy, cached until the next add(). */
  sortedValues(): Float64Array {
    if (this.sorted === null) this.sorted = this.data.slice(0, this.size).sort();
    return this.sorted;
  }
}

/** Rounds to `digits` decimals for JSON output (keeps files readable). */
export function roundTo(value: number, digits = 3): number {
  if (!Number.isFinite(value)) return value;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export function roundSummary(s: LatencySummary, digits = 3): LatencySummary {
  return {
    count: s.count,
    min: roundTo(s.min, digits),
    mean: roundTo(s.mean, digits),
    p50: roundTo(s.p50, digits),
    p90: roundTo(s.p90, digits),
    p99: roundTo(s.p99, digits),
    p999: roundTo(s.p999, digits),
    max: roundTo(s.max, digits),
  };
}
