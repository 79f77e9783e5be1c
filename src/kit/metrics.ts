// A family's lines of /metrics (PluginServer.metrics) in the Prometheus text format:
// each metric once, its `# HELP` and `# TYPE` lines and then its samples, with every
// label value escaped, so no family writes the format (or forgets an escape) by hand.

export type MetricType = 'counter' | 'gauge' | 'summary';

/** One sample: its labels, in the order given, and its value (a string: already formatted). */
export type MetricSample = readonly [labels: Readonly<Record<string, string>>, value: number | string];

/** The lines of the metric `name`: `# HELP`, `# TYPE`, then one per sample, or one unlabelled line for a lone value. */
export function metricLines(name: string, type: MetricType, help: string, samples: number | string | Iterable<MetricSample>): string[] {
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`];
  if (typeof samples === 'number' || typeof samples === 'string') lines.push(`${name} ${samples}`);
  else for (const [labels, value] of samples) lines.push(`${name}${labelSet(labels)} ${value}`);
  return lines;
}

/** `{a="x",b="y"}`; a value's backslash, double quote and newline escaped as the text format wants. */
function labelSet(labels: Readonly<Record<string, string>>): string {
  const pairs = Object.entries(labels).map(([key, value]) => `${key}="${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`);
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
}
