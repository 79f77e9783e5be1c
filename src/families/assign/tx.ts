// What one node-assignment entry changes, staged: user records (read through
// the plan's reads, so entries share a batch) and node records (from memory).
// ops() derives every index write from each record's before and after, and
// derives node load from them too: a record that stops or starts being current
// moves its node's load by one, so load always equals the number of current
// records on the node, whatever the op.
import type { PlanReads } from '../../statemachine/pending-reads.js';
import type { BatchOp } from '../../statemachine/family.js';
import { byNodeKey, emailRange, lookupKey, metaKey, nodeKey, replacedKey, userKey } from './keys.js';
import { decodeUids, decodeUser, encodeMeta, encodeNode, encodeUids, encodeUser, type NodeRecord, type UserRecord } from './records.js';
import type { AssignState, ServiceState } from './state.js';

interface Change {
  readonly before: UserRecord | null;
  after: UserRecord | null;
}

const EMPTY = Buffer.alloc(0);
/** Up to this many services, a user's records in every service are found by point reads. */
const POINT_READ_SERVICES = 32;
const userId = (email: string, service: string): string => `${service}\u0000${email}`;
const nodeId = (service: string, node: string): string => `${service}\u0000${node}`;

export class AssignTx {
  private readonly users = new Map<number, Change>();
  /** Users' lookup entries as stored, by service and email (read before any record of theirs is created or deleted). */
  private readonly lookups = new Map<string, { readonly email: string; readonly service: string; readonly uids: readonly number[] }>();
  private readonly nodes = new Map<string, { service: string; node: string; record: NodeRecord | null }>();
  /** Slots freed by purged records, by node: applied after load (available never passes capacity - load). */
  private readonly freed = new Map<string, number>();
  private nextUid: number;

  constructor(
    private readonly reads: PlanReads,
    private readonly state: AssignState,
  ) {
    this.nextUid = state.nextUid;
  }

  newUid(): number {
    return this.nextUid++;
  }

  /** A uid given from outside (an import): later new uids come after it. */
  keepUid(uid: number): void {
    if (uid >= this.nextUid) this.nextUid = uid + 1;
  }

  async user(uid: number): Promise<UserRecord | null> {
    const staged = this.users.get(uid);
    if (staged !== undefined) return staged.after;
    const raw = await this.reads.get(userKey(uid));
    const user = raw === undefined ? null : decodeUser(raw);
    this.users.set(uid, { before: user, after: user });
    return user;
  }

  /** The uids of a user's records as stored (one point read). */
  private async lookup(email: string, service: string): Promise<readonly number[]> {
    const id = userId(email, service);
    const known = this.lookups.get(id);
    if (known !== undefined) return known.uids;
    const raw = await this.reads.get(lookupKey(email, service));
    const uids = raw === undefined ? [] : decodeUids(raw);
    this.lookups.set(id, { email, service, uids });
    return uids;
  }

  /** Every record of `email` in `service` (or in every service), as stored before this entry changed any. */
  async records(email: string, service: string | null): Promise<UserRecord[]> {
    const services: string[] = [];
    if (service !== null) services.push(service);
    else if (this.state.services.size <= POINT_READ_SERVICES) {
      // A point read per service (services are never removed, so these are all a user can have):
      // cheaper than a range scan, which goes through the thread pool.
      for (const s of [...this.state.services.keys()].sort()) if ((await this.lookup(email, s)).length > 0) services.push(s);
    } else for (const key of await this.reads.keys(emailRange(email))) services.push(serviceOfLookupKey(key, email));
    const out: UserRecord[] = [];
    for (const s of services) {
      for (const uid of await this.lookup(email, s)) {
        const user = await this.user(uid);
        if (user !== null) out.push(user);
      }
    }
    return out;
  }

  /** Every record of `email` in `service` as this entry has left them so far (read its records first). */
  recordsStaged(email: string, service: string): UserRecord[] {
    const out: UserRecord[] = [];
    for (const { after } of this.users.values()) if (after !== null && after.email === email && after.service === service) out.push(after);
    return out;
  }

  /** Stages a new or changed record (a new one's uid from newUid; read the user's records first). */
  put(user: UserRecord): void {
    const staged = this.users.get(user.uid);
    if (staged !== undefined) {
      staged.after = user;
      return;
    }
    if (!this.lookups.has(userId(user.email, user.service))) throw new Error(`assign tx: a new record of ${user.email} before reading its records`);
    this.users.set(user.uid, { before: null, after: user });
  }

  /** Stages a record's deletion (call user(uid) first). */
  async delete(uid: number): Promise<void> {
    const staged = this.users.get(uid);
    if (staged === undefined || staged.before === null) throw new Error(`assign tx: delete(${uid}) before reading it`);
    await this.lookup(staged.before.email, staged.before.service);
    staged.after = null;
  }

  service(name: string): ServiceState | undefined {
    return this.state.services.get(name);
  }

  /** A node's record as this entry has left it so far (load as stored: the entry's record changes add to it in ops()). */
  node(service: string, node: string): NodeRecord | null {
    const staged = this.nodes.get(nodeId(service, node));
    if (staged !== undefined) return staged.record;
    return this.state.services.get(service)?.nodes.get(node) ?? null;
  }

  /** The service's nodes as this entry has left them so far. */
  nodesOf(service: string): Map<string, NodeRecord> {
    const out = new Map(this.state.services.get(service)?.nodes ?? []);
    for (const s of this.nodes.values()) {
      if (s.service !== service) continue;
      if (s.record === null) out.delete(s.node);
      else out.set(s.node, s.record);
    }
    return out;
  }

  setNode(service: string, node: string, record: NodeRecord | null): void {
    this.nodes.set(nodeId(service, node), { service, node, record });
  }

  freeSlot(service: string, node: string): void {
    const id = nodeId(service, node);
    this.freed.set(id, (this.freed.get(id) ?? 0) + 1);
  }

  /** Every write, and the in-memory update to run once they are in the db. */
  commit(): { ops: BatchOp[]; after: () => void } {
    const ops: BatchOp[] = [];
    const loadDelta = new Map<string, number>();
    const move = (u: UserRecord | null, sign: 1 | -1): void => {
      if (u === null || u.replacedAt !== 0) return;
      const id = nodeId(u.service, u.node);
      loadDelta.set(id, (loadDelta.get(id) ?? 0) + sign);
      if (!this.nodes.has(id)) this.nodes.set(id, { service: u.service, node: u.node, record: this.node(u.service, u.node) });
    };
    const lookups = new Map<string, { email: string; service: string; uids: number[] }>();
    const lookupOf = (u: UserRecord): { uids: number[] } => {
      const id = userId(u.email, u.service);
      let l = lookups.get(id);
      if (l === undefined) {
        l = { email: u.email, service: u.service, uids: [...this.lookups.get(id)!.uids] };
        lookups.set(id, l);
      }
      return l;
    };
    for (const [uid, { before, after }] of this.users) {
      if (before === after) continue;
      if (before === null && after !== null) lookupOf(after).uids.push(uid);
      if (before !== null && after === null) {
        const l = lookupOf(before);
        l.uids.splice(l.uids.indexOf(uid), 1);
      }
      move(before, -1);
      move(after, 1);
      const old = indexKeys(before);
      const now = indexKeys(after);
      for (const k of old) if (!now.some((n) => n.equals(k))) ops.push({ type: 'del', key: k });
      for (const k of now) if (!old.some((o) => o.equals(k))) ops.push({ type: 'put', key: k, value: EMPTY });
      ops.push(after === null ? { type: 'del', key: userKey(uid) } : { type: 'put', key: userKey(uid), value: encodeUser(after) });
    }
    for (const { email, service, uids } of lookups.values()) {
      uids.sort((a, b) => a - b);
      ops.push(uids.length === 0 ? { type: 'del', key: lookupKey(email, service) } : { type: 'put', key: lookupKey(email, service), value: encodeUids(uids) });
    }
    for (const id of this.freed.keys()) if (!this.nodes.has(id)) this.nodes.set(id, { ...splitId(id), record: this.node(splitId(id).service, splitId(id).node) });
    const finalNodes: Array<{ service: string; node: string; record: NodeRecord | null }> = [];
    for (const [id, s] of this.nodes) {
      let record = s.record;
      if (record !== null) {
        const load = Math.max(0, record.load + (loadDelta.get(id) ?? 0));
        const freed = this.freed.get(id) ?? 0;
        const available = freed === 0 ? record.available : Math.max(record.available, Math.min(record.available + freed, record.capacity - load));
        record = { ...record, load, available };
        ops.push({ type: 'put', key: nodeKey(s.service, s.node), value: encodeNode(record) });
      } else if (this.state.services.get(s.service)?.nodes.has(s.node) === true) {
        ops.push({ type: 'del', key: nodeKey(s.service, s.node) });
      }
      finalNodes.push({ service: s.service, node: s.node, record });
    }
    const nextUid = this.nextUid;
    if (nextUid !== this.state.nextUid) ops.push({ type: 'put', key: metaKey(), value: encodeMeta(nextUid) });
    const state = this.state;
    return {
      ops,
      after: () => {
        state.nextUid = nextUid;
        for (const { service, node, record } of finalNodes) {
          const s = state.services.get(service);
          if (s === undefined) continue;
          const nodes = s.nodes as Map<string, NodeRecord>;
          if (record === null) nodes.delete(node);
          else nodes.set(node, record);
        }
      },
    };
  }
}

function splitId(id: string): { service: string; node: string } {
  const at = id.indexOf('\u0000');
  return { service: id.slice(0, at), node: id.slice(at + 1) };
}

/** The index entries of a record besides its user's lookup entry: by-node while current, replaced after. */
function indexKeys(u: UserRecord | null): Buffer[] {
  if (u === null) return [];
  return [u.replacedAt === 0 ? byNodeKey(u.service, u.node, u.uid) : replacedKey(u.service, u.replacedAt, u.uid)];
}

/** The service named in one of `email`'s lookup keys. */
function serviceOfLookupKey(key: Buffer, email: string): string {
  const at = 2 + 1 + Buffer.byteLength(email, 'utf8');
  return key.toString('utf8', at + 1, at + 1 + key[at]!);
}
