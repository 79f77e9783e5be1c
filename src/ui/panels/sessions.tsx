// Sessions: each live session with its user, address, connection, watches and
// notification lag; one picked shows its ephemeral items and watches.
import { useState } from 'preact/hooks';
import { ObserveClient, type SessionDetail } from '../../families/observe/client.js';
import type { Dashboard } from '../dashboard.js';
import { count, usePoll } from '../util.js';

export function SessionsPanel({ dash }: { dash: Dashboard }) {
  const observe = new ObserveClient(dash.client);
  const [after, setAfter] = useState<string[]>([]);
  const [picked, setPicked] = useState<string | null>(null);
  const cursor = after.at(-1);
  const page = usePoll(() => observe.sessions(cursor, 100), 2000, [cursor]);
  const detail = usePoll<SessionDetail | { live: false } | null>(() => (picked === null ? Promise.resolve(null) : observe.session(picked, 200)), 2000, [picked]);
  const d = detail.data;
  return (
    <div data-testid="sessions-panel">
      {page.error !== null && <div class="error">{page.error}</div>}
      <section class="card">
        <h2>Sessions {page.data !== null && <span class="muted">({count(page.data.total)})</span>}</h2>
        <table>
          <thead>
            <tr>
              <th>session</th>
              <th>user</th>
              <th>remote</th>
              <th>connected here</th>
              <th class="num">watches</th>
              <th class="num">notification lag (entries)</th>
              <th class="num">timeout</th>
            </tr>
          </thead>
          <tbody>
            {(page.data?.sessions ?? []).map((s) => (
              <tr key={s.session} onClick={() => setPicked(s.session)} style={{ cursor: 'pointer' }} class={picked === s.session ? 'selected' : ''} data-session={s.session}>
                <td class="mono">{s.session}</td>
                <td>{s.principal ?? <span class="muted">-</span>}</td>
                <td class="mono">{s.remote}</td>
                <td>{s.connected ? 'yes' : <span class="muted">no</span>}</td>
                <td class="num">{s.watches}</td>
                <td class={`num${s.lag > 1000 ? ' warn' : ''}`}>{count(s.lag)}</td>
                <td class="num">{s.timeoutMs / 1000} s</td>
              </tr>
            ))}
          </tbody>
        </table>
        <div class="row" style={{ marginTop: '8px' }}>
          <button disabled={after.length === 0} onClick={() => setAfter(after.slice(0, -1))}>
            ‹ prev
          </button>
          <button disabled={page.data?.next === undefined} onClick={() => page.data?.next !== undefined && setAfter([...after, page.data.next])}>
            next ›
          </button>
        </div>
      </section>
      {picked !== null && d !== null && (
        <section class="card" data-testid="session-detail">
          <h2 class="mono">{picked}</h2>
          {!d.live ? (
            <p class="muted">This session has ended; its ephemeral items are gone.</p>
          ) : (
            <div>
              <p>
                {d.principal ?? 'no user'} from <span class="mono">{d.remote}</span>, {d.watches} watches, {count(d.lag)} notifications behind.
              </p>
              <h3>Ephemeral items ({d.items.length})</h3>
              <table>
                <tbody>
                  {d.items.map((i) => (
                    <tr key={`${i.path}#${i.index}`}>
                      <td class="mono">{i.path}</td>
                      <td class="num">#{i.index}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <h3>Watches</h3>
              <ul>
                {d.watchList.map((w) => (
                  <li key={`${w.path}${w.prefix}`} class="mono">
                    {w.path}
                    {w.prefix ? ' (and below)' : ''}
                  </li>
                ))}
              </ul>
            </div>
          )}
        </section>
      )}
    </div>
  );
}
