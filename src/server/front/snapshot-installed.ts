// What the member's connections need once it installed a snapshot (docs/scale-out.md,
// "Watches and notifications"): a leader never installs one, so this matters once
// followers hold sessions (step 8b). The event log restarts at the snapshot's index, so
// every feed is resynced; and a session whose closeSession the snapshot covered was never
// applied here as an entry, so its connection is closed now, as applying it would have.
import { CloseCode, type FrontEnd } from './context.js';

export function afterSnapshotInstalled(fe: FrontEnd): void {
  // The ended sessions first, so no resync is read for a feed about to go.
  for (const [session, connection] of [...fe.connections]) {
    if (fe.connectionSeam.session(session) !== undefined) continue;
    fe.notifier.forgetSession(session);
    fe.connections.delete(session);
    connection.close(CloseCode.sessionEnded, 'session ended');
  }
  fe.notifier.resyncAll();
}
