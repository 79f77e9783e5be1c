// Node assignment's in-memory index: every service's settings and its nodes'
// records (a few hundred bytes per node, bounded by MAX_SERVICES and
// MAX_NODES_PER_SERVICE), and the next uid. Allocation plans from it without
// reading LevelDB; user records stay in the db.
import { bucketRange } from '../../keys/index.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../../statemachine/family.js';
import { AssignBucket, eventTimeParts, eventTimesBefore, metaKey, nodeKeyParts, serviceOfKey } from './keys.js';
import { decodePurgeJob, purgeJobRange, serviceOfPurgeJobKey, type PurgeJob } from './purge-job.js';
import { decodeMeta, decodeNode, decodeService, type NodeRecord, type ServiceSettings } from './records.js';

export interface ServiceState {
  readonly settings: ServiceSettings;
  /** By node URL. */
  readonly nodes: ReadonlyMap<string, NodeRecord>;
}

export class AssignState {
  readonly services = new Map<string, ServiceState>();
  nextUid = 1;
  /** The time of the oldest applied event id still remembered (null: none), so an event entry scans the ids only when some are past the retention. */
  oldestEventAt: number | null = null;
  /** Each service's latest purge job (running or ended), by service: a few hundred bytes each, at most one per service. */
  readonly purgeJobs = new Map<string, PurgeJob>();

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<AssignState> {
    const state = new AssignState();
    for await (const [key, value] of db.iterator({ ...bucketRange(AssignBucket.service), snapshot })) {
      state.services.set(serviceOfKey(key), { settings: decodeService(value), nodes: new Map() });
    }
    for await (const [key, value] of db.iterator({ ...bucketRange(AssignBucket.node), snapshot })) {
      const { service, node } = nodeKeyParts(key);
      const s = state.services.get(service);
      if (s !== undefined) (s.nodes as Map<string, NodeRecord>).set(node, decodeNode(value));
    }
    for await (const [key, value] of db.iterator({ ...purgeJobRange(), snapshot })) state.purgeJobs.set(serviceOfPurgeJobKey(key), decodePurgeJob(value));
    for await (const key of db.keys({ ...eventTimesBefore(Number.MAX_SAFE_INTEGER), snapshot, limit: 1 })) state.oldestEventAt = eventTimeParts(key).at;
    const meta = await db.get(metaKey(), { snapshot });
    if (meta !== undefined) state.nextUid = decodeMeta(meta);
    return state;
  }
}
