// Seed 001's schema on PostgreSQL 15 and Tokenserver's get-or-create, with the
// queries syncstorage-rs's tokenserver-db runs (restated from its MySQL
// statements: get_users, get_best_node with its release loop, add_user_to_node,
// post_user, put_user), except that allocation is one transaction, as the issue
// asks, where Tokenserver runs its statements one by one.
//
// Where PostgreSQL differs from MySQL: MySQL's LOG(0) is NULL and sorts first,
// PostgreSQL's LN(0) is an error, so the order is LN(NULLIF(load, 0)) /
// NULLIF(LN(capacity), 0) with NULLS FIRST: an empty node (or a capacity of 1)
// comes first, as on MySQL, and as in Vera (docs/assignment.md).
import pg from 'pg';
import type { Counters, LoginValues, NodeSpec } from './system.js';

export const SCHEMA = `
CREATE TABLE services (
  id SERIAL PRIMARY KEY,
  service VARCHAR(30) UNIQUE,
  pattern VARCHAR(128)
);
CREATE TABLE nodes (
  id BIGSERIAL PRIMARY KEY,
  service INTEGER NOT NULL REFERENCES services(id),
  node VARCHAR(64) NOT NULL,
  available INTEGER NOT NULL,
  current_load INTEGER NOT NULL,
  capacity INTEGER NOT NULL,
  downed INTEGER NOT NULL DEFAULT 0,
  backoff INTEGER NOT NULL DEFAULT 0,
  UNIQUE (service, node)
);
CREATE TABLE users (
  uid BIGSERIAL PRIMARY KEY,
  service INTEGER NOT NULL REFERENCES services(id),
  email VARCHAR(255) NOT NULL,
  generation BIGINT NOT NULL,
  client_state VARCHAR(32) NOT NULL,
  created_at BIGINT NOT NULL,
  replaced_at BIGINT,
  nodeid BIGINT NOT NULL REFERENCES nodes(id),
  keys_changed_at BIGINT
);
CREATE INDEX lookup_idx ON users (email, service, created_at);
CREATE INDEX replaced_at_idx ON users (service, replaced_at);
CREATE INDEX node_idx ON users (nodeid);
`;

const GET_USERS = `
  SELECT uid, nodes.node, generation, keys_changed_at, client_state, created_at, replaced_at
    FROM users LEFT OUTER JOIN nodes ON users.nodeid = nodes.id
   WHERE email = $1 AND users.service = $2
ORDER BY created_at DESC, uid DESC
   LIMIT 20`;
const GET_BEST_NODE = `
  SELECT id, node FROM nodes
   WHERE service = $1 AND available > 0 AND capacity > current_load AND downed = 0 AND backoff = 0
ORDER BY LN(NULLIF(current_load, 0)) / NULLIF(LN(capacity), 0) NULLS FIRST
   LIMIT 1`;
const RELEASE_CAPACITY = `
  UPDATE nodes SET available = LEAST(capacity * $1::float8, capacity - current_load)
   WHERE service = $2 AND available <= 0 AND capacity > current_load AND downed = 0`;
const ADD_USER_TO_NODE = `
  UPDATE nodes SET current_load = current_load + 1, available = GREATEST(available - 1, 0)
   WHERE service = $1 AND node = $2`;
const POST_USER = `
  INSERT INTO users (service, email, generation, client_state, created_at, nodeid, keys_changed_at, replaced_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, NULL) RETURNING uid`;
const PUT_USER = `
  UPDATE users SET generation = $1, keys_changed_at = $2
   WHERE service = $3 AND email = $4 AND generation <= $1
     AND COALESCE(keys_changed_at, 0) <= COALESCE($2, keys_changed_at, 0) AND replaced_at IS NULL`;

export class TokenserverPg {
  private serviceId = 0;
  private releaseRate = 0.1;

  constructor(readonly pool: pg.Pool) {}

  /** Another pool on the same database, for the service this one set up. */
  withPool(pool: pg.Pool): TokenserverPg {
    const other = new TokenserverPg(pool);
    other.serviceId = this.serviceId;
    other.releaseRate = this.releaseRate;
    return other;
  }

  async setup(service: string, releaseRate: number, nodes: readonly NodeSpec[]): Promise<void> {
    await this.pool.query(SCHEMA);
    this.serviceId = (await this.pool.query<{ id: number }>('INSERT INTO services (service, pattern) VALUES ($1, $2) RETURNING id', [service, '{node}/1.5/{uid}'])).rows[0]!.id;
    this.releaseRate = releaseRate;
    for (const n of nodes) await this.addNode(n);
  }

  async addNode(n: NodeSpec): Promise<void> {
    await this.pool.query('INSERT INTO nodes (service, node, available, current_load, capacity) VALUES ($1, $2, $3, 0, $4)', [this.serviceId, n.node, n.available, n.capacity]);
  }

  /**
   * Tokenserver's get_or_create_user followed by its update: a new email gets a node and a
   * record (one transaction); a known one is read, and written only if generation or
   * keys-changed-at move forward. (Key changes and moves are not in A1's mix.)
   */
  async login(email: string, v: LoginValues): Promise<{ uid: number; node: string }> {
    const users = await this.pool.query<{ uid: string; node: string; generation: string; keys_changed_at: string | null; replaced_at: string | null }>(GET_USERS, [email, this.serviceId]);
    const current = users.rows[0];
    if (current !== undefined && current.replaced_at === null) {
      if (v.generation > Number(current.generation) || v.keysChangedAt > Number(current.keys_changed_at ?? 0)) {
        await this.pool.query(PUT_USER, [Math.max(v.generation, Number(current.generation)), v.keysChangedAt, this.serviceId, email]);
      }
      return { uid: Number(current.uid), node: current.node };
    }
    return this.allocate(email, v);
  }

  private async allocate(email: string, v: LoginValues): Promise<{ uid: number; node: string }> {
    const c = await this.pool.connect();
    try {
      await c.query('BEGIN');
      let best: { id: string; node: string } | undefined;
      for (let round = 0; round < 5 && best === undefined; round++) {
        best = (await c.query<{ id: string; node: string }>(GET_BEST_NODE, [this.serviceId])).rows[0];
        if (best === undefined && (await c.query(RELEASE_CAPACITY, [this.releaseRate, this.serviceId])).rowCount === 0) break;
      }
      if (best === undefined) throw new Error('unable to get a node');
      await c.query(ADD_USER_TO_NODE, [this.serviceId, best.node]);
      const uid = (await c.query<{ uid: string }>(POST_USER, [this.serviceId, email, v.generation, v.clientState, Date.now(), best.id, v.keysChangedAt])).rows[0]!.uid;
      await c.query('COMMIT');
      return { uid: Number(uid), node: best.node };
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  }

  /**
   * process_account_events for a password change or reset: the user's records read, then its
   * current record's generation moved up to the event's - 1 (never back), as update_user does.
   */
  async passwordChange(email: string, generation: number): Promise<void> {
    const users = await this.pool.query<{ uid: string; replaced_at: string | null }>(GET_USERS, [email, this.serviceId]);
    if (users.rows.length === 0) return;
    await this.pool.query('UPDATE users SET generation = $1 WHERE service = $2 AND email = $3 AND generation < $1 AND replaced_at IS NULL', [generation - 1, this.serviceId, email]);
  }

  /** Users current on `node` in one statement (the drain scenario's full node), its load counter with them. */
  async bulkUsers(node: string, emails: readonly string[], v: LoginValues): Promise<void> {
    const id = (await this.pool.query<{ id: string }>('SELECT id FROM nodes WHERE service = $1 AND node = $2', [this.serviceId, node])).rows[0]!.id;
    for (let k = 0; k < emails.length; k += 10_000) {
      const batch = emails.slice(k, k + 10_000);
      await this.pool.query(
        `INSERT INTO users (service, email, generation, client_state, created_at, nodeid, keys_changed_at, replaced_at)
         SELECT $1, e, $2, $3, $4, $5, $6, NULL FROM unnest($7::text[]) AS e`,
        [this.serviceId, v.generation, v.clientState, Date.now(), id, v.keysChangedAt, batch],
      );
      await this.pool.query('UPDATE nodes SET current_load = current_load + $1 WHERE id = $2', [batch.length, id]);
    }
  }

  /**
   * One step of a gradual unassign_node: the node backed off (no new users), then up to `batch`
   * of its current records replaced and its load counter lowered, in one transaction.
   */
  async drainStep(node: string, batch: number): Promise<{ replaced: number; finished: boolean }> {
    const c = await this.pool.connect();
    try {
      await c.query('BEGIN');
      const id = (await c.query<{ id: string }>('UPDATE nodes SET backoff = 1 WHERE service = $1 AND node = $2 RETURNING id', [this.serviceId, node])).rows[0]!.id;
      const r = await c.query('UPDATE users SET replaced_at = $1 WHERE uid IN (SELECT uid FROM users WHERE nodeid = $2 AND replaced_at IS NULL LIMIT $3)', [Date.now(), id, batch]);
      const replaced = r.rowCount ?? 0;
      await c.query('UPDATE nodes SET current_load = GREATEST(current_load - $1, 0) WHERE id = $2', [replaced, id]);
      await c.query('COMMIT');
      return { replaced, finished: replaced < batch };
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  }

  async counters(): Promise<Counters> {
    const perNode = await this.pool.query<{ load: number; records: string }>(
      `SELECT n.current_load AS load, COUNT(u.uid) AS records
         FROM nodes n LEFT JOIN users u ON u.nodeid = n.id AND u.replaced_at IS NULL
        WHERE n.service = $1 GROUP BY n.id`,
      [this.serviceId],
    );
    const duplicates = await this.pool.query<{ n: string }>(
      'SELECT COUNT(*) AS n FROM (SELECT email FROM users WHERE service = $1 AND replaced_at IS NULL GROUP BY email HAVING COUNT(*) > 1) d',
      [this.serviceId],
    );
    return {
      load: perNode.rows.reduce((s, r) => s + r.load, 0),
      currentRecords: perNode.rows.reduce((s, r) => s + Number(r.records), 0),
      nodesOff: perNode.rows.filter((r) => r.load !== Number(r.records)).length,
      duplicates: Number(duplicates.rows[0]!.n),
    };
  }
}
