// Cluster: every member with its role, replication (match index, lag, reachable),
// the term, commit and applied index, leader changes seen while the page is open,
// and leadership transfer (an operator act, confirmed first).
import { useEffect, useState } from 'preact/hooks';
import { ObserveClient, type ClusterView } from '../../families/observe/client.js';
import { ConfirmButton, type Pending } from '../confirm.js';
import type { Dashboard } from '../dashboard.js';
import { count, usePoll } from '../util.js';

interface LeaderChange {
  readonly at: number;
  readonly term: number;
  readonly leader: string | null;
}

export function ClusterPanel({ dash, readOnly, confirm }: { dash: Dashboard; readOnly: boolean; confirm: (p: Pending) => void }) {
  const observe = new ObserveClient(dash.client);
  const view = usePoll(() => observe.cluster(), 2000);
  const metrics = usePoll(() => dash.metrics(), 5000);
  const [changes, setChanges] = useState<LeaderChange[]>([]);
  useEffect(() => {
    const v = view.data;
    if (v === null) return;
    setChanges((cs) => (cs.length > 0 && cs[0]!.term === v.term && cs[0]!.leader === v.leader ? cs : [{ at: Date.now(), term: v.term, leader: v.leader }, ...cs].slice(0, 50)));
  }, [view.data?.term, view.data?.leader]);
  const v: ClusterView | null = view.data;
  const lastIndex = metrics.data?.find((s) => s.name === 'vera_raft_last_index')?.value;
  // Operator endpoints take a logged-in admin's token, or else the cluster secret, which a browser never holds:
  // with authentication off (a `vera dev` cluster) the dashboard cannot transfer leadership, and says how to instead.
  const canOperate = dash.token !== null;
  const transferable = v === null ? [] : v.members.filter((m) => m.id !== v.leader && m.voter);
  return (
    <div>
      {view.error !== null && <div class="error">{view.error}</div>}
      {v !== null && (
        <section class="card" data-testid="cluster-panel">
          <h2>
            Cluster: term {v.term}, leader {v.leader ?? 'none'}
          </h2>
          <div class="row muted">
            commit {count(v.commit)} · applied {count(v.applied)} · last log index {count(v.lastIndex)} · {count(v.sessions)} sessions · command version {v.commandVersion}
            {lastIndex !== undefined ? ` · this member's log ends at ${count(lastIndex)}` : ''}
          </div>
          {!readOnly && !canOperate && transferable.length > 0 && (
            <div class="note" data-testid="operator-note">
              Leadership transfer is not offered here: with authentication off, operator requests need the cluster secret, which this page does not have. Run{' '}
              <code>vera leader transfer {transferable[0]!.id}</code> where the cluster was started (a <code>vera dev</code> cluster's secret is in{' '}
              <code>./vera-data/dev/cluster-secret</code>, where the CLI looks by itself), or turn authentication on and log in here as a user with admin on <code>cluster</code>.
            </div>
          )}
          <table>
            <thead>
              <tr>
                <th>member</th>
                <th>role</th>
                <th>client URL</th>
                <th class="num">match</th>
                <th class="num">lag (entries)</th>
                <th>health</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {v.members.map((m) => (
                <tr key={m.id} data-testid={`member-${m.id}`}>
                  <td>
                    <b>{m.id}</b>
                  </td>
                  <td>{m.id === v.leader ? <span class="pill leader">leader</span> : m.voter ? 'follower' : 'learner'}</td>
                  <td class="mono">{m.clientUrl ?? '?'}</td>
                  <td class="num">{m.match === undefined ? '-' : count(m.match)}</td>
                  <td class="num">{m.lag === undefined ? '-' : count(m.lag)}</td>
                  <td>{m.reachable === undefined ? <span class="muted">ask the leader</span> : m.reachable ? <span class="good">reachable</span> : <span class="pill down">unreachable</span>}</td>
                  <td>
                    <ConfirmButton
                      show={!readOnly && canOperate && m.id !== v.leader && m.voter}
                      confirm={confirm}
                      pending={() => ({
                        title: `Transfer leadership to ${m.id}?`,
                        consequence: `${v.leader ?? 'The leader'} steps down and ${m.id} becomes the leader. Clients reconnect to it; writes pause for about one election.`,
                        action: `Make ${m.id} leader`,
                        run: async () => {
                          await dash.http('/v1/leader/transfer', { method: 'POST', body: JSON.stringify({ to: m.id }) });
                          view.refresh();
                        },
                      })}
                    >
                      make leader
                    </ConfirmButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
      <section class="card">
        <h2>Leader changes seen</h2>
        <table>
          <tbody>
            {changes.map((c) => (
              <tr key={`${c.term}-${c.at}`}>
                <td>{new Date(c.at).toLocaleTimeString()}</td>
                <td>term {c.term}</td>
                <td>leader {c.leader ?? 'none'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </div>
  );
}
