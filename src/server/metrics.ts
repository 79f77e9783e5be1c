// A small Prometheus registry: counters, gauges and a latency histogram, rendered
// in the text exposition format. Enough for Vera's handful of metrics without a dependency.

type Labels = Readonly<Record<string, string>>;

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

interface Metric {
  render(): string;
}

export class Counter implements Metric {
  private readonly values = new Map<string, number>();
  /** Raw label values -> their rendered text: inc() runs on every request, escaping each time showed in profiles. */
  private readonly rendered = new Map<string, string>();
  constructor(readonly name: string, readonly help: string) {}
  inc(labels: Labels = {}, by = 1): void {
    let raw = '';
    for (const k in labels) raw += `${k}=${JSON.stringify(labels[k])},`;
    let key = this.rendered.get(raw);
    if (key === undefined) {
      key = labelText(labels);
      this.rendered.set(raw, key);
    }
    this.values.set(key, (this.values.get(key) ?? 0) + by);
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    if (this.values.size === 0) lines.push(`${this.name} 0`);
    for (const [k, v] of this.values) lines.push(`${this.name}${k} ${v}`);
    return lines.join('\n');
  }
}

export class Gauge implements Metric {
  constructor(readonly name: string, readonly help: string, private readonly read: () => number | Array<[Labels, number]>) {}
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`];
    const v = this.read();
    if (typeof v === 'number') lines.push(`${this.name} ${v}`);
    else for (const [labels, n] of v) lines.push(`${this.name}${labelText(labels)} ${n}`);
    return lines.join('\n');
  }
}

export class Histogram implements Metric {
  private readonly counts: number[];
  private sum = 0;
  private count = 0;
  constructor(readonly name: string, readonly help: string, private readonly buckets: readonly number[]) {
    this.counts = buckets.map(() => 0);
  }
  observe(value: number): void {
    this.sum += value;
    this.count++;
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]!) this.counts[i]!++;
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    this.buckets.forEach((b, i) => lines.push(`${this.name}_bucket{le="${b}"} ${this.counts[i]}`));
    lines.push(`${this.name}_bucket{le="+Inf"} ${this.count}`, `${this.name}_sum ${this.sum}`, `${this.name}_count ${this.count}`);
    return lines.join('\n');
  }
}

export class Registry {
  private readonly metrics: Metric[] = [];
  add<M extends Metric>(metric: M): M {
    this.metrics.push(metric);
    return metric;
  }
  render(): string {
    return this.metrics.map((m) => m.render()).join('\n') + '\n';
  }
}
