// Running seeds: one run per seed, the environment knobs of the seeded CI run,
// and, when a run fails, a replay that attaches the last events before the
// failure to the error (the run is deterministic, so the replay fails the same way).

import { SimCluster, type SimResult } from './cluster.js';
import { deriveConfig, DEFAULT_FAULT_STEPS, type ConfigOverrides } from './config.js';
import { InvariantViolation } from './invariants.js';

export interface RunOptions extends ConfigOverrides {
  /** Every event as a line (verbose replay). */
  readonly log?: (line: string) => void;
  /** On failure, rerun the seed and append this many trailing events to the error (0 = don't). */
  readonly traceTail?: number;
}

export async function runSeed(seed: number, options: RunOptions = {}): Promise<SimResult> {
  const config = deriveConfig(seed, options);
  try {
    return await new SimCluster(config, options.log ?? null).run();
  } catch (err) {
    const tail = options.traceTail ?? 0;
    if (!(err instanceof InvariantViolation) || tail <= 0 || options.log !== undefined) throw err;
    const lines: string[] = [];
    try {
      await new SimCluster(config, (line) => {
        lines.push(line);
        if (lines.length > tail * 2) lines.splice(0, lines.length - tail);
      }).run();
    } catch {
      // Expected: the same violation again.
    }
    const last = lines.slice(-tail);
    throw new InvariantViolation(err.invariant, err.detail, `${err.where}\n  last ${last.length} events:\n    ${last.join('\n    ')}`);
  }
}

/** Knobs of the seeded run, from the environment (see test/sim/sim.test.ts). */
export interface SimEnvironment {
  /** VERA_SIM_SEED: replay this one seed verbosely. */
  readonly replaySeed: number | null;
  /** VERA_SIM_SEEDS: how many seeds to run (soak). */
  readonly seeds: number | null;
  /** VERA_SIM_STEPS: fault-phase steps per run. */
  readonly steps: number;
  /** VERA_SIM_FIRST_SEED: where the seed range starts (default 1). */
  readonly firstSeed: number;
}

export function readSimEnvironment(env: NodeJS.ProcessEnv = process.env): SimEnvironment {
  return {
    replaySeed: readInteger(env, 'VERA_SIM_SEED', 0),
    seeds: readInteger(env, 'VERA_SIM_SEEDS', 1),
    steps: readInteger(env, 'VERA_SIM_STEPS', 1) ?? DEFAULT_FAULT_STEPS,
    firstSeed: readInteger(env, 'VERA_SIM_FIRST_SEED', 0) ?? 1,
  };
}

function readInteger(env: NodeJS.ProcessEnv, name: string, min: number): number | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min) {
    throw new RangeError(`${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
  }
  return value;
}
