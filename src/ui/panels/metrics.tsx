// Metrics: writes and requests a second, write latency percentiles, notification
// backlog and sessions, as charts over the last five minutes, from the serving
// member's /metrics scraped every two seconds.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Chart } from '../chart.js';
import type { Dashboard } from '../dashboard.js';
import { quantileBetween, total, type Sample } from '../prometheus.js';

const EVERY_MS = 2000;
const KEEP = 150; // five minutes of points

interface Point {
  readonly at: number;
  readonly writes: number | null;
  readonly requests: number | null;
  readonly p50: number | null;
  readonly p99: number | null;
  readonly backlog: number;
  readonly sessions: number;
}

export function MetricsPanel({ dash }: { dash: Dashboard }) {
  const [points, setPoints] = useState<Point[]>([]);
  const [error, setError] = useState<string | null>(null);
  const last = useRef<{ at: number; samples: Sample[] } | null>(null);
  useEffect(() => {
    let live = true;
    const scrape = async (): Promise<void> => {
      try {
        const samples = await dash.metrics();
        const at = Date.now();
        const before = last.current;
        last.current = { at, samples };
        if (before === null || !live) return;
        const dt = (at - before.at) / 1000;
        const rate = (name: string): number => Math.max(0, (total(samples, name) - total(before.samples, name)) / dt);
        const ms = (q: number): number | null => {
          const s = quantileBetween(before.samples, samples, 'vera_propose_seconds', q);
          return s === null ? null : s * 1000;
        };
        const point: Point = { at, writes: rate('vera_proposals_total'), requests: rate('vera_requests_total'), p50: ms(0.5), p99: ms(0.99), backlog: total(samples, 'vera_notify_backlog'), sessions: total(samples, 'vera_sessions') };
        setPoints((ps) => [...ps, point].slice(-KEEP));
        setError(null);
      } catch (e) {
        if (live) setError(e instanceof Error ? e.message : String(e));
      }
    };
    void scrape();
    const timer = setInterval(() => void scrape(), EVERY_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, []);
  const times = points.map((p) => p.at);
  return (
    <section class="card" data-testid="metrics-panel">
      <h2>Metrics of this member (every {EVERY_MS / 1000} s, last 5 minutes)</h2>
      {error !== null && <div class="error">{error}</div>}
      {points.length === 0 && <p class="muted">Collecting the first two scrapes…</p>}
      <div class="charts">
        <Chart title="Writes and requests per second" unit={{ suffix: '/s', axis: 'per second' }} times={times} series={[{ label: 'writes', values: points.map((p) => p.writes), color: '#2f5bd3' }, { label: 'requests', values: points.map((p) => p.requests), color: '#1d7a46' }]} />
        <Chart title="Write latency (proposal to applied)" unit={{ suffix: 'ms', axis: 'milliseconds' }} times={times} series={[{ label: 'p50', values: points.map((p) => p.p50), color: '#2f5bd3' }, { label: 'p99', values: points.map((p) => p.p99), color: '#c0362c' }]} />
        <Chart title="Notifications waiting to be sent" unit={{ suffix: '', axis: 'notifications' }} times={times} series={[{ label: 'backlog', values: points.map((p) => p.backlog), color: '#b26b00' }]} />
        <Chart title="Sessions" unit={{ suffix: '', axis: 'sessions' }} times={times} series={[{ label: 'sessions', values: points.map((p) => p.sessions), color: '#667085' }]} />
      </div>
    </section>
  );
}
