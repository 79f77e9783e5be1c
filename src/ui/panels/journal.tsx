// Journal: each work queue's depth by status and priority, its oldest waiting
// job's age, and its flagged jobs, which an operator requeues (confirmed first).
import { useState } from 'preact/hooks';
import { JournalClient } from '../../families/journal/client.js';
import { ConfirmButton, type Pending } from '../confirm.js';
import type { Dashboard } from '../dashboard.js';
import { count, preview, usePoll } from '../util.js';

export function JournalPanel({ dash, readOnly, confirm }: { dash: Dashboard; readOnly: boolean; confirm: (p: Pending) => void }) {
  const journal = new JournalClient(dash.client);
  const list = usePoll(() => journal.list(), 2000);
  const metrics = usePoll(() => dash.metrics(), 5000);
  const [picked, setPicked] = useState<string | null>(null);
  const flagged = usePoll(async () => (picked === null ? [] : journal.flagged(picked, 200)), 3000, [picked]);
  const oldest = (name: string): string => {
    const age = metrics.data?.find((s) => s.name === 'vera_journal_oldest_due_age_seconds' && s.labels.journal === name)?.value;
    return age === undefined ? '-' : `${age.toFixed(1)} s`;
  };
  return (
    <div data-testid="journal-panel">
      {list.error !== null && <div class="error">{list.error}</div>}
      <section class="card">
        <h2>Journals</h2>
        <table>
          <thead>
            <tr>
              <th>journal</th>
              <th class="num">waiting</th>
              <th class="num">processing (leases in flight)</th>
              <th class="num">flagged</th>
              <th>waiting by priority</th>
              <th class="num">oldest due waiting</th>
            </tr>
          </thead>
          <tbody>
            {(list.data ?? []).map((j) => (
              <tr key={j.name} onClick={() => setPicked(j.name)} style={{ cursor: 'pointer' }}>
                <td>
                  <b>{j.name}</b>
                </td>
                <td class="num">{count(j.counts.waiting)}</td>
                <td class="num">{count(j.counts.processing)}</td>
                <td class={`num${j.counts.flagged > 0 ? ' bad' : ''}`}>{count(j.counts.flagged)}</td>
                <td class="mono">
                  {Object.entries(j.counts.byPriority)
                    .map(([p, n]) => `${p}: ${n}`)
                    .join(', ') || '-'}
                </td>
                <td class="num">{oldest(j.name)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      {picked !== null && (
        <section class="card">
          <h2>Flagged in {picked}</h2>
          {(flagged.data ?? []).length === 0 ? (
            <p class="muted">None.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>key</th>
                  <th class="num">priority</th>
                  <th class="num">timeouts</th>
                  <th>flagged</th>
                  <th>data</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {(flagged.data ?? []).map((f) => (
                  <tr key={f.key}>
                    <td class="mono">{f.key}</td>
                    <td class="num">{f.priority}</td>
                    <td class="num">{f.timeouts}</td>
                    <td>{new Date(f.flaggedAt).toLocaleString()}</td>
                    <td class="mono">{preview(f.data, 60).text}</td>
                    <td>
                      <ConfirmButton
                        show={!readOnly}
                        confirm={confirm}
                        pending={() => ({
                          title: `Requeue ${f.key}?`,
                          consequence: `The job ${f.key} leaves the flagged set of ${picked} and waits again with its timeout count reset; a worker will claim it.`,
                          action: 'Requeue',
                          run: async () => {
                            await journal.requeue(picked, f.key);
                            flagged.refresh();
                          },
                        })}
                      >
                        requeue
                      </ConfirmButton>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      )}
    </div>
  );
}
