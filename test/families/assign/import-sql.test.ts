// Importing a Tokenserver database from a SQL dump of INSERT statements (mysqldump, or
// pg_dump --inserts): the parser on its own (quotes, escapes, NULL, column lists or the
// schema's order, statements cut anywhere between chunks, other tables and statements
// passed over, malformed input refused with where it is), then on a real server: the
// rows imported with their uids and every user resolving as in the dump, and a malformed
// dump refused before anything changes.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AssignClient } from '../../../src/families/assign/client.js';
import { assignMember } from './assign-member.js';
import { InsertParser, MAX_TOKEN_CHARS, SqlLexer, sqlDump, type SqlDialect } from '../../../src/families/assign/import-sql.js';

const member = assignMember('vera-import-sql-');

/** The rows of `sql` fed `chunk` characters at a time. */
function parse(sql: string, chunk = sql.length, dialect: SqlDialect | null = null): Array<[string, Record<string, string | null>]> {
  const lexer = new SqlLexer(dialect);
  const parser = new InsertParser(new Set(['services', 'nodes', 'users']), 'dump', () => lexer.dialect);
  const rows: Array<[string, Record<string, string | null>]> = [];
  for (let i = 0; i < sql.length; i += chunk) rows.push(...parser.feed(lexer.push(sql.slice(i, i + chunk))));
  rows.push(...parser.feed(lexer.push('', true)));
  parser.end();
  return rows;
}

const MYSQL = `-- MySQL dump 10.13  Distrib 8.0.36
/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
DROP TABLE IF EXISTS \`nodes\`;
CREATE TABLE \`nodes\` (
  \`id\` bigint NOT NULL AUTO_INCREMENT,
  \`node\` varchar(64) NOT NULL DEFAULT 'x;y',
  PRIMARY KEY (\`id\`)
) ENGINE=InnoDB;
LOCK TABLES \`nodes\` WRITE;
INSERT INTO \`nodes\` VALUES (10,1,'https://a.example.com',5,999,1000,0,0),(11,1,'https://b.example.com',0,0,1000,1,NULL);
UNLOCK TABLES;
INSERT INTO \`other\` VALUES (NOW(), DEFAULT, 'skipped; entirely');
INSERT INTO \`services\` VALUES (1,'sync-1.5','{node}/1.5/{uid}'),(2,'sync-1.1',NULL);
# a MySQL comment
INSERT IGNORE INTO \`tokenserver\`.\`users\` VALUES (1001,1,'o\\'brien@example.com',5,'aa',1600000000000,NULL,10,NULL),
(1002,1,'back\\\\slash@example.com',-0,'',1600000000001,1600000000002,11,3),(1003,1,'it''s \\"quoted\\"\\n@example.com',1.5e3,'bb',1,0,10,7);
`;

describe('the SQL dump parser', () => {
  it('reads MySQL INSERTs: escapes, doubled quotes, NULL, schema order, qualified names; passes over other tables and statements', () => {
    const rows = parse(MYSQL);
    expect(rows.map(([t]) => t)).toEqual(['nodes', 'nodes', 'services', 'services', 'users', 'users', 'users']);
    expect(rows[1]![1]).toEqual({ id: '11', service: '1', node: 'https://b.example.com', available: '0', current_load: '0', capacity: '1000', downed: '1', backoff: null });
    expect(rows[3]![1]).toEqual({ id: '2', service: 'sync-1.1', pattern: null });
    expect(rows[4]![1]).toMatchObject({ uid: '1001', email: "o'brien@example.com", replaced_at: null, keys_changed_at: null, nodeid: '10' });
    expect(rows[5]![1]).toMatchObject({ email: 'back\\slash@example.com', client_state: '', generation: '-0' });
    expect(rows[6]![1]).toMatchObject({ email: 'it\'s "quoted"\n@example.com', generation: '1.5e3' });
  });

  it('gives the same rows whatever the chunks (a statement, a string, an escape or a number cut anywhere)', () => {
    const whole = parse(MYSQL);
    for (const chunk of [1, 2, 3, 7, 64]) expect(parse(MYSQL, chunk), `chunks of ${chunk}`).toEqual(whole);
  });

  it('reads pg_dump --inserts: column lists in any order, backslashes as they are, E strings with escapes', () => {
    const pg = `--
-- PostgreSQL database dump
--
SET standard_conforming_strings = on;
INSERT INTO public.services (service, id, pattern) VALUES ('sync-1.5', 1, '{node}/1.5/{uid}');
INSERT INTO public.users ("uid", service, email, generation, client_state, created_at, replaced_at, nodeid, keys_changed_at) VALUES (7, 1, 'a\\b@example.com', 1, 'aa', 2, NULL, 10, NULL);
INSERT INTO public.users VALUES (8, 1, E'c\\'d@example.com', 1, '', 2, NULL, 10, 4);
`;
    for (const chunk of [pg.length, 1, 5]) {
      const rows = parse(pg, chunk);
      expect(rows[0]).toEqual(['services', { service: 'sync-1.5', id: '1', pattern: '{node}/1.5/{uid}' }]);
      expect(rows[1]![1]).toMatchObject({ uid: '7', email: 'a\\b@example.com', keys_changed_at: null });
      expect(rows[2]![1]).toMatchObject({ uid: '8', email: "c'd@example.com", keys_changed_at: '4' });
    }
  });

  it('refuses malformed input, saying where', () => {
    expect(() => parse("INSERT INTO users VALUES (1,1,'open")).toThrow(/line 1: a string that never ends/);
    expect(() => parse('INSERT INTO services VALUES (1,\'s\');')).toThrow(/dump line 1: a row of services with 2 values for 3 columns/);
    expect(() => parse("INSERT INTO services VALUES\n(1,'s',NOW());")).toThrow(/dump line 2: expected a string, a number or NULL.*found "NOW"/);
    expect(() => parse("INSERT INTO services VALUES (1,'s','p')")).toThrow(/the dump ends inside an INSERT into services/);
    expect(() => parse("INSERT INTO services VALUES (1,'s','p') (2,'t','q');")).toThrow(/expected ',' or ';' after a row/);
    expect(() => parse('INSERT INTO services (id, VALUES (1);')).toThrow(/expected ',' or '\)' in the column list/);
    expect(() => parse('/* never closed')).toThrow(/a comment that never ends/);
  });

  it('refuses a string that never ends once it passes the token bound, without reading on to the end', () => {
    const lexer = new SqlLexer('mysql');
    lexer.push("INSERT INTO users VALUES (1,1,'");
    const chunk = 'x'.repeat(64 * 1024);
    let pushed = 0;
    expect(() => {
      for (; pushed < 100; pushed++) lexer.push(chunk);
    }).toThrow(/line 1: a token longer than 1048576 characters/);
    // It stopped at the chunk that took the cut-off string past the bound, not at the end of the input.
    expect((pushed + 1) * chunk.length).toBeGreaterThan(MAX_TOKEN_CHARS - chunk.length);
    expect(pushed * chunk.length).toBeLessThanOrEqual(MAX_TOKEN_CHARS);
  });
});

const T0 = 1_600_000_000_000;

/** A mysqldump-style dump: the nodes table first (by name), then services, then 300 users in extended INSERTs of 40 rows. */
function writeSqlDump(bad?: { at: number; row: string }): string {
  const dir = member.dir();
  const file = join(dir, bad === undefined ? 'dump.sql' : 'bad.sql');
  const lines = [
    '-- MySQL dump 10.13',
    'INSERT INTO `nodes` VALUES (10,1,\'https://a.example.com\',5,999,1000,0,0),(11,1,\'https://b.example.com\',0,0,1000,0,NULL);',
    "INSERT INTO `services` VALUES (1,'sync-1.5','{node}/1.5/{uid}');",
  ];
  const rows: string[] = [];
  let uid = 2000;
  for (let i = 0; i < 300; i++) {
    uid += 1 + (i % 2);
    const email = i % 10 === 0 ? `o\\'neil.${i}@example.com` : i % 10 === 1 ? `back\\\\slash.${i}@example.com` : `u${i}@example.com`;
    const node = i % 3 === 0 ? 11 : 10;
    if (i % 4 === 0) {
      rows.push(`(${uid},1,'${email}',1,'aa',${T0 + i},${T0 + i + 9},${node},NULL)`);
      uid++;
      rows.push(`(${uid},1,'${email}',2,'bb',${T0 + i + 9},NULL,${node},2)`);
    } else {
      rows.push(`(${uid},1,'${email}',${i},${i % 7 === 0 ? "''" : "'cc'"},${T0 + i},NULL,${node},${i % 5 === 0 ? 'NULL' : i})`);
    }
    if (bad !== undefined && i === bad.at) rows.push(bad.row);
  }
  for (let k = 0; k < rows.length; k += 40) lines.push(`INSERT INTO \`users\` VALUES ${rows.slice(k, k + 40).join(',\n')};`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

const start = (): Promise<AssignClient> => member.start();
const run = (...argv: string[]): ReturnType<typeof member.cli> => member.cli('import', ...argv);

describe('vera assign import --sql', () => {
  it('imports the three tables with their uids, in bounded batches, and every user resolves as in the dump', async () => {
    const assign = await start();
    const file = writeSqlDump();
    let rows = 0;
    for await (const _ of sqlDump(file)()) rows++;
    expect(rows).toBe(3 + 300 + 75);
    const r = await run('--sql', file, '--batch', '100', '--json');
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ services: 1, nodes: 2, imported: 375, present: 0, batches: 4, checked: 300, mismatched: 0 });
    // Escapes and NULLs as the dump meant them.
    const quoted = await assign.lookup('sync-1.5', "o'neil.0@example.com");
    expect(quoted.current).toMatchObject({ uid: 2002, generation: 2, clientState: 'bb', keysChangedAt: 2, replacedAt: 0, node: 'https://b.example.com' });
    expect(quoted.records[1]).toMatchObject({ uid: 2001, keysChangedAt: 0, replacedAt: T0 + 9 });
    expect((await assign.lookup('sync-1.5', 'back\\slash.1@example.com')).current).toMatchObject({ keysChangedAt: 1, node: 'https://a.example.com' });
    const nodes = await assign.nodes('sync-1.5');
    expect(nodes.map((n) => n.load).reduce((a, b) => a + b)).toBe(300);
    expect(nodes.find((n) => n.node === 'https://b.example.com')).toMatchObject({ backoff: 0, downed: false });
    // Again: nothing new, every record already there.
    expect(JSON.parse((await run('--sql', file, '--json')).out)).toMatchObject({ imported: 0, present: 375, mismatched: 0 });
  }, 60_000);

  it('refuses a malformed dump with where it is, before anything changes', async () => {
    const assign = await start();
    // A bad row late in the dump (after most users' batches would have gone), then a bad value the server would refuse.
    const late = await run('--sql', writeSqlDump({ at: 280, row: "(9999,1,'late@example.com',1,'aa',1,NULL,10)" }), '--batch', '10');
    expect(late.code).toBe(1);
    expect(late.err).toMatch(/bad\.sql line \d+: a row of users with 8 values for 9 columns/);
    const refused = await run('--sql', writeSqlDump({ at: 250, row: "(9999,1,'late@example.com',1,'not hex!',1,NULL,10,NULL)" }), '--batch', '10');
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/bad\.sql users row \d+: clientState must be/);
    const unknownNode = await run('--sql', writeSqlDump({ at: 200, row: "(9999,1,'late@example.com',1,'aa',1,NULL,12,NULL)" }), '--batch', '10');
    expect(unknownNode.err).toMatch(/node 12 is not a node of sync-1.5/);
    expect(await assign.services()).toEqual([]);
    expect((await run('--sql', 'x.sql', '--users', 'u.csv')).code).toBe(2);
    expect((await run('--sql', 'x.sql', '--dialect', 'oracle')).code).toBe(2);
  }, 60_000);
});
