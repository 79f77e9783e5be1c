// A time-series chart (uPlot, canvas): the last minutes of one or more series.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface Series {
  readonly label: string;
  readonly values: ReadonlyArray<number | null>;
  readonly color: string;
}

export function Chart({ title, times, series, unit }: { title: string; times: readonly number[]; series: readonly Series[]; unit: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = series.map((s) => s.label).join('|');
  useEffect(() => {
    if (box.current === null) return;
    const opts: uPlot.Options = {
      title,
      width: Math.max(360, box.current.clientWidth),
      height: 200,
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 1.5, value: (_u: uPlot, v: number | null) => (v === null ? '-' : `${v.toFixed(v < 10 ? 2 : 0)} ${unit}`) }))],
      axes: [{}, { size: 60 }],
      scales: { x: { time: true } },
    };
    plot.current = new uPlot(opts, [[], ...series.map(() => [])] as unknown as uPlot.AlignedData, box.current);
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
  }, [title, shape, unit]);
  useEffect(() => {
    plot.current?.setData([times.map((t) => t / 1000), ...series.map((s) => [...s.values])] as unknown as uPlot.AlignedData);
  }, [times, series]);
  return <div ref={box} class="chart" data-testid={`chart-${title}`} />;
}
