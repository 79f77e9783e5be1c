// The dashboard: log in (when authentication is on), then one tab per panel.
// The page is itself a Vera client: one session, one watch of everything the
// user may watch, and every panel reads through it.
import { useEffect, useRef, useState } from 'preact/hooks';
import { VeraError, type ChangeEvent, type ResyncList } from '../client/index.js';
import { ConfirmDialog, type Pending } from './confirm.js';
import { describe, hasStoredToken, isUnauthorized, logIn, logOut, openDashboard, type Dashboard } from './dashboard.js';
import { ClusterPanel } from './panels/cluster.js';
import { DataPanel } from './panels/data.js';
import { EventsPanel, type Seen } from './panels/events.js';
import { MetricsPanel } from './panels/metrics.js';
import { SessionsPanel } from './panels/sessions.js';
import { panels as familyPanels } from 'vera:family-panels';

/** The dashboard's own tabs; then each family's (its panel.tsx, found by the build). */
const CORE_TABS = ['Cluster', 'Data', 'Sessions', 'Events', 'Metrics'] as const;
const TABS: readonly string[] = [...CORE_TABS, ...familyPanels.map((p) => p.tab)];
type Tab = string;
const KEEP_EVENTS = 500;
/**
 * Events reach the page in bursts of hundreds a second under load: they are handed to the
 * panels at most this often, in one render and one call per listener, so the page stays usable.
 */
const FLUSH_EVENTS_MS = 250;
/** Errors after which the watch of everything is tried again on the next connection. */
const RETRYABLE: ReadonlySet<string> = new Set(['UNAVAILABLE', 'NOT_LEADER', 'NO_LEADER', 'TIMEOUT']);

function LoginForm({ onDone, reason }: { onDone: (d: Dashboard) => void; reason: string | null }) {
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(reason);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="card login"
      data-testid="login"
      onSubmit={(e) => {
        e.preventDefault();
        setBusy(true);
        logIn(user, password).then(onDone, (err: unknown) => {
          setError(describe(err));
          setBusy(false);
        });
      }}
    >
      <h2>Log in to Vera</h2>
      {error !== null && <div class="error">{error}</div>}
      <label>
        user
        <input name="user" autocomplete="username" value={user} onInput={(e) => setUser((e.target as HTMLInputElement).value)} />
      </label>
      <label>
        password
        <input name="password" type="password" autocomplete="current-password" value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
      </label>
      <button type="submit" class="primary" disabled={busy}>
        {busy ? 'Logging in…' : 'Log in'}
      </button>
    </form>
  );
}

export function App() {
  const [dash, setDash] = useState<Dashboard | null>(null);
  /** Set when the member wants credentials: why (a stored token no longer works), or null for a first login. */
  const [login, setLogin] = useState<{ reason: string | null } | null>(null);
  const [fatal, setFatal] = useState<string | null>(null);
  const [tab, setTab] = useState<Tab>(() => (TABS.includes(location.hash.slice(1)) ? location.hash.slice(1) : 'Data'));
  const [readOnly, setReadOnly] = useState(true);
  const [pending, setPending] = useState<Pending | null>(null);
  /** A confirmed action that failed: said at the top of the page (not in an alert) until dismissed. */
  const [actionError, setActionError] = useState<{ title: string; error: string } | null>(null);
  const [events, setEvents] = useState<Seen[]>([]);
  const [watching, setWatching] = useState('');
  const [connection, setConnection] = useState('connecting');
  /** What the panels are told: the paths that changed (an event's, or every list of a resync). */
  const listeners = useRef(new Set<(paths: readonly string[]) => void>());

  useEffect(() => {
    const hadToken = hasStoredToken();
    openDashboard().then(setDash, (err: unknown) => (isUnauthorized(err) ? setLogin({ reason: hadToken ? describe(err) : null }) : setFatal(describe(err))));
  }, []);

  // One watch of everything the user may watch; events go to the panels and the events list.
  useEffect(() => {
    if (dash === null) return;
    const client = dash.client;
    let arrived: Seen[] = [];
    /** Every path changed since the last flush (kept whole, even when the events list keeps only the newest). */
    let changed = new Set<string>();
    let flushTimer: ReturnType<typeof setTimeout> | undefined;
    const flush = (): void => {
      flushTimer = undefined;
      const batch = arrived;
      const paths = [...changed];
      arrived = [];
      changed = new Set();
      setEvents((es) => [...batch.reverse(), ...es].slice(0, KEEP_EVENTS));
      for (const l of listeners.current) l(paths);
    };
    const onEvent = (e: ChangeEvent): void => {
      arrived.push({ ...e, at: Date.now() });
      changed.add(e.path);
      if (arrived.length > 2 * KEEP_EVENTS) arrived = arrived.slice(-KEEP_EVENTS);
      flushTimer ??= setTimeout(flush, FLUSH_EVENTS_MS);
    };
    // After a reconnect the server may send a resync instead of the events missed (a new leader does):
    // everything it names is reread.
    const onResync = (lists: readonly ResyncList[]): void => {
      const paths = lists.map((l) => l.path);
      for (const l of listeners.current) l(paths);
    };
    client.on('event', onEvent);
    client.on('resync', onResync);
    let watched = false;
    const watchEverything = (): void => {
      client.watch('/', { prefix: true }).then(
        () => {
          watched = true;
          setWatching('watching every list');
        },
        (err: unknown) => {
          // Lost with the connection (a leader change): tried again once the client is back; refused: each opened list is watched alone.
          if (err instanceof VeraError && RETRYABLE.has(err.code)) setWatching('watch of every list pending a connection');
          else setWatching(`not watching everything (${describe(err)}); each list opened is watched by itself`);
        },
      );
    };
    client.on('connected', (info) => {
      setConnection(`connected to ${info.url}`);
      if (!watched) watchEverything();
    });
    client.on('disconnected', (reason) => setConnection(`reconnecting (${reason})`));
    client.on('failed', (err) => setFatal(describe(err)));
    client.on('revoked', (w) => setWatching(`watch of ${w.map((x) => x.path).join(', ')} revoked`));
    setConnection(`connected to ${client.serverUrl ?? '?'}`);
    watchEverything();
    return () => {
      client.off('event', onEvent);
      client.off('resync', onResync);
      if (flushTimer !== undefined) clearTimeout(flushTimer);
    };
  }, [dash]);

  useEffect(() => {
    location.hash = tab;
  }, [tab]);

  if (fatal !== null) return <div class="error" style={{ margin: '40px' }}>The dashboard cannot work: {fatal}</div>;
  if (dash === null) return login === null ? <p style={{ margin: '40px' }}>Connecting…</p> : <LoginForm onDone={setDash} reason={login.reason} />;

  const liveEvents = (listener: (paths: readonly string[]) => void): (() => void) => {
    listeners.current.add(listener);
    return () => listeners.current.delete(listener);
  };
  const family = familyPanels.find((p) => p.tab === tab);
  const panel = family !== undefined ? <family.Panel dash={dash} readOnly={readOnly} confirm={setPending} /> : {
    Cluster: <ClusterPanel dash={dash} readOnly={readOnly} confirm={setPending} />,
    Data: <DataPanel dash={dash} readOnly={readOnly} confirm={setPending} liveEvents={liveEvents} />,
    Sessions: <SessionsPanel dash={dash} />,
    Events: <EventsPanel events={events} watching={watching} />,
    Metrics: <MetricsPanel dash={dash} />,
  }[tab];
  return (
    <div>
      <header>
        <span class="brand">VERA</span>
        <span class="facts">
          <span data-testid="connection">{connection}</span>
          <span data-testid="watching">{watching}</span>
          <span>session {dash.client.session}</span>
          {dash.user !== null && <span data-testid="user">user {dash.user}</span>}
        </span>
        <span class="spacer" />
        <label>
          <input type="checkbox" checked={readOnly} onChange={(e) => setReadOnly((e.target as HTMLInputElement).checked)} data-testid="read-only" /> read-only
        </label>
        {dash.user !== null && (
          <button
            onClick={() => {
              void logOut()
                .then(() => dash.close())
                .then(() => location.reload());
            }}
          >
            log out
          </button>
        )}
      </header>
      <nav role="tablist">
        {TABS.map((t) => (
          <button key={t} role="tab" aria-selected={t === tab} onClick={() => setTab(t)} data-testid={`tab-${t}`}>
            {t}
          </button>
        ))}
      </nav>
      <main>
        {actionError !== null && (
          <div class="error row" role="alert" data-testid="action-error">
            <span>
              <b>{actionError.title}</b> failed: {actionError.error}
            </span>
            <span class="spacer" />
            <button onClick={() => setActionError(null)} aria-label="dismiss">
              ×
            </button>
          </div>
        )}
        {panel}
      </main>
      {pending !== null && (
        <ConfirmDialog
          pending={pending}
          close={(error) => {
            setActionError(error === undefined ? null : { title: pending.title.replace(/\?$/, ''), error });
            setPending(null);
          }}
        />
      )}
    </div>
  );
}
