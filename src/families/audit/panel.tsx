// The audit log, for admins: newest records first, and a check of the whole
// hash chain in the browser (SHA-256 by Web Crypto, the same hash as
// `vera audit --verify`).
import { useState } from 'preact/hooks';
import { describe, usePoll, type Dashboard, type FamilyPanel } from '../../ui/panel-kit.js';
import { AuditClient } from './client.js';
import type { AuditRecord } from './wire.js';

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** The first record whose hash or link does not hold, or null. */
async function verify(records: readonly AuditRecord[]): Promise<string | null> {
  let prev: string | null = null;
  for (const r of records) {
    if (prev !== null && r.prev !== prev) return `record ${r.seq} does not name the hash of the record before it`;
    const hash = await sha256(JSON.stringify([r.seq, r.at, r.kind, r.principal, r.remote, r.what, r.prev]));
    if (hash !== r.hash) return `record ${r.seq}: its hash does not match its contents`;
    prev = r.hash;
  }
  return null;
}

function AuditPanel({ dash }: { dash: Dashboard }) {
  const audit = new AuditClient(dash.client);
  const newest = usePoll(async () => {
    const head = await audit.page(0, 1);
    return (await audit.page(Math.max(0, head.newest - 200), 200)).records.slice().reverse();
  }, 3000);
  const [check, setCheck] = useState<string | null>(null);
  return (
    <div data-testid="audit-panel">
      {newest.error !== null && <div class="error">{newest.error}</div>}
      <section class="card">
        <h2>Audit log</h2>
        <div class="row">
          <button
            onClick={() => {
              setCheck('checking…');
              const all: AuditRecord[] = [];
              audit
                .each((page) => all.push(...page))
                .then(() => verify(all))
                .then(
                  (broken) => setCheck(broken === null ? `the chain verifies: ${all.length} records, each linked to the one before` : `does NOT verify: ${broken}`),
                  (e: unknown) => setCheck(describe(e)),
                );
            }}
          >
            verify the chain
          </button>
          {check !== null && <span data-testid="audit-check">{check}</span>}
        </div>
        <table>
          <thead>
            <tr>
              <th class="num">#</th>
              <th>when</th>
              <th>kind</th>
              <th>user</th>
              <th>from</th>
              <th>what</th>
            </tr>
          </thead>
          <tbody>
            {(newest.data ?? []).map((r) => (
              <tr key={r.seq}>
                <td class="num">{r.seq}</td>
                <td>{new Date(r.at).toLocaleString()}</td>
                <td class={r.kind === 'denied' || r.kind === 'auth-failed' ? 'bad' : ''}>{r.kind}</td>
                <td>{r.principal ?? '-'}</td>
                <td class="mono">{r.remote}</td>
                <td class="mono">{r.what}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </div>
  );
}

export const panel: FamilyPanel = { tab: 'Audit', order: 40, Panel: AuditPanel };
