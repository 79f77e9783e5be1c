// What a family's dashboard tab (src/families/<name>/panel.tsx) may use of the
// dashboard, and the shape it exports: the only src/ui module a family imports
// (test/architecture/imports.test.ts), so the dashboard's own files can change freely.
import type { JSX } from 'preact';
import type { Pending } from './confirm.js';
import type { Dashboard } from './dashboard.js';

export { ConfirmButton, type Pending } from './confirm.js';
export { describe, type Dashboard } from './dashboard.js';
export { quantileBetween, total, type Sample } from './prometheus.js';
export { ago, bytes, count, download, preview, usePoll, type Polled } from './util.js';
export { Chart, type Series, type Unit } from './chart.js';

export interface PanelProps {
  readonly dash: Dashboard;
  /** The page's read-only switch: no control that changes data is shown while it is on. */
  readonly readOnly: boolean;
  /** Asks the user before a change (ConfirmButton does it for a button). */
  readonly confirm: (p: Pending) => void;
}

/** What a family's panel.tsx exports as `panel`: its tab, placed after the core tabs in `order`. */
export interface FamilyPanel {
  readonly tab: string;
  readonly order: number;
  readonly Panel: (props: PanelProps) => JSX.Element;
}
