// The counter family's dashboard tab, the example of a family panel: look a counter
// up by name, add to it, remove it (asked first). Found by the dashboard's build in
// this folder; it sees the dashboard only through the panel kit.
import { useState } from 'preact/hooks';
import { ConfirmButton, describe, type FamilyPanel, type PanelProps } from '../../ui/panel-kit.js';
import { CounterClient, type CounterValue } from './client.js';

function CounterPanel({ dash, readOnly, confirm }: PanelProps) {
  const counters = new CounterClient(dash.client);
  const [name, setName] = useState('');
  const [shown, setShown] = useState<CounterValue | null>(null);
  const [error, setError] = useState<string | null>(null);
  const run = (action: () => Promise<CounterValue>): void => {
    setError(null);
    action().then(setShown, (err: unknown) => setError(describe(err)));
  };
  return (
    <div data-testid="counter-panel">
      <section class="card">
        <h2>Counters</h2>
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            run(() => counters.get(name));
          }}
        >
          <input placeholder="counter name" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} data-testid="counter-name" />
          <button type="submit">look up</button>
          {!readOnly && (
            <button type="button" onClick={() => run(() => counters.add(name))} data-testid="counter-add">
              add 1
            </button>
          )}
        </form>
        {error !== null && <div class="error">{error}</div>}
        {shown !== null && (
          <table>
            <tbody>
              <tr>
                <th>{shown.name}</th>
                <td data-testid="counter-value">{shown.exists ? shown.value : '0 (absent)'}</td>
                <td>
                  <ConfirmButton
                    show={!readOnly && shown.exists}
                    confirm={confirm}
                    danger
                    pending={() => ({
                      title: `Remove counter ${shown.name}?`,
                      consequence: `Its value ${shown.value} is gone; the next add starts from 0.`,
                      action: 'remove',
                      run: async () => {
                        await counters.remove(shown.name);
                        setShown(await counters.get(shown.name));
                      },
                    })}
                  >
                    remove
                  </ConfirmButton>
                </td>
              </tr>
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}

export const panel: FamilyPanel = { tab: 'Counters', order: 90, Panel: CounterPanel };
