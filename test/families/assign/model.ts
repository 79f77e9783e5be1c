// A small in-memory model of Tokenserver's user database, written from the
// rules as docs/assignment.md states them and kept deliberately naive: every
// record in one array, "current" found by sorting on each request, node load
// counted from the records rather than kept as a counter. The property test
// runs it beside the family and compares answers and state after every step.

export interface MRecord {
  uid: number;
  service: string;
  email: string;
  generation: number;
  clientState: string;
  keysChangedAt: number;
  createdAt: number;
  replacedAt: number;
  node: string;
}

export interface MNode {
  capacity: number;
  available: number;
  downed: boolean;
  backoff: number;
}

export interface MLoginRequest {
  email: string;
  generation: number;
  keysChangedAt: number;
  clientState: string;
  pick: number;
}

export type MLoginResult =
  | { refused: string }
  | { uid: number; node: string; generation: number; keysChangedAt: number; clientState: string; oldClientStates: string[]; firstSeenAt: number; created: boolean; allocated: boolean };

const MAX_GENERATION = Number.MAX_SAFE_INTEGER;
/** Records one user may have; a login that would add one more is refused. */
const MAX_RECORDS_PER_USER = 100;

export class AssignModel {
  records: MRecord[] = [];
  nodes = new Map<string, MNode>();
  nextUid = 1;

  constructor(
    readonly service: string,
    readonly releaseRate: number,
    readonly topN: number,
  ) {}

  load(node: string): number {
    return this.records.filter((r) => r.node === node && r.replacedAt === 0 && r.service === this.service).length;
  }

  private mine(email: string): MRecord[] {
    return this.records.filter((r) => r.email === email && r.service === this.service);
  }

  private static newest(rs: MRecord[]): MRecord[] {
    return [...rs].sort((a, b) => (a.generation !== b.generation ? b.generation - a.generation : a.createdAt !== b.createdAt ? b.createdAt - a.createdAt : b.uid - a.uid));
  }

  /** The node chosen (available taken) or null; capacity released on the way either way. */
  private allocate(pick: number): string | null {
    for (let round = 0; round < 5; round++) {
      const ok = [...this.nodes].filter(([name, n]) => n.available > 0 && n.capacity > this.load(name) && !n.downed && n.backoff === 0);
      if (ok.length > 0) {
        const ratio = (name: string, n: MNode): number => (this.load(name) === 0 ? -Infinity : Math.log(this.load(name)) / Math.log(n.capacity));
        ok.sort(([a, x], [b, y]) => ratio(a, x) - ratio(b, y) || (a < b ? -1 : 1));
        const [name, n] = ok[pick % Math.min(this.topN, ok.length)]!;
        n.available = Math.max(0, n.available - 1);
        return name;
      }
      let released = false;
      for (const [name, n] of this.nodes) {
        const load = this.load(name);
        if (!n.downed && n.available <= 0 && n.capacity > load) {
          n.available = Math.min(Math.max(1, Math.ceil(n.capacity * this.releaseRate)), n.capacity - load);
          released = true;
        }
      }
      if (!released) return null;
    }
    return null;
  }

  private snapshotNodes(): Map<string, MNode> {
    return new Map([...this.nodes].map(([k, v]) => [k, { ...v }]));
  }

  /** Tokenserver's request checks, in its order (0 = not reported; a comparison with an unreported value passes). */
  static check(req: MLoginRequest, user: MRecord, old: readonly string[]): string | null {
    const gen = req.generation || null;
    const kca = req.keysChangedAt || null;
    const ukca = user.keysChangedAt || null;
    const changed = req.clientState !== user.clientState;
    if (kca !== null && ukca !== null && kca > ukca && gen !== null && gen < kca) return 'invalid-keysChangedAt';
    if (req.clientState === '' && user.clientState !== '') return 'invalid-client-state';
    if (old.includes(req.clientState)) return 'invalid-client-state';
    if (gen !== null && gen <= user.generation && changed) return 'invalid-client-state';
    if (kca !== null && ukca !== null && kca <= ukca && changed) return 'invalid-client-state';
    if (gen !== null && user.generation > gen) return 'invalid-generation';
    if (kca !== null && ukca !== null && ukca > kca) return 'invalid-keysChangedAt';
    if (kca === null && ukca !== null) return 'invalid-keysChangedAt';
    return null;
  }

  login(req: MLoginRequest, now: number): MLoginResult {
    const savedRecords = this.records.map((r) => ({ ...r }));
    const savedNodes = this.snapshotNodes();
    const savedUid = this.nextUid;
    const rollback = (refused: string): MLoginResult => {
      this.records = savedRecords;
      this.nodes = savedNodes;
      this.nextUid = savedUid;
      return { refused };
    };
    let created = false;
    let allocated = false;
    if (this.mine(req.email).length === 0) {
      const node = this.allocate(req.pick);
      if (node === null) return { refused: 'no-node-available' }; // released capacity stays; nothing else changed
      this.records.push({ uid: this.nextUid++, service: this.service, email: req.email, generation: req.generation, clientState: req.clientState, keysChangedAt: req.keysChangedAt, createdAt: now, replacedAt: 0, node });
      created = allocated = true;
    } else {
      const current = AssignModel.newest(this.mine(req.email))[0]!;
      if (current.generation >= MAX_GENERATION) {
        const sorted = AssignModel.newest(this.mine(req.email));
        const old: string[] = [];
        for (const r of sorted.slice(1)) if (r.clientState !== current.clientState && !old.includes(r.clientState)) old.push(r.clientState);
        return rollback(AssignModel.check(req, current, old) ?? 'invalid-generation');
      }
      if (current.replacedAt !== 0 || !this.nodes.has(current.node)) {
        if (this.mine(req.email).length >= MAX_RECORDS_PER_USER) return rollback('too-many-records');
        const node = this.allocate(req.pick);
        if (node === null) return { refused: 'no-node-available' }; // released capacity stays; nothing else changed
        if (current.replacedAt === 0) current.replacedAt = now;
        this.records.push({ ...current, uid: this.nextUid++, createdAt: now, replacedAt: 0, node });
        allocated = true;
      }
    }
    const sorted = AssignModel.newest(this.mine(req.email));
    const user = sorted[0]!;
    const old: string[] = [];
    for (const r of sorted.slice(1)) if (r.clientState !== user.clientState && !old.includes(r.clientState)) old.push(r.clientState);
    const refused = AssignModel.check(req, user, old);
    if (refused !== null) return rollback(refused);
    const changed = req.clientState !== user.clientState;
    if (changed && this.mine(req.email).length >= MAX_RECORDS_PER_USER) return rollback('too-many-records');
    const newKca = Math.max(req.keysChangedAt, user.keysChangedAt);
    const newGen = req.generation !== 0 ? Math.max(req.generation, user.generation) : req.keysChangedAt > user.keysChangedAt ? Math.max(req.keysChangedAt, user.generation) : user.generation;
    let result = user;
    let oldStates = old;
    if (changed) {
      for (const r of sorted) if (r.replacedAt === 0) r.replacedAt = now;
      result = { ...user, uid: this.nextUid++, generation: newGen, keysChangedAt: newKca, clientState: req.clientState, createdAt: now, replacedAt: 0 };
      this.records.push(result);
      oldStates = [user.clientState, ...old.filter((s) => s !== user.clientState && s !== req.clientState)];
    } else {
      user.generation = newGen;
      user.keysChangedAt = newKca;
    }
    const firstSeenAt = Math.min(...this.mine(req.email).map((r) => r.createdAt));
    return { uid: result.uid, node: result.node, generation: result.generation, keysChangedAt: result.keysChangedAt, clientState: result.clientState, oldClientStates: oldStates, firstSeenAt, created, allocated };
  }

  retire(email: string, now: number): number {
    const rs = this.mine(email);
    if (rs.length === 0) return 0;
    const [current, ...others] = AssignModel.newest(rs);
    current!.generation = MAX_GENERATION;
    if (current!.replacedAt === 0) current!.replacedAt = now;
    for (const r of others) if (r.replacedAt === 0) r.replacedAt = now;
    return 1;
  }

  /** Replaces up to `max` current records on the node, lowest uid first. */
  decommission(node: string, max: number, now: number): { replaced: number; more: boolean } | 'NOT_FOUND' {
    if (!this.nodes.has(node)) return 'NOT_FOUND';
    const on = this.records.filter((r) => r.node === node && r.replacedAt === 0).sort((a, b) => a.uid - b.uid);
    const taken = on.slice(0, max);
    for (const r of taken) r.replacedAt = now;
    return { replaced: taken.length, more: taken.length === max };
  }

  passwordChange(email: string, generation: number): number {
    const rs = this.mine(email);
    if (rs.length === 0) return 0;
    const current = AssignModel.newest(rs)[0]!;
    if (current.generation >= generation - 1) return 0;
    current.generation = generation - 1;
    return 1;
  }

  purge(uids: number[], before: number, force: boolean): { purged: number[]; skipped: number } {
    const purged: number[] = [];
    let skipped = 0;
    for (const uid of uids) {
      const r = this.records.find((x) => x.uid === uid);
      if (r === undefined || r.replacedAt === 0 || r.replacedAt >= before) continue;
      const node = this.nodes.get(r.node);
      if (node?.downed === true && !force) {
        skipped++;
        continue;
      }
      this.records = this.records.filter((x) => x.uid !== uid);
      purged.push(uid);
      if (node !== undefined) node.available = Math.max(node.available, Math.min(node.available + 1, node.capacity - this.load(r.node)));
    }
    return { purged, skipped };
  }
}
