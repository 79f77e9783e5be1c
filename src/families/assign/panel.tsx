// Node assignment: each service's nodes with load against capacity, the
// allocation rate, records awaiting purge, a user lookup, and decommissioning a
// node (confirmed first).
import { useRef, useState } from 'preact/hooks';
import { ConfirmButton, count, describe, total, usePoll, type FamilyPanel, type PanelProps } from '../../ui/panel-kit.js';
import { AssignClient, type Lookup } from './client.js';

function AssignPanel({ dash, readOnly, confirm }: PanelProps) {
  const assign = new AssignClient(dash.client);
  const services = usePoll(() => assign.services(), 3000);
  const [picked, setPicked] = useState<string | null>(null);
  const nodes = usePoll(async () => (picked === null ? [] : assign.nodes(picked)), 2000, [picked]);
  // A read (assign.purgeable), not a dry-run purge: opening a service writes nothing, not even an audit record.
  const awaiting = usePoll(async () => (picked === null ? null : await assign.purgeable(picked, { max: 1000 })), 10_000, [picked]);
  const lastScrape = useRef<{ at: number; n: number } | null>(null);
  const rate = usePoll(async () => {
    const n = total(await dash.metrics(), 'vera_assign_allocations_total');
    const before = lastScrape.current;
    lastScrape.current = { at: Date.now(), n };
    return before === null ? null : ((n - before.n) * 1000) / Math.max(1, Date.now() - before.at);
  }, 3000);
  const [email, setEmail] = useState('');
  const [found, setFound] = useState<Lookup | string | null>(null);
  return (
    <div data-testid="assign-panel">
      {services.error !== null && <div class="error">{services.error}</div>}
      <section class="card">
        <h2>Services</h2>
        <p class="muted">Allocations on this member (as leader): {rate.data === null ? 'measuring (two scrapes of /metrics, 3 s apart)…' : `${rate.data.toFixed(2)} a second`}</p>
        <table>
          <thead>
            <tr>
              <th>service</th>
              <th class="num">nodes</th>
              <th>pattern</th>
              <th class="num">release rate</th>
              <th>new users</th>
            </tr>
          </thead>
          <tbody>
            {(services.data ?? []).map((s) => (
              <tr key={s.service} onClick={() => setPicked(s.service)} style={{ cursor: 'pointer' }}>
                <td>
                  <b>{s.service}</b>
                </td>
                <td class="num">{s.nodes}</td>
                <td class="mono">{s.pattern}</td>
                <td class="num">{s.releaseRate}</td>
                <td>{s.newUsers ? 'yes' : 'no'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      {picked !== null && (
        <section class="card">
          <h2>Nodes of {picked}</h2>
          <p class="muted"><span data-testid="awaiting-purge">Records awaiting purge (replaced over 7 days ago): {awaiting.error !== null ? awaiting.error : awaiting.data === null ? '…' : awaiting.data.capped ? `more than ${count(awaiting.data.records)}` : count(awaiting.data.records)}</span></p>
          <table>
            <thead>
              <tr>
                <th>node</th>
                <th>load / capacity</th>
                <th class="num">available</th>
                <th>state</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {(nodes.data ?? []).map((n) => (
                <tr key={n.node}>
                  <td class="mono">{n.node}</td>
                  <td>
                    <div class="row">
                      <div class="bar">
                        <div style={{ width: `${n.capacity === 0 ? 0 : Math.min(100, (100 * n.load) / n.capacity)}%` }} />
                      </div>
                      {count(n.load)} / {count(n.capacity)}
                    </div>
                  </td>
                  <td class="num">{count(n.available)}</td>
                  <td>{n.downed ? <span class="pill down">downed</span> : n.backoff > 0 ? `backoff ${n.backoff} s` : 'up'}</td>
                  <td>
                    <ConfirmButton
                      show={!readOnly}
                      danger
                      confirm={confirm}
                      pending={() => ({
                        title: `Decommission ${n.node}?`,
                        consequence: `The ${count(n.load)} users assigned to ${n.node} in ${picked} get new records on other nodes (in bounded batches); the node takes no new users.`,
                        action: 'Decommission',
                        run: async () => {
                          await assign.decommission(picked, n.node);
                          nodes.refresh();
                        },
                      })}
                    >
                      decommission
                    </ConfirmButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <form
            class="row"
            style={{ marginTop: '12px' }}
            onSubmit={(e) => {
              e.preventDefault();
              assign.lookup(picked, email).then(setFound, (err: unknown) => setFound(describe(err)));
            }}
          >
            <input placeholder="user email" value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
            <button type="submit">look up</button>
          </form>
          {typeof found === 'string' && <div class="error">{found}</div>}
          {found !== null && typeof found !== 'string' && (
            <table>
              <tbody>
                <tr>
                  <th>endpoint</th>
                  <td class="mono">{found.current.endpoint}</td>
                </tr>
                <tr>
                  <th>records</th>
                  <td>{found.records.length}</td>
                </tr>
                <tr>
                  <th>first seen</th>
                  <td>{new Date(found.firstSeenAt).toLocaleString()}</td>
                </tr>
              </tbody>
            </table>
          )}
        </section>
      )}
    </div>
  );
}

export const panel: FamilyPanel = { tab: 'Assignment', order: 20, Panel: AssignPanel };
