// Every ```ts block of docs/client.md (and of docs/getting-started.md, which shows
// the library in one block) type-checks against the source, so the client reference
// cannot drift from the code. Each block becomes a .ts file in a
// temporary directory inside the project, and the TypeScript compiler runs once
// over all of them with the project's compiler options (a tsconfig.json there
// extends the project's):
// - an ordinary block is the body of `export async function example()`, after a
//   preamble that declares `client` (VeraClient), `kv`, `leases`, `journals`,
//   `assign`, `hibernate`, `auth`, `audit` and `observe` (the family clients),
//   and imports connect, VeraError and the recipes (docs/client.md says so);
// - a block marked ```ts standalone compiles on its own: its imports of the
//   package's entry points ('vera', 'vera/kv', ...) are pointed at the source
//   files that package.json's "exports" name (dist/X.d.ts -> src/X.ts).
// A failure names each error by its line in docs/client.md.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const DOC = 'docs/client.md';
/** Fewer checked blocks than this means the extraction broke (or the reference lost most of its examples). */
const MIN_BLOCKS = 80;
/** Pages whose ts blocks are checked too, by the same rules. */
const OTHER_DOCS = ['docs/getting-started.md'];

interface Block {
  readonly doc: string;
  /** 1-based line in DOC of the block's first line of code. */
  readonly line: number;
  readonly standalone: boolean;
  readonly code: string;
}

/** The ```ts blocks of a Markdown text (fences may be indented, as in list items). */
function tsBlocks(markdown: string, doc = DOC): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  let open: { readonly fence: string; readonly indent: number; readonly info: string; readonly line: number; readonly body: string[] } | null = null;
  for (const [i, text] of lines.entries()) {
    if (open === null) {
      const m = /^( *)(`{3,}|~{3,})(.*)$/.exec(text);
      if (m !== null) open = { fence: m[2]!, indent: m[1]!.length, info: m[3]!.trim(), line: i + 2, body: [] };
      continue;
    }
    const trimmed = text.trim();
    if (trimmed.startsWith(open.fence) && new RegExp(`^\\${open.fence[0]}+$`).test(trimmed)) {
      const [lang, ...flags] = open.info.split(/\s+/);
      if (lang === 'ts' || lang === 'typescript') {
        const unknown = flags.filter((f) => f !== 'standalone');
        if (unknown.length > 0) throw new Error(`${doc}:${open.line - 1}: unknown flag(s) ${unknown.join(' ')} on a ts block (only "standalone" is known)`);
        const indent = open.indent;
        blocks.push({ doc, line: open.line, standalone: flags.includes('standalone'), code: open.body.map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length))).join('\n') });
      }
      open = null;
      continue;
    }
    open.body.push(text);
  }
  if (open !== null) throw new Error(`${doc}:${open.line - 1}: a code block is never closed`);
  return blocks;
}

/** 'vera' and 'vera/<name>' -> the source file (project-relative, .js as NodeNext imports spell it) its "types" come from. */
function packageEntries(): Map<string, string> {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; exports: Record<string, string | { types?: string }> };
  const entries = new Map<string, string>();
  for (const [key, target] of Object.entries(pkg.exports)) {
    const types = typeof target === 'string' ? undefined : target.types;
    const m = types === undefined ? null : /^\.\/dist\/(.+)\.d\.ts$/.exec(types);
    if (m === null) continue; // no declarations (vera/browser, package.json): nothing a ts block can import
    entries.set(key === '.' ? pkg.name : `${pkg.name}/${key.slice(2)}`, `src/${m[1]}.js`);
  }
  return entries;
}

const work = (() => {
  const cache = join(ROOT, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  return mkdtempSync(join(cache, 'vera-doc-examples-'));
})();
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A project file as a relative import specifier from the work directory. */
const from = (projectFile: string): string => relative(work, join(ROOT, projectFile)).split(sep).join('/');

const PREAMBLE = [
  `import { connect, VeraClient, VeraError } from '${from('src/client/index.js')}';`,
  `import { discover, LeaderElection, Mutex, register, servicePath } from '${from('src/client/recipes/index.js')}';`,
  `import { KvClient } from '${from('src/families/kv/client.js')}';`,
  `import { LeaseClient } from '${from('src/families/lease/client.js')}';`,
  `import { JournalClient } from '${from('src/families/journal/client.js')}';`,
  `import { AssignClient } from '${from('src/families/assign/client.js')}';`,
  `import { HibernateClient } from '${from('src/families/hibernate/client.js')}';`,
  `import { AuthClient } from '${from('src/families/auth/client.js')}';`,
  `import { AuditClient } from '${from('src/families/audit/client.js')}';`,
  `import { ObserveClient } from '${from('src/families/observe/client.js')}';`,
  `import { RangeClient } from '${from('src/families/range/client.js')}';`,
  'declare const client: VeraClient;',
  'declare const kv: KvClient;',
  'declare const leases: LeaseClient;',
  'declare const journals: JournalClient;',
  'declare const assign: AssignClient;',
  'declare const hibernate: HibernateClient;',
  'declare const auth: AuthClient;',
  'declare const audit: AuditClient;',
  'declare const observe: ObserveClient;',
  'export async function example(): Promise<void> {',
];

const SPECIFIER = /(\bfrom\s*|\bimport\s*\(?\s*)(['"])([^'"]+)\2/g;

/** The block's code with the package's entry points pointed at the source; throws on an entry point the package lacks. */
function standalone(block: Block, entries: Map<string, string>): string {
  return block.code.replace(SPECIFIER, (whole, lead: string, quote: string, spec: string) => {
    if (spec !== 'vera' && !spec.startsWith('vera/')) return whole;
    const file = entries.get(spec);
    if (file === undefined) throw new Error(`${block.doc}:${block.line}: imports '${spec}', which package.json's "exports" does not offer with types (${[...entries.keys()].join(', ')})`);
    return `${lead}${quote}${from(file)}${quote}`;
  });
}

describe(DOC, () => {
  it('has only examples that type-check against the source', () => {
    const blocks = tsBlocks(readFileSync(join(ROOT, DOC), 'utf8'));
    expect(blocks.length, `${DOC} should hold at least ${MIN_BLOCKS} ts blocks`).toBeGreaterThanOrEqual(MIN_BLOCKS);
    for (const doc of OTHER_DOCS) {
      const more = tsBlocks(readFileSync(join(ROOT, doc), 'utf8'), doc);
      expect(more.length, `${doc} should hold a ts block`).toBeGreaterThan(0);
      blocks.push(...more);
    }

    const entries = packageEntries();
    /** Generated file -> its block and how many lines precede the block's first line. */
    const generated = new Map<string, { readonly block: Block; readonly offset: number }>();
    writeFileSync(join(work, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    for (const [n, block] of blocks.entries()) {
      const file = join(work, `example-${String(n + 1).padStart(3, '0')}-${block.doc.replace(/^docs\/|\.md$/g, '')}-line-${block.line}.ts`);
      const text = block.standalone ? `${standalone(block, entries)}\nexport {};\n` : `${PREAMBLE.join('\n')}\n${block.code}\n}\n`;
      writeFileSync(file, text);
      generated.set(file, { block, offset: block.standalone ? 0 : PREAMBLE.length });
    }
    const configPath = join(work, 'tsconfig.json');
    writeFileSync(configPath, JSON.stringify({
      extends: from('tsconfig.json'),
      compilerOptions: { noEmit: true, sourceMap: false },
      include: [],
      files: [...generated.keys()].map((f) => relative(work, f)),
    }, null, 2));

    const config = ts.readConfigFile(configPath, (p) => ts.sys.readFile(p));
    if (config.error !== undefined) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, '\n'));
    const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, dirname(configPath), undefined, configPath);
    expect(parsed.fileNames.map((f) => resolve(f)).sort()).toEqual([...generated.keys()].sort());
    const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });
    const diagnostics = [
      ...parsed.errors,
      ...program.getOptionsDiagnostics(),
      ...program.getGlobalDiagnostics(),
      ...[...generated.keys()].flatMap((f) => {
        const source = program.getSourceFile(f);
        if (source === undefined) throw new Error(`${f} is not in the program`);
        return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
      }),
    ];

    const docLines = (doc: string): string[] => readFileSync(join(ROOT, doc), 'utf8').split('\n');
    const report = diagnostics.map((d) => {
      const message = `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n  ')}`;
      const where = d.file === undefined ? undefined : generated.get(resolve(d.file.fileName));
      if (d.file === undefined || d.start === undefined || where === undefined) {
        return d.file === undefined ? message : ts.formatDiagnostic(d, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' }).trim();
      }
      const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
      const inBlock = line - where.offset;
      if (inBlock < 0) return `${where.block.doc}:${where.block.line} (the preamble of the block starting here, line ${line + 1}): ${message}`;
      const docLine = where.block.line + inBlock;
      return `${where.block.doc}:${docLine}:${character + 1}: ${message}\n    | ${docLines(where.block.doc)[docLine - 1] ?? ''}`;
    });
    // Thrown rather than compared, so the failure reads as the compiler's list, not as an array diff.
    if (report.length > 0) throw new Error(`${report.length} type error(s) in the examples of ${[DOC, ...OTHER_DOCS].join(' and ')}:\n\n${report.join('\n\n')}\n`);
  });
});
