// Node assignment on a real state machine over a real LevelDB, driven entry by
// entry with an explicit replicated clock: what every member does with its entries.
import { pack } from 'msgpackr';
import { bucketRange } from '../../../src/keys/index.js';
import type { AssignValue } from '../../../src/families/assign/apply.js';
import type { AssignCommand } from '../../../src/families/assign/commands.js';
import { assign, ASSIGN_SINCE, TOKENSERVER_CHECKS_SINCE } from '../../../src/families/assign/index.js';
import { AssignBucket, lookupKey } from '../../../src/families/assign/keys.js';
import { decodeUids, decodeUser, type NodeRecord, type UserRecord } from '../../../src/families/assign/records.js';
import { encodeCommand } from '../../../src/families/commands.js';
import { StateMachine } from '../../../src/statemachine/state-machine.js';
import type { ApplyResult } from '../../../src/statemachine/types.js';
import { openTempDb, type TempDb } from '../../statemachine/helpers.js';
import { REGISTRY } from '../../../src/families/registry.js';

export const SERVICE = 'sync-1.5';
export const DEFAULTS = { pattern: '{node}/1.5/{uid}', releaseRate: 0.1, newUsers: true, topN: 1 };

type Login = Extract<AssignValue, { op: 'login'; user: unknown }>;
type Refused = Extract<AssignValue, { op: 'login'; refused: unknown }>;

export class AssignHarness {
  private index = 0;
  now = 1_700_000_000_000;

  private constructor(
    readonly temp: TempDb,
    readonly sm: StateMachine,
  ) {}

  /** A state machine whose cluster runs `version` (default: Tokenserver's checks, TOKENSERVER_CHECKS_SINCE). */
  static async open(version = TOKENSERVER_CHECKS_SINCE): Promise<AssignHarness> {
    const temp = await openTempDb();
    const h = new AssignHarness(temp, await StateMachine.open(temp.db, REGISTRY));
    if (version > 1) {
      const data = encodeCommand({ family: 'cluster', op: 'setCommandVersion', version } as never, h.now);
      await h.sm.apply({ index: ++h.index, term: 1, kind: 'command', data });
    }
    return h;
  }

  async run(command: AssignCommand): Promise<ApplyResult> {
    const data = encodeCommand({ family: 'assign', ...command } as never, this.now);
    return (await this.sm.apply({ index: ++this.index, term: 1, kind: 'command', data })).result;
  }

  /** Applies an entry with these fields as they are, unchecked (what a misbehaving leader could write). */
  async runRaw(fields: Readonly<Record<string, unknown>>): Promise<ApplyResult> {
    const data = pack({ v: ASSIGN_SINCE, family: 'assign', t: this.now, ...fields });
    return (await this.sm.apply({ index: ++this.index, term: 1, kind: 'command', data })).result;
  }

  async ok(command: AssignCommand): Promise<AssignValue> {
    const result = await this.run(command);
    if (!result.ok) throw new Error(`${command.op} failed: ${result.code} ${result.message}`);
    if (result.op !== 'family') throw new Error(`${command.op} gave ${result.op}`);
    return result.value as AssignValue;
  }

  async service(settings: Partial<typeof DEFAULTS> = {}, service = SERVICE): Promise<void> {
    await this.ok({ op: 'service', service, settings: { ...DEFAULTS, ...settings } });
  }

  async addNode(node: string, capacity: number, extra: { available?: number; downed?: boolean; backoff?: number } = {}, service = SERVICE): Promise<void> {
    await this.ok({ op: 'addNode', service, node, capacity, available: extra.available ?? capacity, downed: extra.downed ?? false, backoff: extra.backoff ?? 0 });
  }

  /** A login that must be accepted. */
  async login(email: string, req: { generation?: number; keysChangedAt?: number; clientState?: string } = {}, pick = 0, service = SERVICE): Promise<Login> {
    const v = await this.ok({ op: 'login', service, email, generation: req.generation ?? 0, keysChangedAt: req.keysChangedAt ?? 0, clientState: req.clientState ?? '', pick });
    if (v.op !== 'login' || 'refused' in v) throw new Error(`login of ${email} refused: ${JSON.stringify(v)}`);
    return v;
  }

  /** A login that must be refused; its reason. */
  async refused(email: string, req: { generation?: number; keysChangedAt?: number; clientState?: string } = {}, service = SERVICE): Promise<Refused> {
    const v = await this.ok({ op: 'login', service, email, generation: req.generation ?? 0, keysChangedAt: req.keysChangedAt ?? 0, clientState: req.clientState ?? '', pick: 0 });
    if (v.op !== 'login' || !('refused' in v)) throw new Error(`login of ${email} was accepted: ${JSON.stringify(v)}`);
    return v;
  }

  node(name: string, service = SERVICE): NodeRecord | undefined {
    return this.sm.stateOf(assign).services.get(service)?.nodes.get(name);
  }

  async users(): Promise<UserRecord[]> {
    const out: UserRecord[] = [];
    for await (const value of this.temp.db.values(bucketRange(AssignBucket.user))) out.push(decodeUser(value));
    return out;
  }

  async keys(bucket: number): Promise<string[]> {
    const out: string[] = [];
    for await (const key of this.temp.db.keys(bucketRange(bucket))) out.push(key.toString('hex'));
    return out;
  }

  /** The checker's invariants: each node's load is its current records; no email has two current records per service. */
  async checkInvariants(): Promise<void> {
    const users = await this.users();
    const current = new Map<string, number>();
    const perEmail = new Set<string>();
    for (const u of users) {
      if (u.replacedAt !== 0) continue;
      const id = `${u.service} ${u.node}`;
      current.set(id, (current.get(id) ?? 0) + 1);
      const who = `${u.service} ${u.email}`;
      if (perEmail.has(who)) throw new Error(`${who} has two current records`);
      perEmail.add(who);
    }
    for (const [service, s] of this.sm.stateOf(assign).services) {
      for (const [node, n] of s.nodes) {
        const expected = current.get(`${service} ${node}`) ?? 0;
        if (n.load !== expected) throw new Error(`${service} ${node}: load ${n.load}, current records ${expected}`);
        current.delete(`${service} ${node}`);
      }
    }
    if (current.size > 0) throw new Error(`current records on nodes that do not exist: ${[...current.keys()].join(', ')}`);
    // Each user's lookup entry lists exactly its records' uids, ascending.
    const expected = new Map<string, number[]>();
    for (const u of [...users].sort((a, b) => a.uid - b.uid)) {
      const id = lookupKey(u.email, u.service).toString('hex');
      expected.set(id, [...(expected.get(id) ?? []), u.uid]);
    }
    const stored = new Map<string, number[]>();
    for await (const [key, value] of this.temp.db.iterator(bucketRange(AssignBucket.lookup))) stored.set(key.toString('hex'), decodeUids(value));
    if (JSON.stringify([...stored].sort()) !== JSON.stringify([...expected].sort())) {
      throw new Error(`lookup entries ${JSON.stringify([...stored])} do not list the records ${JSON.stringify([...expected])}`);
    }
  }

  close(): Promise<void> {
    return this.temp.cleanup();
  }
}
