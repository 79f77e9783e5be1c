// Named points in freeze and thaw where a test makes the process kill itself
// (VERA_CRASH_AT=<point>), to prove on a real process that every crash there
// leaves the hot copy or a verified cold copy. The same idea as etcd's
// failpoints, reduced to one environment variable read at start.
const CRASH_AT = process.env.VERA_CRASH_AT ?? null;

export type CrashPoint = 'freeze-before-cold' | 'freeze-cold-durable' | 'thaw-cold-read' | 'thaw-batch-written' | 'drop-hot-planned' | 'drop-hot-written' | 'thaw-step-written';

export const CRASH_POINTS: readonly CrashPoint[] = ['freeze-before-cold', 'freeze-cold-durable', 'thaw-cold-read', 'thaw-batch-written'];

/** The steps that delete a large frozen unit's hot entries (dropHot): before a step's batch, and with it written. */
export const DRAIN_CRASH_POINTS: readonly CrashPoint[] = ['drop-hot-planned', 'drop-hot-written'];

/** A large unit's thaw in steps (thawStep): with a step's batch written and the next not begun. */
export const THAW_STEP_CRASH_POINTS: readonly CrashPoint[] = ['thaw-step-written'];

/** Dies here, as kill -9 would, when this is the configured point. */
export function crashPoint(point: CrashPoint): void {
  if (CRASH_AT === point) process.kill(process.pid, 'SIGKILL');
}
