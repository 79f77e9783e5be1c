// The confirmation every dangerous operation asks for: it says what will happen,
// and nothing happens until the user says yes.
import { useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { describe } from './dashboard.js';

export interface Pending {
  readonly title: string;
  /** What will happen, in plain words (how many items, which member). */
  readonly consequence: ComponentChildren;
  readonly action: string;
  readonly run: () => Promise<void>;
}

export function ConfirmDialog({ pending, close }: { pending: Pending; close: (error?: string) => void }) {
  const [busy, setBusy] = useState(false);
  return (
    <div class="dialog-backdrop" role="dialog" aria-modal="true" aria-label={pending.title}>
      <div class="dialog">
        <h3>{pending.title}</h3>
        <p>{pending.consequence}</p>
        <div class="row">
          <button
            class="danger"
            disabled={busy}
            data-testid="confirm"
            onClick={() => {
              setBusy(true);
              pending.run().then(
                () => close(),
                (e: unknown) => close(describe(e)),
              );
            }}
          >
            {busy ? 'Working…' : pending.action}
          </button>
          <button disabled={busy} onClick={() => close()}>
            Cancel
          </button>
        </div>
      </div>
    </div>
  );
}

/** A button for a dangerous operation: it asks (through `confirm`) before `pending` runs, and is not there at all unless `show`. */
export function ConfirmButton({ show, confirm, pending, danger = false, children }: { show: boolean; confirm: (p: Pending) => void; pending: () => Pending; danger?: boolean; children: ComponentChildren }) {
  if (!show) return null;
  return (
    <button class={danger ? 'danger' : undefined} onClick={() => confirm(pending())}>
      {children}
    </button>
  );
}
