// Hibernation: units by state, hot and cold bytes, and thaw latency.
import { bytes, count, total, usePoll, type Dashboard, type FamilyPanel } from '../../ui/panel-kit.js';
import { HibernateClient } from './client.js';

function HibernatePanel({ dash }: { dash: Dashboard }) {
  const hibernate = new HibernateClient(dash.client);
  const units = usePoll(() => hibernate.unitsPage({ limit: 200 }), 3000);
  const metrics = usePoll(() => dash.metrics(), 3000);
  const m = metrics.data ?? [];
  // With no thaw measured the summary says 0: that is no latency, not a fast one.
  const thawsMeasured = total(m, 'vera_hibernate_thaw_ms_count');
  const thaw = (q: string): string => {
    if (thawsMeasured === 0) return '-';
    const s = m.find((x) => x.name === 'vera_hibernate_thaw_ms' && x.labels.quantile === q);
    return s === undefined || Number.isNaN(s.value) ? '-' : `${s.value.toFixed(1)} ms`;
  };
  const list = units.data?.units ?? [];
  return (
    <div data-testid="hibernate-panel">
      {units.error !== null && <div class="error">{units.error}</div>}
      <section class="card">
        <h2>Hibernation</h2>
        <table>
          <tbody>
            <tr>
              <th>units Frozen / Freezing</th>
              <td>
                {count(total(m, 'vera_hibernate_units_frozen'))} / {count(total(m, 'vera_hibernate_units_freezing'))}
              </td>
            </tr>
            <tr>
              <th>cold bytes</th>
              <td>{bytes(total(m, 'vera_hibernate_cold_bytes'))}</td>
            </tr>
            <tr>
              <th>freezes / thaws (this member as leader)</th>
              <td>
                {count(total(m, 'vera_hibernate_freezes_total'))} / {count(total(m, 'vera_hibernate_thaws_total'))}
              </td>
            </tr>
            <tr>
              <th>thaw latency p50 / p99</th>
              <td data-testid="thaw-latency">{thawsMeasured === 0 ? 'no thaw yet' : `${thaw('0.5')} / ${thaw('0.99')} (last ${count(thawsMeasured)} thaws)`}</td>
            </tr>
          </tbody>
        </table>
      </section>
      <section class="card">
        <h2>Units</h2>
        <table>
          <thead>
            <tr>
              <th>unit</th>
              <th>state</th>
              <th class="num">items</th>
              <th class="num">cold size</th>
            </tr>
          </thead>
          <tbody>
            {list.map((u) => (
              <tr key={u.unit}>
                <td class="mono">{u.unit}</td>
                <td>{u.state}</td>
                <td class="num">{u.state === 'frozen' ? count(u.items) : '-'}</td>
                <td class="num">{u.state === 'frozen' ? bytes(u.bytes) : '-'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </div>
  );
}

export const panel: FamilyPanel = { tab: 'Hibernation', order: 30, Panel: HibernatePanel };
