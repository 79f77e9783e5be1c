// Events: the live stream of changes the dashboard's watch receives, newest
// first, filtered by path prefix and kind.
import { useState } from 'preact/hooks';
import type { ChangeEvent } from '../../client/index.js';
import { preview } from '../util.js';

export interface Seen extends ChangeEvent {
  readonly at: number;
}

export function EventsPanel({ events, watching }: { events: readonly Seen[]; watching: string }) {
  const [prefix, setPrefix] = useState('');
  const [kind, setKind] = useState<'all' | 'push' | 'delete'>('all');
  const shown = events.filter((e) => (prefix === '' || e.path === prefix || e.path.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`)) && (kind === 'all' || e.type === kind));
  return (
    <section class="card" data-testid="events-panel">
      <h2>Events</h2>
      <div class="row">
        <span class="muted">{watching}</span>
        <input placeholder="path prefix" value={prefix} onInput={(e) => setPrefix((e.target as HTMLInputElement).value)} data-testid="event-filter" />
        <select value={kind} onChange={(e) => setKind((e.target as HTMLSelectElement).value as typeof kind)}>
          <option value="all">push and delete</option>
          <option value="push">push</option>
          <option value="delete">delete</option>
        </select>
        <span class="muted">
          {shown.length} of the last {events.length}
        </span>
      </div>
      <div class="events">
        <table>
          <tbody>
            {shown.map((e) => (
              <tr key={`${e.index}-${e.path}-${e.type}-${e.item.index}`}>
                <td class="muted">{new Date(e.at).toLocaleTimeString()}</td>
                <td class="num">{e.index}</td>
                <td>{e.type === 'push' ? <span class="good">push</span> : <span class="bad">delete</span>}</td>
                <td class="mono">{e.path}</td>
                <td class="mono">#{e.item.index}</td>
                <td class="mono value">{preview(e.item.data, 80).text}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
