// Small pieces the panels share: polling a source, formatting numbers and bytes.
import { useEffect, useRef, useState } from 'preact/hooks';
import { describe } from './dashboard.js';

export interface Polled<T> {
  readonly data: T | null;
  readonly error: string | null;
  readonly refresh: () => void;
}

/** Calls `load` now and every `everyMs` while the component is shown; the newest answer wins. */
export function usePoll<T>(load: () => Promise<T>, everyMs: number, deps: readonly unknown[] = []): Polled<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = (): void => {
      loadRef.current().then(
        (d) => {
          if (!live) return;
          setData(d);
          setError(null);
        },
        (e: unknown) => live && setError(describe(e)),
      ).finally(() => {
        if (live) timer = setTimeout(run, everyMs);
      });
    };
    run();
    return () => {
      live = false;
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [everyMs, tick, ...deps]);
  return { data, error, refresh: () => setTick((t) => t + 1) };
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

export function count(n: number): string {
  return n.toLocaleString('en-US');
}

export function ago(ms: number): string {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  return s < 60 ? `${s} s ago` : s < 3600 ? `${Math.round(s / 60)} min ago` : `${Math.round(s / 3600)} h ago`;
}

/** A value as the dashboard shows it: JSON, cut to `max` characters. */
export function preview(value: unknown, max = 160): { text: string; cut: boolean; full: string } {
  const full = JSON.stringify(value, null, 0) ?? 'undefined';
  return full.length <= max ? { text: full, cut: false, full } : { text: `${full.slice(0, max)}…`, cut: true, full };
}

/** Offers `text` as a file download (large values are shown cut, and downloaded whole). */
export function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
