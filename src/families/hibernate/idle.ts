// The idle detector: the leader's duty that freezes the units of the configured
// roots nobody has used for the configured period, a bounded batch per tick and
// none while the clients are busy, and finishes the freezes, drains and thaws in
// steps an earlier leader (or a failure) left unfinished.
import type { FamilyHost, PluginDuty } from '../../kit/index.js';
import { childrenStep } from '../lists/public.js';
import type { HibernateCommand, HibernateValue } from './index.js';
import type { HibernateState } from './state.js';
import type { Activity } from './member.js';
import type { FreezeValue } from './index.js';
import { MAX_FREEZE_PATHS } from './wire.js';

/** Which units hibernate when idle (`vera start --hibernate-roots`, `--hibernate-after`). */
export interface IdleSettings {
  /** Each child of a root is a unit (`/users` makes `/users/alice` one). */
  readonly roots: readonly string[];
  /** A unit untouched this long is frozen by the leader. */
  readonly afterMs: number;
}

/** The host's section of the configuration for hibernation, checked: null when no unit hibernates by itself. */
export function idleSettings(raw: unknown): IdleSettings | null {
  if (raw === null || raw === undefined) return null;
  if (typeof raw === 'object' && 'roots' in raw && 'afterMs' in raw) {
    const { roots, afterMs } = raw;
    if (Array.isArray(roots) && roots.every((r): r is string => typeof r === 'string') && typeof afterMs === 'number') return { roots, afterMs };
  }
  throw new Error('the hibernation settings must be {roots: string[], afterMs: number}');
}

/** Above this many path operations in a tick the clients are busy: no freeze competes with them. */
const BUSY_OPS_PER_TICK = 500;
/** Units frozen per tick at most (in one entry). */
const FREEZES_PER_TICK = 8;
/** Children of a root looked at per tick: a root of millions of units is walked in steps. */
const CHILDREN_PER_TICK = 1000;

/** The unit a path belongs to under the configured roots (`/users/alice/x` -> `/users/alice`), or null. */
export function unitUnderRoots(roots: readonly string[], path: string): string | null {
  for (const root of roots) {
    if (!path.startsWith(`${root}/`)) continue;
    const cut = path.indexOf('/', root.length + 1);
    return cut < 0 ? path : path.slice(0, cut);
  }
  return null;
}

/** What the detector asks of the member's hibernation (server.ts): its settings, and the freezes and drains it runs. */
export interface IdleWork {
  readonly host: FamilyHost<HibernateState, HibernateValue, HibernateCommand>;
  readonly activity: Activity;
  settings(): IdleSettings | null;
  /** Units this member (as leader) is freezing right now. */
  readonly freezesInFlight: ReadonlySet<string>;
  freezeMany(units: readonly string[]): Promise<FreezeValue[]>;
  /** The commit entry alone, for freezes begun earlier. */
  commitOnly(units: readonly string[]): Promise<readonly FreezeValue[]>;
  drainAll(units: readonly string[]): Promise<void>;
  /** Draining or thawing units no one here is stepping through. */
  leftoverDrains(): string[];
}

/** Counts one use of `path` (each access the path guard sees): the unit's last use, and the tick's busyness. */
export function noteActivity(work: IdleWork, path: string): void {
  const settings = work.settings();
  if (settings === null) return;
  const a = work.activity;
  a.opsThisTick++;
  const unit = unitUnderRoots(settings.roots, path);
  if (unit !== null) a.lastUse.set(unit, Date.now());
}

/**
 * Freezes units idle longer than the configured period, a bounded batch per tick, and
 * none while the clients are busy. A unit never touched since this member began to lead
 * counts as used when it began (a new leader knows no history: it waits a full period).
 */
async function freezeIdle(work: IdleWork, settings: IdleSettings | null): Promise<void> {
  if (settings === null) return;
  const { host, activity: a } = work;
  const now = Date.now();
  const idle: string[] = [];
  for (const root of settings.roots) {
    const step = await childrenStep(host.reader, root, a.cursor.get(root) ?? null, CHILDREN_PER_TICK);
    // The next tick goes on from there; a unit passed over for the freeze budget comes round again on the next walk.
    if (step.next === null) a.cursor.delete(root);
    else a.cursor.set(root, step.next);
    for (const name of step.names) {
      if (idle.length >= FREEZES_PER_TICK) break;
      const unit = `${root}/${name}`;
      if (host.state().frozen.has(unit)) continue;
      if (now - (a.lastUse.get(unit) ?? a.leadingSince) >= settings.afterMs) idle.push(unit);
    }
  }
  if (idle.length === 0 || !host.isLeader()) return;
  // One entry for the tick's units: one pause of the apply pipeline, their files written in parallel.
  const values = await work.freezeMany(idle);
  for (const v of values) {
    // Frozen, or not freezable now (ephemeral items, too large): either way, look again a period later.
    a.lastUse.set(v.unit, Date.now());
    if (v.frozen) host.log.info({ event: 'hibernate.frozen', unit: v.unit, items: v.items, bytes: v.bytes }, `hibernated ${v.unit}`);
  }
}

/** Freezes begun and never committed (by an earlier leader, or a member that crashed between the two entries). */
function leftoverFreezes(work: IdleWork): string[] {
  const freezing = work.host.state().freezing;
  if (freezing.size === 0) return [];
  const leftover: string[] = [];
  for (const unit of freezing.keys()) {
    if (leftover.length === MAX_FREEZE_PATHS) break;
    if (!work.freezesInFlight.has(unit)) leftover.push(unit);
  }
  return leftover;
}

async function commitLeftovers(work: IdleWork, units: readonly string[]): Promise<void> {
  const committed = await work.commitOnly(units);
  // Said once committed: the spaced steps that drain a large unit may take a while yet.
  for (const v of committed) {
    if (v.frozen) work.host.log.info({ event: 'hibernate.frozen', unit: v.unit, items: v.items, bytes: v.bytes }, `hibernated ${v.unit} (a freeze begun earlier)`);
  }
  await work.drainAll(committed.filter((u) => u.frozen).map((u) => u.unit));
}

export function idleDetector(work: IdleWork): PluginDuty {
  const a = work.activity;
  return {
    name: 'hibernate-idle',
    periodMs: 1000,
    start: () => {
      a.leadingSince = Date.now();
      a.lastUse.clear();
      a.cursor.clear();
    },
    tick: () => {
      const busy = a.opsThisTick > BUSY_OPS_PER_TICK;
      a.opsThisTick = 0;
      if (a.running) return;
      const leftover = leftoverFreezes(work);
      const drains = leftover.length === 0 ? work.leftoverDrains() : [];
      const settings = work.settings();
      // A freeze begun and not committed, or committed and not drained, is finished even without an idle detector (one begun by hand).
      if (leftover.length === 0 && drains.length === 0 && (settings === null || busy)) return;
      a.running = true;
      (leftover.length > 0 ? commitLeftovers(work, leftover) : drains.length > 0 ? work.drainAll(drains) : freezeIdle(work, settings))
        .catch((err: unknown) => work.host.log.warn({ event: 'hibernate.idleFailed', err: String(err) }, 'the idle detector could not freeze a unit; it tries again'))
        .finally(() => (a.running = false));
    },
  };
}
