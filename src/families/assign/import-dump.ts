// Importing a Tokenserver database into Vera: its services, nodes and users tables,
// each dumped as CSV with a header row naming the columns (what `mysqldump --tab`,
// `SELECT ... INTO OUTFILE` with a header, or `psql \copy ... CSV HEADER` give).
// Services and nodes become ops; users go in entries of at most `batch` records with
// their uids kept; then every user is looked up and checked against the dump.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { VeraError } from '../../protocol/index.js';
import type { AssignClient, ImportedUser } from './client.js';
import { MAX_BATCH } from './wire.js';

/** One CSV line's fields: commas, double-quoted fields with "" for a quote (no line breaks inside a field). */
export function csvFields(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  for (;;) {
    if (line[i] === '"') {
      let value = '';
      i++;
      for (;;) {
        const q = line.indexOf('"', i);
        if (q < 0) throw new Error(`unterminated quoted field in ${JSON.stringify(line)}`);
        value += line.slice(i, q);
        if (line[q + 1] === '"') {
          value += '"';
          i = q + 2;
          continue;
        }
        i = q + 1;
        break;
      }
      out.push(value);
    } else {
      const comma = line.indexOf(',', i);
      out.push(line.slice(i, comma < 0 ? line.length : comma));
      i = comma < 0 ? line.length : comma;
    }
    if (i >= line.length) return out;
    if (line[i] !== ',') throw new Error(`expected a comma at column ${i} of ${JSON.stringify(line)}`);
    i++;
  }
}

/** Rows of a CSV file as maps from the header's column names, one at a time. */
export async function* csvRows(file: string): AsyncGenerator<Record<string, string>> {
  let header: string[] | null = null;
  let n = 0;
  for await (const raw of createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity })) {
    n++;
    const line = raw.replace(/\r$/, '');
    if (line === '') continue;
    const fields = csvFields(line);
    if (header === null) {
      header = fields.map((f) => f.trim().toLowerCase());
      continue;
    }
    if (fields.length !== header.length) throw new Error(`${file} line ${n}: ${fields.length} fields, the header names ${header.length}`);
    yield Object.fromEntries(header.map((h, k) => [h, fields[k]!]));
  }
}

const isNull = (v: string | undefined): boolean => v === undefined || v === '' || v === 'NULL' || v === '\\N';

function int(row: Record<string, string>, column: string, where: string, nullable = false): number {
  const v = row[column];
  if (isNull(v)) {
    if (nullable) return 0;
    throw new Error(`${where}: ${column} is missing`);
  }
  if (!/^\d+$/.test(v!) || !Number.isSafeInteger(Number(v))) throw new Error(`${where}: ${column} must be a whole number, got ${JSON.stringify(v)}`);
  return Number(v);
}

function text(row: Record<string, string>, column: string, where: string): string {
  const v = row[column];
  if (v === undefined) throw new Error(`${where}: no column ${column}`);
  return v;
}

export interface ImportProgress {
  readonly phase: 'services' | 'nodes' | 'users' | 'check';
  readonly done: number;
  readonly detail: string;
}

export interface ImportReport {
  readonly services: number;
  readonly nodes: number;
  readonly imported: number;
  readonly present: number;
  readonly repaired: number;
  readonly batches: number;
  readonly checked: number;
  /** Users whose current uid or node in Vera is not the dump's: at most 20 listed. */
  readonly mismatches: readonly string[];
  readonly mismatched: number;
}

interface Expected {
  uid: number;
  node: string;
  generation: number;
  createdAt: number;
  current: boolean;
}

/** Newer as Vera orders a user's records: by generation, then creation time, then uid. */
function newer(a: Expected, b: Expected): boolean {
  return a.generation !== b.generation ? a.generation > b.generation : a.createdAt !== b.createdAt ? a.createdAt > b.createdAt : a.uid > b.uid;
}

/**
 * Imports the three tables and checks every user afterwards. Services and nodes that exist
 * already are left as they are (so a run can be repeated); a user record already imported
 * unchanged is passed over.
 */
export async function importDump(
  assign: AssignClient,
  files: { readonly services: string; readonly nodes: string; readonly users: string },
  options: { readonly batch?: number; readonly check?: boolean; readonly onProgress?: (p: ImportProgress) => void } = {},
): Promise<ImportReport> {
  const batchSize = Math.min(Math.max(options.batch ?? MAX_BATCH, 1), MAX_BATCH);
  const services = new Map<string, string>();
  for await (const row of csvRows(files.services)) {
    const where = `${files.services} service ${row.id ?? '?'}`;
    const name = text(row, 'service', where);
    await assign.service(name, { pattern: text(row, 'pattern', where) });
    services.set(String(int(row, 'id', where)), name);
    options.onProgress?.({ phase: 'services', done: services.size, detail: name });
  }
  const nodes = new Map<string, { service: string; node: string }>();
  for await (const row of csvRows(files.nodes)) {
    const where = `${files.nodes} node ${row.id ?? '?'}`;
    const service = services.get(String(int(row, 'service', where)));
    if (service === undefined) throw new Error(`${where}: service ${row.service} is not in ${files.services}`);
    const node = text(row, 'node', where);
    const settings = { capacity: int(row, 'capacity', where), available: int(row, 'available', where), downed: int(row, 'downed', where, true) !== 0, backoff: int(row, 'backoff', where, true) };
    try {
      await assign.addNode(service, node, settings);
    } catch (err) {
      if (!(err instanceof VeraError && err.code === 'CONFLICT')) throw err;
    }
    nodes.set(String(int(row, 'id', where)), { service, node });
    options.onProgress?.({ phase: 'nodes', done: nodes.size, detail: `${service} ${node}` });
  }
  // Users, a batch per service at a time; what each user's newest record is, for the check.
  const expected = new Map<string, Expected>();
  const pending = new Map<string, ImportedUser[]>();
  const totals = { imported: 0, present: 0, repaired: 0, batches: 0, rows: 0 };
  const flush = async (service: string): Promise<void> => {
    const users = pending.get(service) ?? [];
    if (users.length === 0) return;
    pending.set(service, []);
    const r = await assign.importUsers(service, users);
    totals.imported += r.imported;
    totals.present += r.present;
    totals.repaired += r.repaired;
    totals.batches++;
    options.onProgress?.({ phase: 'users', done: totals.rows, detail: `batch ${totals.batches}: ${r.imported} imported, ${r.present} already there${r.repaired > 0 ? `, ${r.repaired} duplicate current records replaced` : ''}` });
  };
  for await (const row of csvRows(files.users)) {
    const where = `${files.users} uid ${row.uid ?? '?'}`;
    const service = services.get(String(int(row, 'service', where)));
    if (service === undefined) throw new Error(`${where}: service ${row.service} is not in ${files.services}`);
    const node = nodes.get(String(int(row, 'nodeid', where)));
    if (node === undefined || node.service !== service) throw new Error(`${where}: node ${row.nodeid} is not a node of ${service} in ${files.nodes}`);
    const user: ImportedUser = {
      uid: int(row, 'uid', where),
      email: text(row, 'email', where),
      generation: int(row, 'generation', where),
      clientState: text(row, 'client_state', where),
      keysChangedAt: int(row, 'keys_changed_at', where, true),
      createdAt: int(row, 'created_at', where),
      replacedAt: int(row, 'replaced_at', where, true),
      node: node.node,
    };
    totals.rows++;
    const id = `${service}\u0000${user.email}`;
    const e: Expected = { uid: user.uid, node: user.node, generation: user.generation, createdAt: user.createdAt, current: user.replacedAt === 0 };
    const known = expected.get(id);
    if (known === undefined || newer(e, known)) expected.set(id, e);
    const list = pending.get(service) ?? [];
    list.push(user);
    pending.set(service, list);
    if (list.length >= batchSize) await flush(service);
  }
  for (const service of pending.keys()) await flush(service);
  const report = { services: services.size, nodes: nodes.size, imported: totals.imported, present: totals.present, repaired: totals.repaired, batches: totals.batches };
  if (options.check === false) return { ...report, checked: 0, mismatches: [], mismatched: 0 };
  return { ...report, ...(await checkImport(assign, expected, options.onProgress)) };
}

/** Every imported user resolves to the dump's newest record: its uid, its node. A few lookups at a time. */
async function checkImport(assign: AssignClient, expected: ReadonlyMap<string, Expected>, onProgress?: (p: ImportProgress) => void): Promise<{ checked: number; mismatches: string[]; mismatched: number }> {
  const entries = [...expected];
  const mismatches: string[] = [];
  let mismatched = 0;
  let checked = 0;
  for (let i = 0; i < entries.length; i += 32) {
    await Promise.all(
      entries.slice(i, i + 32).map(async ([id, e]) => {
        const [service, email] = id.split('\u0000') as [string, string];
        const l = await assign.lookup(service, email);
        const ok = l.current.uid === e.uid && l.current.node === e.node && (l.current.replacedAt === 0) === e.current;
        if (!ok) {
          mismatched++;
          if (mismatches.length < 20) mismatches.push(`${service} ${email}: dump uid ${e.uid} on ${e.node}, Vera uid ${l.current.uid} on ${l.current.node}`);
        }
      }),
    );
    checked = Math.min(i + 32, entries.length);
    onProgress?.({ phase: 'check', done: checked, detail: `${checked}/${entries.length} users checked` });
  }
  return { checked, mismatches, mismatched };
}
