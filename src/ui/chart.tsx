// A time-series chart (uPlot, canvas): the last minutes of one or more series.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface Series {
  readonly label: string;
  readonly values: ReadonlyArray<number | null>;
  readonly color: string;
}

/** A chart's unit: how values read in the legend (`ms` gives "12 ms") and the y axis's label. */
export interface Unit {
  /** After each value in the legend and on the axis ticks: "/s", "ms", "" for plain counts. */
  readonly suffix: string;
  /** The y axis's label, e.g. "per second", "milliseconds", "notifications". */
  readonly axis: string;
}

function withUnit(v: number, suffix: string): string {
  const n = Math.abs(v) >= 10 || Number.isInteger(v) ? v.toFixed(0) : v.toFixed(2);
  return suffix === '' ? n : suffix.startsWith('/') ? `${n}${suffix}` : `${n} ${suffix}`;
}

export function Chart({ title, times, series, unit }: { title: string; times: readonly number[]; series: readonly Series[]; unit: Unit }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = series.map((s) => s.label).join('|');
  useEffect(() => {
    if (box.current === null) return;
    const opts: uPlot.Options = {
      title,
      width: Math.max(360, box.current.clientWidth),
      height: 200,
      series: [{ label: 'time' }, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 1.5, value: (_u: uPlot, v: number | null) => (v === null ? '-' : withUnit(v, unit.suffix)) }))],
      axes: [{ label: 'time (this browser\'s clock)', labelSize: 20 }, { label: unit.axis, labelSize: 20, size: 64, values: (_u: uPlot, ticks: number[]) => ticks.map((t) => withUnit(t, unit.suffix)) }],
      scales: { x: { time: true } },
    };
    plot.current = new uPlot(opts, [[], ...series.map(() => [])] as unknown as uPlot.AlignedData, box.current);
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
  }, [title, shape, unit.suffix, unit.axis]);
  useEffect(() => {
    plot.current?.setData([times.map((t) => t / 1000), ...series.map((s) => [...s.values])] as unknown as uPlot.AlignedData);
  }, [times, series]);
  return <div ref={box} class="chart" data-testid={`chart-${title}`} data-unit={unit.axis} />;
}
