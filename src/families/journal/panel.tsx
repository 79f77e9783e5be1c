// Journal: each work queue's depth by status and priority, its oldest waiting
// job's age, paused or not (pause and resume), and its flagged jobs, which an
// operator requeues; a job found by key, with what it holds, its history (the
// lifecycle events this member keeps) and its actions: retry a flagged job,
// delete one. Every action is confirmed first.
import { useState } from 'preact/hooks';
import { ConfirmButton, count, describe, preview, usePoll, type FamilyPanel, type Pending, type PanelProps } from '../../ui/panel-kit.js';
import { JournalClient, type JobInfo, type LifecycleEventInfo } from './client.js';

function JournalPanel({ dash, readOnly, confirm }: PanelProps) {
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
              <th />
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
                <td onClick={(e) => e.stopPropagation()}>
                  {j.paused === true && <span class="bad" data-testid={`paused-${j.name}`}>paused </span>}
                  <ConfirmButton
                    show={!readOnly}
                    confirm={confirm}
                    pending={() =>
                      j.paused === true
                        ? { title: `Resume ${j.name}?`, consequence: `Workers claim jobs of ${j.name} again, on every member.`, action: 'Resume', run: async () => void (await journal.resume(j.name), list.refresh()) }
                        : {
                            title: `Pause ${j.name}?`,
                            consequence: `No worker claims a job of ${j.name} until it is resumed (claims waiting on a member go on waiting); adds, done and release go on.`,
                            action: 'Pause',
                            run: async () => void (await journal.pause(j.name), list.refresh()),
                          }
                    }
                  >
                    {j.paused === true ? 'resume' : 'pause'}
                  </ConfirmButton>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <JobFinder journal={journal} names={(list.data ?? []).map((j) => j.name)} picked={picked} readOnly={readOnly} confirm={confirm} />
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

interface Found {
  readonly journal: string;
  readonly job: JobInfo | null;
  readonly history: readonly LifecycleEventInfo[];
  /** The member may not hold the job's oldest events (it keeps the latest 2000 per journal, since it started). */
  readonly missed: boolean;
  readonly error: string | null;
}

/** One job by key: what it holds now, its history, and retry (flagged) or delete. */
function JobFinder({ journal, names, picked, readOnly, confirm }: { journal: JournalClient; names: readonly string[]; picked: string | null; readOnly: boolean; confirm: (p: Pending) => void }) {
  const [name, setName] = useState<string>('');
  const [key, setKey] = useState('');
  const [found, setFound] = useState<Found | null>(null);
  const chosen = name !== '' ? name : (picked ?? names[0] ?? '');
  const find = async (journalName: string, jobKey: string): Promise<void> => {
    const history = await journal.events(journalName, { after: 0, key: jobKey, limit: 1000 }).catch(() => ({ events: [], missed: true }));
    try {
      setFound({ journal: journalName, job: await journal.get(journalName, jobKey), history: history.events, missed: history.missed, error: null });
    } catch (e) {
      setFound({ journal: journalName, job: null, history: history.events, missed: history.missed, error: describe(e) });
    }
  };
  const job = found?.job ?? null;
  const again = (): Promise<void> => (found === null || job === null ? Promise.resolve() : find(found.journal, job.key));
  return (
    <section class="card" data-testid="job-finder">
      <h2>Find a job</h2>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          if (chosen !== '' && key !== '') void find(chosen, key);
        }}
      >
        <select data-testid="job-journal" value={chosen} onChange={(e) => setName((e.target as HTMLSelectElement).value)}>
          {names.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
        <input data-testid="job-key" placeholder="job key" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
        <button type="submit" data-testid="job-find">
          find
        </button>
      </form>
      {found?.error != null && <div class="error" data-testid="job-error">{found.error}</div>}
      {job !== null && found !== null && (
        <div data-testid="job">
          <table>
            <tbody>
              <tr><th style={{ width: '12em' }}>key</th><td class="mono">{job.key}</td></tr>
              <tr><th>status</th><td data-testid="job-status" class={job.status === 'flagged' || job.status === 'cancelled' ? 'bad' : undefined}>{job.status}</td></tr>
              <tr><th>priority</th><td>{job.priority}</td></tr>
              <tr><th>due</th><td>{new Date(job.processAt).toLocaleString()}</td></tr>
              <tr><th>added</th><td>{new Date(job.insertedAt).toLocaleString()}</td></tr>
              <tr><th>timeouts / failures</th><td>{job.timeouts} / {job.failures}</td></tr>
              {job.lastError !== undefined && <tr><th>last error</th><td class="mono" data-testid="job-last-error">{job.lastError}</td></tr>}
              {job.lease !== undefined && <tr><th>lease</th><td>{job.lease}, until {new Date(job.leaseExpiresAt ?? 0).toLocaleString()}</td></tr>}
              {job.progress !== undefined && <tr><th>progress</th><td class="mono">{preview(job.progress, 80).text}</td></tr>}
              {job.flaggedAt !== undefined && <tr><th>flagged</th><td>{new Date(job.flaggedAt).toLocaleString()}</td></tr>}
              <tr><th>data</th><td class="mono">{preview(job.data, 120).text}</td></tr>
            </tbody>
          </table>
          <div class="row">
            <ConfirmButton
              show={!readOnly && job.status === 'flagged'}
              confirm={confirm}
              pending={() => ({
                title: `Retry ${job.key}?`,
                consequence: `The flagged job ${job.key} waits again in ${found.journal}, due now, its counters at 0; a worker will claim it.`,
                action: 'Retry',
                run: async () => void (await journal.requeue(found.journal, job.key), await again()),
              })}
            >
              retry
            </ConfirmButton>
            <ConfirmButton
              show={!readOnly}
              danger
              confirm={confirm}
              pending={() => ({
                title: `Delete ${job.key}?`,
                consequence:
                  job.status === 'flagged'
                    ? `The flagged job ${job.key} is deleted from ${found.journal} for good.`
                    : job.status === 'processing'
                      ? `${job.key} is being processed: it is cancelled (its worker is told on its next call) and deleted when its claim ends.`
                      : `The waiting job ${job.key} is deleted from ${found.journal}; no worker will run it.`,
                action: 'Delete',
                run: async () => {
                  if (job.status === 'flagged') await journal.forget(found.journal, job.key);
                  else await journal.remove(found.journal, job.key);
                  await find(found.journal, job.key);
                },
              })}
            >
              delete
            </ConfirmButton>
          </div>
        </div>
      )}
      {found !== null && (
        <div data-testid="job-history">
          <h3>History</h3>
          {found.history.length === 0 ? (
            <p class="muted">No events held for this key.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th class="num">entry</th>
                  <th>event</th>
                </tr>
              </thead>
              <tbody>
                {found.history.map((e) => (
                  <tr key={`${e.index}-${e.type}`}>
                    <td class="num">{e.index}</td>
                    <td>{e.type}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <p class="muted">As this member holds them: the events since it started, the latest 2000 per journal{found.missed ? ' (any older ones are not shown)' : ''}.</p>
        </div>
      )}
    </section>
  );
}

export const panel: FamilyPanel = { tab: 'Journal', order: 10, Panel: JournalPanel };
