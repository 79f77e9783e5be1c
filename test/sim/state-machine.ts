// The simulated application state machine: it records how far it has applied,
// a digest of everything applied and the cluster configuration those entries
// lead to, which is enough to compare replicas. It is durable (survives a crash
// with its applied index), like the real state machine that writes each entry
// and its applied index in one LevelDB batch; so a restarted node resumes
// applying at applied + 1. A snapshot is this whole state, serialized.

import { applyConfigChange, ConfigChangeError, decodeConfigChange } from '../../src/raft/config.js';
import type { ClusterConfig, Entry } from '../../src/raft/types.js';
import { entryContentHash } from './hash.js';

/** Everything a snapshot carries. */
export interface SimState {
  readonly applied: number;
  readonly digest: number;
  readonly commandsApplied: number;
  readonly config: ClusterConfig;
}

export class SnapshotFormatError extends Error {
  override readonly name = 'SnapshotFormatError';
}

export class SimStateMachine {
  applied = 0;
  digest = 0x811c9dc5;
  commandsApplied = 0;
  /** The configuration after the config entries applied so far (as the core computes it). */
  config: ClusterConfig;

  constructor(initialConfig: ClusterConfig) {
    this.config = initialConfig;
  }

  apply(entry: Entry): void {
    if (entry.index !== this.applied + 1) {
      throw new Error(`state machine asked to apply index ${entry.index} after ${this.applied} (driver bug)`);
    }
    this.applied = entry.index;
    if (entry.kind === 'command') this.commandsApplied++;
    if (entry.kind === 'config') this.config = configAfter(this.config, entry);
    let h = Math.imul(this.digest ^ entry.index, 0x01000193);
    h = Math.imul(h ^ entry.term, 0x01000193);
    h = Math.imul(h ^ entryContentHash(entry), 0x01000193);
    this.digest = h >>> 0;
  }

  capture(): SimState {
    return { applied: this.applied, digest: this.digest, commandsApplied: this.commandsApplied, config: this.config };
  }

  /** Replaces the whole state (a snapshot install). */
  restore(state: SimState): void {
    this.applied = state.applied;
    this.digest = state.digest;
    this.commandsApplied = state.commandsApplied;
    this.config = state.config;
  }
}

/** Same rule as the core: an invalid change is a no-op on every node alike. */
function configAfter(config: ClusterConfig, e: Entry): ClusterConfig {
  try {
    return applyConfigChange(config, decodeConfigChange(e.data));
  } catch (err) {
    if (err instanceof ConfigChangeError) return config;
    throw err;
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The snapshot byte stream: a JSON header line, then `padding` filler bytes that
 * stand in for the bulk of a real state machine (so streams span several chunks).
 */
export function encodeState(state: SimState, padding: number): Uint8Array {
  const head = encoder.encode(`${JSON.stringify(state)}\n`);
  const out = new Uint8Array(head.length + padding);
  out.set(head);
  for (let i = 0; i < padding; i++) out[head.length + i] = (state.digest + i * 31) & 0xff;
  return out;
}

export function decodeState(bytes: Uint8Array): SimState {
  const end = bytes.indexOf(0x0a);
  if (end < 0) throw new SnapshotFormatError('snapshot stream has no header line');
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(bytes.subarray(0, end)));
  } catch {
    throw new SnapshotFormatError('snapshot header is not JSON');
  }
  const s = parsed as Partial<SimState> | null;
  const count = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  const ids = (a: unknown): a is string[] => Array.isArray(a) && a.every((x) => typeof x === 'string');
  if (s === null || typeof s !== 'object' || !count(s.applied) || !count(s.digest) || !count(s.commandsApplied)) {
    throw new SnapshotFormatError('snapshot header lacks applied/digest/commandsApplied');
  }
  if (s.config === undefined || !ids(s.config.voters) || !ids(s.config.learners)) throw new SnapshotFormatError('snapshot header lacks a config');
  return { applied: s.applied, digest: s.digest, commandsApplied: s.commandsApplied, config: { voters: [...s.config.voters], learners: [...s.config.learners] } };
}

export function sameConfig(a: ClusterConfig, b: ClusterConfig): boolean {
  return sameIds(a.voters, b.voters) && sameIds(a.learners, b.learners);
}

function sameIds(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}
