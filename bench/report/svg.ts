// A small line-chart generator for the report's plots: plain SVG text, no
// dependency. Linear or log axes, one polyline per series, a legend.

export interface Series {
  readonly name: string;
  readonly points: ReadonlyArray<readonly [number, number]>;
}

export interface ChartSpec {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly xLog?: boolean;
  readonly yLog?: boolean;
  readonly series: readonly Series[];
  readonly width?: number;
  readonly height?: number;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e'];
const MARGIN = { left: 70, right: 20, top: 40, bottom: 50 };

export function lineChart(spec: ChartSpec): string {
  const width = spec.width ?? 640;
  const height = spec.height ?? 360;
  const usable = spec.series.map((s) => ({ name: s.name, points: s.points.filter(([px, py]) => Number.isFinite(px) && Number.isFinite(py) && (!spec.xLog || px > 0) && (!spec.yLog || py > 0)) }));
  const all = usable.flatMap((s) => s.points);
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14">${escapeXml(spec.title)}</text>`,
  ];
  if (all.length === 0) {
    parts.push(`<text x="${width / 2}" y="${height / 2}" text-anchor="middle">no data</text>`, '</svg>');
    return parts.join('\n');
  }
  const xAxis = axis(all.map((p) => p[0]), spec.xLog === true);
  const yAxis = axis(all.map((p) => p[1]), spec.yLog === true, true);
  const sx = (v: number): number => MARGIN.left + xAxis.scale(v) * plotW;
  const sy = (v: number): number => MARGIN.top + plotH - yAxis.scale(v) * plotH;
  parts.push(`<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#888"/>`);
  for (const t of xAxis.ticks) {
    const px = sx(t).toFixed(1);
    parts.push(`<line x1="${px}" y1="${MARGIN.top}" x2="${px}" y2="${MARGIN.top + plotH}" stroke="#eee"/>`);
    parts.push(`<text x="${px}" y="${MARGIN.top + plotH + 16}" text-anchor="middle">${formatTick(t)}</text>`);
  }
  for (const t of yAxis.ticks) {
    const py = sy(t).toFixed(1);
    parts.push(`<line x1="${MARGIN.left}" y1="${py}" x2="${MARGIN.left + plotW}" y2="${py}" stroke="#eee"/>`);
    parts.push(`<text x="${MARGIN.left - 6}" y="${py}" text-anchor="end" dominant-baseline="middle">${formatTick(t)}</text>`);
  }
  parts.push(`<text x="${MARGIN.left + plotW / 2}" y="${height - 10}" text-anchor="middle">${escapeXml(spec.xLabel)}</text>`);
  parts.push(`<text x="16" y="${MARGIN.top + plotH / 2}" text-anchor="middle" transform="rotate(-90 16 ${MARGIN.top + plotH / 2})">${escapeXml(spec.yLabel)}</text>`);
  usable.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    if (s.points.length > 0) {
      const d = s.points.map(([px, py]) => `${sx(px).toFixed(1)},${sy(py).toFixed(1)}`).join(' ');
      parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${d}"/>`);
      if (s.points.length <= 12) for (const [px, py] of s.points) parts.push(`<circle cx="${sx(px).toFixed(1)}" cy="${sy(py).toFixed(1)}" r="3" fill="${color}"/>`);
    }
    const ly = MARGIN.top + 14 + i * 16;
    parts.push(`<rect x="${MARGIN.left + 10}" y="${ly - 9}" width="12" height="3" fill="${color}"/>`);
    parts.push(`<text x="${MARGIN.left + 28}" y="${ly - 4}">${escapeXml(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

interface Axis {
  /** Maps a value to [0, 1]. */
  readonly scale: (v: number) => number;
  readonly ticks: readonly number[];
}

function axis(values: readonly number[], log: boolean, fromZero = false): Axis {
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (log) {
    // From the decade at or below the smallest value to the largest value itself
    // (not the next decade, which would leave most of the plot empty).
    const a = Math.floor(Math.log10(lo));
    const b = Math.max(a + 1, Math.log10(hi));
    const ticks: number[] = [];
    for (let e = a; e <= b + 1e-9; e++) ticks.push(10 ** e);
    if (Math.log10(ticks[ticks.length - 1]!) < b - 0.15) ticks.push(hi);
    return { scale: (v) => (Math.log10(v) - a) / (b - a), ticks };
  }
  if (fromZero && lo > 0) lo = 0;
  if (hi === lo) hi = lo + 1;
  const step = niceStep((hi - lo) / 5);
  const start = Math.floor(lo / step) * step;
  const end = Math.ceil(hi / step) * step;
  const ticks: number[] = [];
  for (let t = start; t <= end + step / 2; t += step) ticks.push(Number(t.toPrecision(12)));
  return { scale: (v) => (v - start) / (end - start), ticks };
}

function niceStep(raw: number): number {
  const mag = 10 ** Math.floor(Math.log10(raw));
  const f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

function formatTick(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1_000_000) return `${Number((v / 1_000_000).toPrecision(3))}M`;
  if (a >= 1_000) return `${Number((v / 1_000).toPrecision(3))}k`;
  if (a < 0.01) return v.toExponential(0);
  return String(Number(v.toPrecision(3)));
}

export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
