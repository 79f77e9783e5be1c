// The cluster family: values the whole cluster agrees on about itself. For now
// the active command version (see versions.ts), raised by the leader once every
// voter supports it and never lowered.
import { bucketPrefix } from '../../keys/index.js';
import { pack, unpack } from '../../statemachine/codec.js';
import { CorruptValueError } from '../../statemachine/codec.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot, Family, Plan, PlanContext } from '../../statemachine/family.js';
import { integerField } from '../fields.js';

/** The first bucket above seed 003's: the cluster family's. */
export const CLUSTER_BUCKET = 0x0008;
const ACTIVE_VERSION_KEY = Buffer.concat([bucketPrefix(CLUSTER_BUCKET), Buffer.from('commandVersion', 'utf8')]);

export interface SetCommandVersionCommand {
  readonly op: 'setCommandVersion';
  readonly version: number;
}

export class ClusterState {
  /** The command version the cluster may use (1 until raised). */
  active = 1;

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<ClusterState> {
    const state = new ClusterState();
    const raw = await db.get(ACTIVE_VERSION_KEY, { snapshot });
    if (raw !== undefined) {
      const v = unpack(raw);
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) throw new CorruptValueError('the active command version is not a positive integer');
      state.active = v;
    }
    return state;
  }
}

function setCommandVersion(c: SetCommandVersionCommand, { states }: PlanContext): Plan {
  const state = states.of(cluster);
  // Never lowered: a late or repeated proposal of an older version changes nothing.
  if (c.version <= state.active) return { result: { ok: true, op: 'noop' }, ops: [], events: [], after: [] };
  return {
    result: { ok: true, op: 'noop' },
    ops: [{ type: 'put', key: ACTIVE_VERSION_KEY, value: pack(c.version) }],
    events: [],
    after: [() => (state.active = c.version)],
  };
}

export const cluster: Family<SetCommandVersionCommand, ClusterState> = {
  name: 'cluster',
  since: 1,
  buckets: [{ id: CLUSTER_BUCKET, name: 'cluster' }],
  ops: {
    setCommandVersion: { fields: ['version'], since: 1, decode: (c) => ({ op: 'setCommandVersion', version: integerField(c.version, 'version', 1, 2 ** 31) }) },
  },
  load: (db, snapshot) => ClusterState.load(db, snapshot),
  plan: setCommandVersion,
  goesAlone: () => false,
  plugin: async () => (await import('./server.js')).plugin,
};
