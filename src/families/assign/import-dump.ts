// Importing a Tokenserver database into Vera: its services, nodes and users tables,
// each dumped as CSV with a header row naming the columns (what `mysqldump --tab`,
// `SELECT ... INTO OUTFILE` with a header, or `psql \copy ... CSV HEADER` give), or
// all three in a SQL dump of INSERT statements (import-sql.ts). The dump is checked
// whole first; then services and nodes become ops, users go in entries of at most
// `batch` records with their uids kept, and every user is looked up and checked.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { VeraError } from '../../protocol/index.js';
import type { AssignClient, ImportedUser } from './client.js';
import { ASSIGN_OPS, MAX_BATCH, MAX_RECORDS_PER_USER } from './wire.js';

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

/** One of Tokenserver's three tables. */
export type DumpTable = 'services' | 'nodes' | 'users';

/** A row of a dump: each column's text (lower-case names), null for a SQL NULL. */
export interface DumpRow {
  readonly table: DumpTable;
  readonly row: Readonly<Record<string, string | null>>;
  /** Where it is, for error messages. */
  readonly where: string;
}

/** Reads a dump from the start, each time it is called (an import reads it twice: to check it, then to import it). */
export type DumpReader = () => AsyncIterable<DumpRow>;

/** The three tables as CSV files with headers: services, then nodes, then users. */
export function csvDump(files: { readonly services: string; readonly nodes: string; readonly users: string }): DumpReader {
  return async function* rows(): AsyncGenerator<DumpRow> {
    for (const table of ['services', 'nodes', 'users'] as const) {
      for await (const row of csvRows(files[table])) yield { table, row, where: `${files[table]} ${table === 'users' ? `uid ${row.uid ?? '?'}` : `${table.slice(0, -1)} ${row.id ?? '?'}`}` };
    }
  };
}

/** In a CSV export NULL may be empty, NULL or \N; in a SQL dump it is null. */
const isNull = (v: string | null | undefined): boolean => v === undefined || v === null || v === '' || v === 'NULL' || v === '\\N';

type Row = Readonly<Record<string, string | null>>;

function int(row: Row, column: string, where: string, nullable = false): number {
  const v = row[column];
  if (isNull(v)) {
    if (nullable) return 0;
    throw new Error(`${where}: ${column} is missing`);
  }
  if (!/^\d+$/.test(v!) || !Number.isSafeInteger(Number(v))) throw new Error(`${where}: ${column} must be a whole number, got ${JSON.stringify(v)}`);
  return Number(v);
}

/** A text column; a NULL is '' where the column may be empty (a client state), else an error. */
function text(row: Row, column: string, where: string, nullable = false): string {
  const v = row[column];
  if (v === undefined) throw new Error(`${where}: no column ${column}`);
  if (v === null) {
    if (nullable) return '';
    throw new Error(`${where}: ${column} is NULL`);
  }
  return v;
}

export interface ImportProgress {
  readonly phase: 'read' | 'services' | 'nodes' | 'users' | 'check';
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
  records: number;
}

/** Newer as Vera orders a user's records: by generation, then creation time, then uid. */
function newer(a: Expected, b: Expected): boolean {
  return a.generation !== b.generation ? a.generation > b.generation : a.createdAt !== b.createdAt ? a.createdAt > b.createdAt : a.uid > b.uid;
}

interface DumpNode {
  readonly service: string;
  readonly node: string;
  readonly settings: { capacity: number; available: number; downed: boolean; backoff: number };
}

/** What a first pass over the dump finds: every row checked, the services and nodes, and each user's newest record. */
interface Scan {
  readonly services: Map<string, { name: string; pattern: string | null }>;
  readonly nodes: Map<string, DumpNode>;
  readonly expected: Map<string, Expected>;
  readonly users: number;
}

/** The wire's own checks, so a row the server would refuse is found before anything is imported. */
function checkRequest(op: string, fields: Readonly<Record<string, unknown>>, where: string): void {
  try {
    ASSIGN_OPS.get(op)!(fields, 0, undefined as never);
  } catch (err) {
    throw new Error(`${where}: ${(err as Error).message}`);
  }
}

function userOf(row: Row, where: string, scan: Pick<Scan, 'services' | 'nodes'>): { service: string; user: ImportedUser } {
  const service = scan.services.get(String(int(row, 'service', where)))?.name;
  if (service === undefined) throw new Error(`${where}: service ${row.service} is not among the services before it`);
  const node = scan.nodes.get(String(int(row, 'nodeid', where)));
  if (node === undefined || node.service !== service) throw new Error(`${where}: node ${row.nodeid} is not a node of ${service} among the nodes before it`);
  return {
    service,
    user: {
      uid: int(row, 'uid', where),
      email: text(row, 'email', where),
      generation: int(row, 'generation', where),
      clientState: text(row, 'client_state', where, true),
      keysChangedAt: int(row, 'keys_changed_at', where, true),
      createdAt: int(row, 'created_at', where),
      replacedAt: int(row, 'replaced_at', where, true),
      node: node.node,
    },
  };
}

/** Every row read and checked, nothing sent: a malformed dump is refused before anything changes. */
async function scanDump(read: DumpReader, onProgress?: (p: ImportProgress) => void): Promise<Scan> {
  const scan: Scan = { services: new Map(), nodes: new Map(), expected: new Map(), users: 0 };
  const pendingNodes: Array<{ row: Row; where: string }> = [];
  let users = 0;
  for await (const { table, row, where } of read()) {
    if (table === 'services') {
      const name = text(row, 'service', where);
      const pattern = row.pattern === undefined ? null : row.pattern;
      checkRequest('assign.service', { service: name, ...(pattern === null ? {} : { pattern }) }, where);
      scan.services.set(String(int(row, 'id', where)), { name, pattern });
    } else if (table === 'nodes') {
      pendingNodes.push({ row, where });
    } else {
      // Nodes may come before their services (mysqldump writes the tables by name); users come last.
      for (const n of pendingNodes.splice(0)) resolveNode(n.row, n.where, scan);
      const { service, user } = userOf(row, where, scan);
      checkRequest('assign.importUsers', { service, users: [user] }, where);
      const id = `${service}\u0000${user.email}`;
      const e: Expected = { uid: user.uid, node: user.node, generation: user.generation, createdAt: user.createdAt, current: user.replacedAt === 0, records: 1 };
      const known = scan.expected.get(id);
      if (known !== undefined) e.records = known.records + 1;
      if (e.records > MAX_RECORDS_PER_USER) throw new Error(`${where}: ${user.email} has more than ${MAX_RECORDS_PER_USER} records in ${service}, the most Vera keeps for one user; purge its replaced records first`);
      scan.expected.set(id, known === undefined || newer(e, known) ? e : { ...known, records: e.records });
      users++;
      if (users % 100_000 === 0) onProgress?.({ phase: 'read', done: users, detail: `${users} user rows read and checked` });
    }
  }
  for (const n of pendingNodes) resolveNode(n.row, n.where, scan);
  return { ...scan, users };
}

function resolveNode(row: Row, where: string, scan: Scan): void {
  const service = scan.services.get(String(int(row, 'service', where)))?.name;
  if (service === undefined) throw new Error(`${where}: service ${row.service} is not among the services`);
  const node = text(row, 'node', where);
  const settings = { capacity: int(row, 'capacity', where), available: int(row, 'available', where), downed: int(row, 'downed', where, true) !== 0, backoff: int(row, 'backoff', where, true) };
  checkRequest('assign.addNode', { service, node, ...settings }, where);
  scan.nodes.set(String(int(row, 'id', where)), { service, node, settings });
}

/**
 * Imports the three tables and checks every user afterwards. The dump is read twice: first
 * every row is checked (a malformed dump is refused before anything is sent), then the
 * services and nodes are made and the users sent in entries of at most `batch` records.
 * Services and nodes that exist already are left as they are (so a run can be repeated);
 * a user record already imported unchanged is passed over.
 */
export async function importTables(
  assign: AssignClient,
  read: DumpReader,
  options: { readonly batch?: number; readonly check?: boolean; readonly onProgress?: (p: ImportProgress) => void } = {},
): Promise<ImportReport> {
  const batchSize = Math.min(Math.max(options.batch ?? MAX_BATCH, 1), MAX_BATCH);
  let scan: Scan;
  try {
    scan = await scanDump(read, options.onProgress);
  } catch (err) {
    // The dump itself is wrong (or unreadable): refused before anything was sent.
    if (err instanceof VeraError) throw err;
    throw new VeraError('BAD_REQUEST', `${(err as Error).message}; nothing was imported`);
  }
  let done = 0;
  for (const { name, pattern } of scan.services.values()) {
    await assign.service(name, pattern === null ? {} : { pattern });
    options.onProgress?.({ phase: 'services', done: ++done, detail: name });
  }
  done = 0;
  for (const { service, node, settings } of scan.nodes.values()) {
    try {
      await assign.addNode(service, node, settings);
    } catch (err) {
      if (!(err instanceof VeraError && err.code === 'CONFLICT')) throw err;
    }
    options.onProgress?.({ phase: 'nodes', done: ++done, detail: `${service} ${node}` });
  }
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
  for await (const { table, row, where } of read()) {
    if (table !== 'users') continue;
    const { service, user } = userOf(row, where, scan);
    totals.rows++;
    const list = pending.get(service) ?? [];
    list.push(user);
    pending.set(service, list);
    if (list.length >= batchSize) await flush(service);
  }
  for (const service of pending.keys()) await flush(service);
  const report = { services: scan.services.size, nodes: scan.nodes.size, imported: totals.imported, present: totals.present, repaired: totals.repaired, batches: totals.batches };
  if (options.check === false) return { ...report, checked: 0, mismatches: [], mismatched: 0 };
  return { ...report, ...(await checkImport(assign, scan.expected, options.onProgress)) };
}

/** The three tables as CSV files (importTables over csvDump). */
export function importDump(
  assign: AssignClient,
  files: { readonly services: string; readonly nodes: string; readonly users: string },
  options: { readonly batch?: number; readonly check?: boolean; readonly onProgress?: (p: ImportProgress) => void } = {},
): Promise<ImportReport> {
  return importTables(assign, csvDump(files), options);
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
