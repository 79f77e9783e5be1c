// Where `vera dev` keeps the cluster secret it generated, so the operator commands
// (`vera member`, `vera leader`, `vera snapshot save`) run from the same directory
// find it without being told: a newcomer's next step after `vera dev` is often
// one of those, in another terminal, and UNAUTHORIZED there explained nothing.
// --secret and VERA_CLUSTER_SECRET still come first.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CliIO } from './io.js';

/** The file in `vera dev`'s base data directory holding the run's secret (owner-only). */
export const DEV_SECRET_FILE = 'cluster-secret';
/** `vera dev`'s default base data directory, relative to where it runs. */
export const DEV_DEFAULT_DATA = './vera-data/dev';

/** The secret of a dev cluster started from `io.cwd` with the default --data, or null when there is none. */
export function devClusterSecret(io: Pick<CliIO, 'cwd'>): string | null {
  try {
    const text = readFileSync(join(io.cwd, DEV_DEFAULT_DATA, DEV_SECRET_FILE), 'utf8').trim();
    return text === '' ? null : text;
  } catch {
    return null;
  }
}
