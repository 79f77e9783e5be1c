// Reading Tokenserver's tables from a SQL dump (mysqldump, or pg_dump --inserts): the
// rows of `INSERT INTO table [(columns)] VALUES (...), (...);` statements, streamed a
// chunk at a time (a dump of a million users is never held in memory, nor is one
// statement, which mysqldump makes megabytes long). Everything else (CREATE TABLE, SET,
// LOCK, COPY-less pg_dump preamble, comments) is passed over. Strings are '...' with ''
// for a quote, and in MySQL's dialect backslash escapes (\', \\, \n, \0, ...); NULL is
// a null. An INSERT without a column list takes the table's columns in the order of
// Tokenserver's schema (seed 001, syncstorage-rs's migrations).
import { createReadStream } from 'node:fs';
import type { DumpRow, DumpTable } from './import-dump.js';

/** Tokenserver's columns in table order: what an INSERT without a column list fills. */
export const TOKENSERVER_COLUMNS: Readonly<Record<DumpTable, readonly string[]>> = {
  services: ['id', 'service', 'pattern'],
  nodes: ['id', 'service', 'node', 'available', 'current_load', 'capacity', 'downed', 'backoff'],
  users: ['uid', 'service', 'email', 'generation', 'client_state', 'created_at', 'replaced_at', 'nodeid', 'keys_changed_at'],
};

/** 'mysql': backslash escapes in strings, "..." is a string. 'postgres': standard strings (E'...' escapes), "..." an identifier. */
export type SqlDialect = 'mysql' | 'postgres';

export class SqlDumpError extends Error {}

type Token =
  | { readonly kind: 'word'; readonly text: string; readonly line: number }
  | { readonly kind: 'ident'; readonly text: string; readonly line: number }
  | { readonly kind: 'string'; readonly text: string; readonly line: number }
  | { readonly kind: 'dquoted'; readonly text: string; readonly line: number }
  | { readonly kind: 'number'; readonly text: string; readonly line: number }
  | { readonly kind: 'punct'; readonly text: string; readonly line: number };

/**
 * The most text a token cut between chunks may carry into the next one: far above any value of the
 * three tables, so a string, name or comment that never ends is refused here rather than read
 * (and rescanned) to the end of a large file.
 */
export const MAX_TOKEN_CHARS = 1024 * 1024;
const WORD_START = /[A-Za-z_]/;
const WORD = /[A-Za-z0-9_$]/;
const MYSQL_ESCAPES: Readonly<Record<string, string>> = { '0': '\u0000', b: '\b', n: '\n', r: '\r', t: '\t', Z: '\u001a', '%': '\\%', _: '\\_' };

/**
 * Splits SQL text into tokens as it arrives. A token cut by the end of a chunk is kept
 * until the next one completes it; comments and white space are dropped.
 */
export class SqlLexer {
  private buf = '';
  private line = 1;
  /** Null until the dump says which it is (its header comments do); MySQL's rules until then. */
  dialect: SqlDialect | null;

  constructor(dialect: SqlDialect | null = null) {
    this.dialect = dialect;
  }

  push(chunk: string, last = false): Token[] {
    this.buf += chunk;
    const out: Token[] = [];
    let i = 0;
    const b = this.buf;
    const need = (): boolean => !last; // more input may complete what is cut off
    scan: while (i < b.length) {
      const c = b[i]!;
      if (c === '\n') {
        this.line++;
        i++;
        continue;
      }
      if (c === ' ' || c === '\t' || c === '\r') {
        i++;
        continue;
      }
      const start = i;
      const line = this.line;
      if (c === '#' || (c === '-' && b[i + 1] === '-')) {
        const end = b.indexOf('\n', i);
        if (end < 0) {
          if (need()) break;
          this.sniff(b.slice(i));
          i = b.length;
          continue;
        }
        this.sniff(b.slice(i, end));
        i = end;
        continue;
      }
      if (c === '-' && b[i + 1] === undefined && need()) break;
      if (c === '/' && b[i + 1] === '*') {
        const end = b.indexOf('*/', i + 2);
        if (end < 0) {
          if (need()) break;
          throw new SqlDumpError(`line ${line}: a comment that never ends`);
        }
        this.sniff(b.slice(i, end));
        this.line += countLines(b, i, end);
        i = end + 2;
        continue;
      }
      if (c === '/' && b[i + 1] === undefined && need()) break;
      if (c === "'" || ((c === 'E' || c === 'e') && b[i + 1] === "'" && this.dialect === 'postgres')) {
        const escapes = c !== "'" || this.dialect !== 'postgres';
        const r = readQuoted(b, c === "'" ? i : i + 1, "'", escapes, last);
        if (r === null) {
          if (need()) break;
          throw new SqlDumpError(`line ${line}: a string that never ends`);
        }
        out.push({ kind: 'string', text: r.text, line });
        this.line += countLines(b, i, r.end);
        i = r.end;
        continue;
      }
      if (c === '`' || c === '"') {
        const r = readQuoted(b, i, c, c === '"' && this.dialect !== 'postgres', last);
        if (r === null) {
          if (need()) break;
          throw new SqlDumpError(`line ${line}: a quoted name that never ends`);
        }
        out.push({ kind: c === '`' ? 'ident' : 'dquoted', text: r.text, line });
        if (c === '`' && this.dialect === null) this.dialect = 'mysql';
        this.line += countLines(b, i, r.end);
        i = r.end;
        continue;
      }
      const numeric = /[0-9]/.test(c) || ((c === '-' || c === '+' || c === '.') && /[0-9]/.test(b[i + 1] ?? ''));
      if (numeric || WORD_START.test(c)) {
        let j = i + 1;
        while (j < b.length) {
          const d = b[j]!;
          if (numeric ? /[0-9.]/.test(d) : WORD.test(d)) j++;
          else if (numeric && (d === 'e' || d === 'E') && /[0-9+-]/.test(b[j + 1] ?? '')) j += 2;
          else if (numeric && (d === 'e' || d === 'E') && j + 1 >= b.length && need()) break scan;
          else break;
        }
        if (j >= b.length && need()) break scan;
        out.push({ kind: numeric ? 'number' : 'word', text: b.slice(start, j), line });
        i = j;
        continue;
      }
      out.push({ kind: 'punct', text: c, line });
      i++;
    }
    this.buf = b.slice(i);
    if (this.buf.length > MAX_TOKEN_CHARS) throw new SqlDumpError(`line ${this.line}: a token longer than ${MAX_TOKEN_CHARS} characters (a string, name or comment that never ends?)`);
    return out;
  }

  /** A dump's header names its maker: pg_dump's strings have no backslash escapes. */
  private sniff(comment: string): void {
    if (this.dialect !== null) return;
    if (/PostgreSQL|pg_dump/i.test(comment)) this.dialect = 'postgres';
    else if (/MySQL|MariaDB/i.test(comment)) this.dialect = 'mysql';
  }
}

function countLines(b: string, from: number, to: number): number {
  let n = 0;
  for (let k = b.indexOf('\n', from); k >= 0 && k < to; k = b.indexOf('\n', k + 1)) n++;
  return n;
}

/** The text of a quoted token starting at `at` (the quote), and where it ends; null when it does not end in `b`. */
function readQuoted(b: string, at: number, quote: string, escapes: boolean, last: boolean): { text: string; end: number } | null {
  let text = '';
  let i = at + 1;
  for (;;) {
    const q = b.indexOf(quote, i);
    const bs = escapes ? b.indexOf('\\', i) : -1;
    if (bs >= 0 && (q < 0 || bs < q)) {
      if (bs + 1 >= b.length) return null;
      const e = b[bs + 1]!;
      text += b.slice(i, bs) + (MYSQL_ESCAPES[e] ?? e);
      i = bs + 2;
      continue;
    }
    if (q < 0) return null;
    text += b.slice(i, q);
    if (q + 1 >= b.length && !last) return null; // a doubled quote may follow in the next chunk
    if (b[q + 1] === quote) {
      text += quote;
      i = q + 2;
      continue;
    }
    return { text, end: q + 1 };
  }
}

const INSERT_MODIFIERS = new Set(['IGNORE', 'LOW_PRIORITY', 'DELAYED', 'HIGH_PRIORITY']);

/**
 * Reads the INSERT statements' rows, token by token: each row of a wanted table as a map
 * from column names (lower case) to its values' text, null for NULL. A statement that is
 * not an INSERT, or inserts into another table, is passed over to its `;`.
 */
export class InsertParser {
  private state: 'start' | 'skip' | 'insert' | 'table' | 'tableDot' | 'columns' | 'columnsNext' | 'values' | 'tuple' | 'value' | 'valueNext' | 'afterTuple' = 'start';
  private table = '';
  private columns: string[] = [];
  private values: Array<string | null> = [];

  constructor(
    private readonly wanted: ReadonlySet<string>,
    private readonly where: string,
    private readonly dialect: () => SqlDialect | null,
  ) {}

  private fail(t: Token | null, what: string): never {
    throw new SqlDumpError(`${this.where}${t === null ? '' : ` line ${t.line}`}: ${what}${t === null ? '' : `, found ${JSON.stringify(t.text)}`}`);
  }

  /** Rows completed by these tokens, as [table, row]. */
  feed(tokens: readonly Token[]): Array<[string, Record<string, string | null>]> {
    const rows: Array<[string, Record<string, string | null>]> = [];
    for (const t of tokens) {
      const word = t.kind === 'word' ? t.text.toUpperCase() : null;
      switch (this.state) {
        case 'start':
          if (t.kind === 'punct' && t.text === ';') break;
          this.state = word === 'INSERT' ? 'insert' : 'skip';
          break;
        case 'skip':
          if (t.kind === 'punct' && t.text === ';') this.state = 'start';
          break;
        case 'insert':
          if (word !== null && INSERT_MODIFIERS.has(word)) break;
          if (word === 'INTO') break;
          this.state = 'table';
          this.tableName(t);
          break;
        case 'table':
          if (t.kind === 'punct' && t.text === '.') this.state = 'tableDot';
          else if (t.kind === 'punct' && t.text === '(') {
            this.columns = [];
            this.state = 'columns';
          } else if (word === 'VALUES' || word === 'VALUE') this.startValues();
          else this.fail(t, 'expected a column list or VALUES after the table name');
          break;
        case 'tableDot':
          this.tableName(t);
          this.state = 'table';
          break;
        case 'columns':
          if (t.kind === 'word' || t.kind === 'ident' || t.kind === 'dquoted') {
            this.columns.push(t.text.toLowerCase());
            this.state = 'columnsNext';
          } else this.fail(t, 'expected a column name');
          break;
        case 'columnsNext':
          if (t.kind === 'punct' && t.text === ',') this.state = 'columns';
          else if (t.kind === 'punct' && t.text === ')') this.state = 'table';
          else this.fail(t, "expected ',' or ')' in the column list");
          break;
        case 'values':
          if (t.kind === 'punct' && t.text === '(') {
            this.values = [];
            this.state = 'value';
          } else this.fail(t, "expected '(' to start a row");
          break;
        case 'value':
          this.values.push(this.valueOf(t));
          this.state = 'valueNext';
          break;
        case 'valueNext':
          if (t.kind === 'punct' && t.text === ',') this.state = 'value';
          else if (t.kind === 'punct' && t.text === ')') {
            rows.push([this.table, this.row(t)]);
            this.state = 'afterTuple';
          } else this.fail(t, "expected ',' or ')' after a value");
          break;
        case 'afterTuple':
          if (t.kind === 'punct' && t.text === ',') this.state = 'values';
          else if (t.kind === 'punct' && t.text === ';') this.state = 'start';
          else if (word === 'ON') this.state = 'skip'; // ON DUPLICATE KEY / ON CONFLICT: the rows are what count
          else this.fail(t, "expected ',' or ';' after a row");
          break;
      }
    }
    return rows;
  }

  /** At the end of the dump: an INSERT cut off is an error (a truncated dump). */
  end(): void {
    if (this.state !== 'start' && this.state !== 'skip') this.fail(null, `the dump ends inside an INSERT into ${this.table || '?'}`);
  }

  private tableName(t: Token): void {
    if (t.kind !== 'word' && t.kind !== 'ident' && t.kind !== 'dquoted') this.fail(t, 'expected a table name');
    // Schema-qualified (public.users, `db`.`users`): the last part names the table.
    this.table = t.text.toLowerCase();
    this.columns = [];
  }

  private startValues(): void {
    // Another table's rows are passed over whole: they may hold values these tables never do.
    if (!this.wanted.has(this.table)) {
      this.state = 'skip';
      return;
    }
    if (this.columns.length === 0) this.columns = [...TOKENSERVER_COLUMNS[this.table as DumpTable]];
    this.state = 'values';
  }

  private valueOf(t: Token): string | null {
    if (t.kind === 'string') return t.text;
    if (t.kind === 'number') return t.text;
    if (t.kind === 'dquoted' && this.dialect() !== 'postgres') return t.text;
    const word = t.kind === 'word' ? t.text.toUpperCase() : '';
    if (word === 'NULL') return null;
    if (word === 'TRUE') return '1';
    if (word === 'FALSE') return '0';
    return this.fail(t, 'expected a string, a number or NULL (a value Tokenserver\'s tables hold)');
  }

  private row(t: Token): Record<string, string | null> {
    if (this.values.length !== this.columns.length) this.fail(t, `a row of ${this.table} with ${this.values.length} values for ${this.columns.length} columns`);
    return Object.fromEntries(this.columns.map((c, k) => [c, this.values[k]!]));
  }
}

/** The rows of the services, nodes and users tables in a SQL dump, in the dump's order. */
export function sqlDump(file: string, dialect: SqlDialect | null = null): () => AsyncIterable<DumpRow> {
  return async function* rows(): AsyncGenerator<DumpRow> {
    const lexer = new SqlLexer(dialect);
    const parser = new InsertParser(new Set(['services', 'nodes', 'users']), file, () => lexer.dialect);
    let n = 0;
    const emit = function* (batch: Array<[string, Record<string, string | null>]>): Generator<DumpRow> {
      for (const [table, row] of batch) {
        n++;
        yield { table: table as DumpTable, row, where: `${file} ${table} row ${n}` };
      }
    };
    for await (const chunk of createReadStream(file, { encoding: 'utf8', highWaterMark: 64 * 1024 })) yield* emit(parser.feed(lexer.push(chunk as string)));
    yield* emit(parser.feed(lexer.push('', true)));
    parser.end();
  };
}
