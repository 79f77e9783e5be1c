// The import graph keeps its layers: the protocol and the client library can be
// used without the server, the store, Raft or the CLI (issue: command families),
// and the server does not reach into the CLI. Read from the source files
// themselves, so a new import that crosses a layer fails here at once.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const SPECIFIER = /(?:^|[\s;])(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*\(?\s*['"]([^'"]+)['"]/gm;

interface Imports {
  /** Project files (relative to the root). */
  readonly files: string[];
  /** Packages and node built-ins, by name. */
  readonly packages: string[];
}

// A lazy `import('./server.js')` (a family's loader of its server part) is an import like any
// other here: what a family's index loads on demand is code its importers bring into the graph.
function importsOf(file: string): Imports {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const files: string[] = [];
  const packages: string[] = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const spec = m[1] ?? m[2]!;
    if (spec.startsWith('.')) {
      const ts = relative(ROOT, resolve(ROOT, dirname(file), spec.replace(/\.js$/, '.ts')));
      // A .js specifier names a .ts source, or a .tsx one (the dashboard's components).
      const target = existsSync(join(ROOT, ts)) ? ts : `${ts}x`;
      if (!existsSync(join(ROOT, target))) throw new Error(`${file} imports ${spec}, which is not a file`);
      files.push(target);
    } else {
      packages.push(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
    }
  }
  return { files, packages };
}

/** Every project file reachable from `entries`, and every package they import. */
function closure(entries: string[]): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const todo = [...entries];
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    const found = importsOf(file);
    for (const p of found.packages) packages.add(p);
    todo.push(...found.files);
  }
  return { files, packages };
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
}

/**
 * The files in family folders (src/families/<name>/) that `file` reaches: its own imports, and
 * those of any file outside the family folders it reaches on the way (a shared module such as
 * src/families/registry.ts), so a detour through one is no way around a rule.
 */
function familyFilesReached(file: string): Set<string> {
  const reached = new Set<string>();
  const seen = new Set<string>([file]);
  const todo = [...importsOf(file).files];
  while (todo.length > 0) {
    const next = todo.pop()!;
    if (seen.has(next)) continue;
    seen.add(next);
    if (/^src\/families\/[a-z]+\//.test(next)) reached.add(next);
    // The dashboard (src/ui) is the application around the panels, and uses whichever family's
    // client it needs (auth's, to sign in): a panel meets it only through the panel kit, held
    // to that by the panels' own rule above.
    else if (!next.startsWith('src/ui/')) todo.push(...importsOf(next).files);
  }
  return reached;
}

const outside = (files: Iterable<string>, allowed: string[]): string[] => [...files].filter((f) => !allowed.some((a) => f.startsWith(a)));

describe('the import graph', () => {
  it('from the protocol package stays inside src/protocol and needs only msgpackr', () => {
    const { files, packages } = closure(sourceFiles('src/protocol'));
    expect(outside(files, ['src/protocol/'])).toEqual([]);
    expect([...packages].filter((p) => !p.startsWith('node:')).sort()).toEqual(['msgpackr']);
  });

  it('from the client library reaches only the client and the protocol, never the server, store, Raft, CLI or LevelDB', () => {
    const { files, packages } = closure(['src/client/index.ts', ...sourceFiles('src/client')]);
    expect(outside(files, ['src/client/', 'src/protocol/'])).toEqual([]);
    expect([...packages].filter((p) => !p.startsWith('node:')).sort()).toEqual(['msgpackr', 'ws']);
  });

  // A family's dashboard tab (panel.tsx, bundled by scripts/build-ui.ts into the dashboard) sees the
  // dashboard only through src/ui/panel-kit.ts, and only the dashboard's build imports it.
  it("from a family's panel reaches only the panel kit, the client parts and the protocol; nothing imports a panel", () => {
    const panels = readdirSync(join(ROOT, 'src/families'), { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(join(ROOT, 'src/families', d.name, 'panel.tsx')))
      .map((d) => `src/families/${d.name}/panel.tsx`);
    expect(panels).toContain('src/families/assign/panel.tsx');
    for (const panel of panels) {
      const direct = importsOf(panel).files;
      expect(direct.filter((f) => f.startsWith('src/ui/') && f !== 'src/ui/panel-kit.ts'), panel).toEqual([]);
      const { files } = closure(direct.filter((f) => !f.startsWith('src/ui/')));
      const allowed = [...files].filter((f) => f.startsWith('src/client/') || f.startsWith('src/protocol/') || /^src\/families\/[a-z]+\/(client(-[a-z-]+)?|wire)\.ts$/.test(f));
      expect([...files].filter((f) => !allowed.includes(f)), panel).toEqual([]);
    }
    const everySource = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).filter((f) => /\.tsx?$/.test(f));
    const importers = everySource.filter((f) => /(?:from|import)\s*\(?\s*['"][^'"]*\/panel\.js['"]/.test(readFileSync(join(ROOT, 'src', f), 'utf8')));
    expect(importers).toEqual([]);
  });

  // A family's client part is its client.ts and client-*.ts; a wire.ts imports only the protocol package, so any family's may be used.
  it("from a family's client part reaches only the client, the protocol and the families' wires, never a store or server code", () => {
    const parts = readdirSync(join(ROOT, 'src/families'), { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(join(ROOT, 'src/families', d.name, 'client.ts')))
      .map((d) => d.name);
    expect(parts).toContain('journal');
    for (const family of parts) {
      const { files, packages } = closure([`src/families/${family}/client.ts`]);
      const wires = [...files].filter((f) => /^src\/families\/[a-z]+\/wire\.ts$/.test(f));
      expect(outside(files, ['src/client/', 'src/protocol/', `src/families/${family}/client.ts`, `src/families/${family}/client-`, ...wires]), family).toEqual([]);
      expect([...packages].filter((p) => !p.startsWith('node:')).sort()).toEqual(['msgpackr', 'ws']);
    }
  });

  it('from the server, state machine and Raft never reaches the CLI', () => {
    const { files } = closure([...sourceFiles('src/server'), ...sourceFiles('src/statemachine'), ...sourceFiles('src/raft')]);
    expect([...files].filter((f) => f.startsWith('src/cli/'))).toEqual([]);
  });

  // src/server is split by job (docs/architecture.md): the member (node/) is Raft, the store and
  // what they need, and knows nothing of the client port: no connection, route, operator endpoint
  // or permission check. The checks (guard/) use the front end's types only, never its code.
  it('from the member (src/server/node) never reaches the rest of the server', () => {
    // Its own imports (the families it applies through load their server parts on demand, at run time).
    const edges = sourceFiles('src/server/node').flatMap((f) => importsOf(f).files.map((t) => `${f} -> ${t}`));
    expect(edges.filter((e) => /-> src\/server\/(?!node\/|config\.ts)/.test(e))).toEqual([]);
    expect(edges.length).toBeGreaterThan(10);
    const guardCode = sourceFiles('src/server/guard').flatMap((f) =>
      [...readFileSync(join(ROOT, f), 'utf8').matchAll(/^import\s+(?!type\b)[^'"]*from\s*'(\.\.\/(?:front|http|admin)\/[^']+)'/gm)].map((m) => `${f} imports ${m[1]}`),
    );
    expect(guardCode).toEqual([]);
  });

  it('from Raft never reaches the state machine or the families: the store supplies what Raft must know of it', () => {
    const { files } = closure(sourceFiles('src/raft'));
    expect([...files].filter((f) => f.startsWith('src/statemachine/') || f.startsWith('src/families/') || f.startsWith('src/server/'))).toEqual([]);
  });

  // The kernel applies entries through the Family contract, which it owns (src/statemachine/family.ts),
  // and is handed the registry at open (StateMachine.open(db, REGISTRY)): nothing under
  // src/statemachine imports anything under src/families, so it knows no family but through the
  // registry it is handed.
  it('from the state machine (the kernel) reaches no family: families come in only through the registry handed in', () => {
    const kernel = sourceFiles('src/statemachine');
    const edges = kernel.flatMap((file) => importsOf(file).files.filter((t) => t.startsWith('src/families/')).map((t) => `${file} -> ${t}`));
    expect(edges).toEqual([]);
    const { files } = closure(kernel);
    expect([...files].filter((f) => f.startsWith('src/families/'))).toEqual([]);
    // A list's item and change are the lists family's shapes: the kernel carries events without naming them.
    const kernelText = kernel.map((f) => readFileSync(join(ROOT, f), 'utf8')).join('\n');
    expect(kernelText).not.toMatch(/\b(?:interface|type)\s+(?:Item|ChangeEvent)\b/);
    // The contract lives in the kernel, once: no copy or re-export of it is left under src/families.
    expect(existsSync(join(ROOT, 'src/families/family.ts'))).toBe(false);
  });

  it('from the family contract never reaches the server: it names only the kit\u2019s plugin', () => {
    const contract = 'src/statemachine/family.ts';
    const { files } = closure([contract]);
    expect([...files].filter((f) => f.startsWith('src/server/') || f.startsWith('src/families/'))).toEqual([]);
    // Nor does anything it reaches import it back: the contract closes no loop of imports.
    expect([...files].filter((f) => f !== contract && importsOf(f).files.includes(contract))).toEqual([]);
  });

  // Issue 33: hibernation's rule reaches every access path through the seams the core runs (the
  // kernel's list guard, Family.listGuard; the server's path guard, PluginServer.pathGuard), so no
  // other family, and no server file, imports it: a new access path passes the guard without knowing it.
  it('from no other family and no server file reaches hibernation', () => {
    const importers = [...sourceFiles('src/families'), ...sourceFiles('src/server')]
      .filter((f) => !f.startsWith('src/families/hibernate/') && f !== 'src/families/registry.ts')
      .filter((f) => importsOf(f).files.some((t) => t.startsWith('src/families/hibernate/')));
    expect(importers).toEqual([]);
  });

  // Issue 33: hibernation's server side is a kit plugin like the others: it sees its member through
  // the FamilyHost alone, and its rule over other families' paths is a path guard the core runs. So
  // no file of it imports the server, directly or through anything it reaches (its CLI verb aside, as for every plugin).
  it('from hibernation never reaches the server: its server side is a kit plugin', () => {
    const files = sourceFiles('src/families/hibernate');
    expect(files).toContain('src/families/hibernate/server.ts');
    const direct = files.flatMap((f) => importsOf(f).files.filter((t) => t.startsWith('src/server/')).map((t) => `${f} -> ${t}`));
    expect(direct).toEqual([]);
    const reached = closure(files.filter((f) => !f.endsWith('/cli.ts'))).files;
    expect([...reached].filter((f) => f.startsWith('src/server/'))).toEqual([]);
    expect(readFileSync(join(ROOT, 'src/families/hibernate/index.ts'), 'utf8')).toMatch(/\bplugin: /);
  });

  // Issue 33: the connection asks the families about its session only through their plugins'
  // answers (PluginServer.connection, gathered by loadPlugins), so it imports no family, at all.
  it('from the client connection reaches no family directly', () => {
    const connection = 'src/server/front/client-connection.ts';
    expect(importsOf(connection).files.filter((f) => f.startsWith('src/families/'))).toEqual([]);
    expect(importsOf(connection).files).toContain('src/server/front/plugin-part.ts');
  });

  // Issue 33: a family written against the kit (its index.ts declares `plugin`) sees the member only
  // through the kit's FamilyHost: none of its files reaches src/server, following every import, the
  // lazy loaders of the server parts of the families it uses included; and the kit itself stays under the families.
  it('from a kit plugin family and from the kit never reaches the server, lazily loaded server parts included', () => {
    const kit = closure(sourceFiles('src/kit'));
    expect(outside(kit.files, ['src/kit/', 'src/protocol/'])).toEqual([]);
    const plugins = readdirSync(join(ROOT, 'src/families'), { withFileTypes: true })
      .filter((d) => d.isDirectory() && /\bplugin: /.test(readFileSync(join(ROOT, 'src/families', d.name, 'index.ts'), 'utf8')))
      .map((d) => d.name);
    expect(plugins).toContain('counter');
    // Guards the reader: a lazy loader is followed (counter's index names its server.ts only in one).
    expect(importsOf('src/families/counter/index.ts').files).toContain('src/families/counter/server.ts');
    // The first families (and cluster) are plugins too: what the kernel applies first is served through the kit.
    expect(plugins).toEqual(expect.arrayContaining(['sessions', 'lists', 'watches', 'lag', 'cluster']));
    for (const family of plugins) {
      const { files } = closure(sourceFiles(`src/families/${family}`).filter((f) => !f.endsWith('/cli.ts')));
      expect([...files].filter((f) => f.startsWith('src/server/')), family).toEqual([]);
    }
  });

  // Issue 33, the end state: every family's server side is a kit plugin, so no family declares the
  // old front-end server part, and no file of any family but its command line reaches src/server,
  // following every import (node assignment reaches the journal it queues clean-ups in, for one).
  it('from no family, whatever it imports, reaches the server; none declares a front-end server part', () => {
    const families = readdirSync(join(ROOT, 'src/families'), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    expect(families).toEqual(expect.arrayContaining(['journal', 'assign', 'hibernate', 'lists']));
    for (const family of families) {
      const { files } = closure(sourceFiles(`src/families/${family}`).filter((f) => !f.endsWith('/cli.ts')));
      expect([...files].filter((f) => f.startsWith('src/server/')), family).toEqual([]);
      expect(readFileSync(join(ROOT, 'src/families', family, 'index.ts'), 'utf8'), family).not.toMatch(/^\s*server: /m);
    }
  });

  // Issue 33: a family sees another only through what that one publishes (docs/architecture.md "A
  // family's public surface"): its public.ts (for the server and apply sides), its wire.ts and its
  // client (for clients and the CLI); everything else in a folder is private. And only an older
  // family, one earlier in the registry: a rule an older family must follow because of a newer one
  // reaches it through the kernel's seams instead (Family.joins, the user ledger, the guards).
  it('from one family reaches another only through its public surface, and only an older one', () => {
    const registry = readFileSync(join(ROOT, 'src/families/registry.ts'), 'utf8');
    const folderOf = new Map([...registry.matchAll(/^import \{ (\w+) \} from '\.\/([a-z]+)\/index\.js';$/gm)].map((m) => [m[1]!, m[2]!]));
    const order = registry
      .match(/export const FAMILIES: readonly AnyFamily\[\] = \[([^\]]+)\]/)![1]!
      .split(',')
      .map((name) => folderOf.get(name.trim())!);
    expect(order.slice(0, 3)).toEqual(['sessions', 'lists', 'watches']);
    expect(order).toContain('quota');
    const surface = /^src\/families\/([a-z]+)\/(?:public|wire|client(?:-[a-z-]+)?)\.ts$/;
    const crossings: string[] = [];
    const wrong: string[] = [];
    for (const family of order) {
      for (const file of readdirSync(join(ROOT, 'src/families', family), { recursive: true, encoding: 'utf8' }).filter((f) => /\.tsx?$/.test(f))) {
        const from = `src/families/${family}/${file}`;
        for (const target of familyFilesReached(from)) {
          const other = /^src\/families\/([a-z]+)\//.exec(target)![1]!;
          if (other === family) continue;
          crossings.push(`${from} -> ${target}`);
          if (!surface.test(target)) wrong.push(`${from} -> ${target}: not ${other}'s public surface`);
          else if (order.indexOf(other) > order.indexOf(family)) wrong.push(`${from} -> ${target}: ${other} is newer than ${family}`);
        }
      }
    }
    expect(wrong).toEqual([]);
    // Guards the reader: the crossings it judged include ones known to exist.
    expect(crossings).toContain('src/families/watches/index.ts -> src/families/lists/public.ts');
    expect(crossings).toContain('src/families/quota/index.ts -> src/families/auth/public.ts');
    // A public surface only re-exports its own family: it opens no path into a third one.
    for (const family of order.filter((f) => existsSync(join(ROOT, 'src/families', f, 'public.ts')))) {
      const targets = importsOf(`src/families/${family}/public.ts`).files;
      expect(targets.filter((t) => !t.startsWith(`src/families/${family}/`)), family).toEqual([]);
    }
  });

  // Issue 33: a family's server side plugs in one way, as a kit plugin (Family.plugin). The old seam,
  // a `server()` loading a part that got the whole front end, is gone from the contract, the server
  // and the test fixtures alike, so nothing can declare it again.
  it('has one way for a family\u2019s server side to plug in: no file under src/ or test/ declares the old server part', () => {
    const self = relative(ROOT, import.meta.filename);
    const files = ['src', 'test'].flatMap((dir) => readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' }).filter((f) => /\.tsx?$/.test(f)).map((f) => join(dir, f))).filter((f) => f !== self);
    expect(files).toContain('src/families/journal/panel.tsx');
    expect(files).toContain('test/families/hibernate/transparency.test.ts');
    const oldSeam = /\b(?:FamilyServerPart|ServerPartSlot|serverOnlyFamily|ServerParts?|loadServerParts)\b|front\/family-part\b/;
    expect(files.filter((f) => oldSeam.test(readFileSync(join(ROOT, f), 'utf8')))).toEqual([]);
    for (const gone of ['family-part.ts', 'family-part-type.ts']) expect(existsSync(join(ROOT, 'src/server/front', gone)), gone).toBe(false);
    const contract = readFileSync(join(ROOT, 'src/statemachine/family.ts'), 'utf8');
    expect(contract).toMatch(/^\s*plugin\?\(\): Promise<AnyPlugin>;/m);
    expect(contract).not.toMatch(/^\s*(?:readonly\s+)?server\??\s*[(:]/m);
  });

  // Issue 33: a new family is its folder plus one registry line. The counter family is the example
  // (docs/architecture.md): the CLI, the package exports, the browser client and the dashboard find
  // it from its folder, so nothing else under src/, and nothing in package.json, names it.
  it('has the example family as its folder plus one registry line: nothing else in the product names it', () => {
    const files = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
      .filter((f) => /\.(?:tsx?|css|html)$/.test(f))
      .map((f) => join('src', f))
      .filter((f) => !f.startsWith('src/families/counter/'));
    expect(files).toContain('src/ui/dashboard.ts');
    const naming = files.filter((f) => /families\/counter\b|\bcounter\/(?:index|client|wire|server|cli|panel)\b/.test(readFileSync(join(ROOT, f), 'utf8')));
    expect(naming).toEqual(['src/families/registry.ts']);
    const registry = readFileSync(join(ROOT, 'src/families/registry.ts'), 'utf8');
    expect(registry.split('\n').filter((line) => /\bcounter\b/.test(line))).toHaveLength(2); // its import and its place in the list
    expect(readFileSync(join(ROOT, 'package.json'), 'utf8')).not.toMatch(/counter/);
    expect(existsSync(join(ROOT, 'src/families/counter/panel.tsx'))).toBe(true);
  });

  it('exports the client library as vera/client, with types, built from src/client/index.ts', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, { types: string; default: string }> };
    const build = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as { compilerOptions: { outDir: string; rootDir: string; declaration: boolean } };
    const { outDir, rootDir, declaration } = build.compilerOptions;
    expect(declaration).toBe(true);
    const entry = pkg.exports['./client']!;
    expect(entry.default).toBe(`./${outDir}/client/index.js`);
    expect(entry.types).toBe(`./${outDir}/client/index.d.ts`);
    expect(existsSync(join(ROOT, rootDir, 'client/index.ts'))).toBe(true);
  });

  it('is read correctly: the CLI is seen to import the server', () => {
    // Guards the reader itself: if the pattern stopped matching, the checks above would pass on nothing.
    const { files, packages } = closure(['src/cli/main.ts']);
    expect(files.has('src/server/index.ts')).toBe(true);
    expect(packages.has('classic-level')).toBe(true);
  });
});
