// The client-only package (packages/vera-client, the npm workspace `vera-client`):
// built from the main build, packed, installed into a fresh project, where it
// brings only the client's runtime dependencies (ws, msgpackr) and none of the
// server's (LevelDB, pino, prom-client, preact, uplot), type-checks a program
// with its own types and runs it against a real server: lists, put, a recipe.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startLeader } from '../server/fixture.js';
import type { VeraProcess } from '../support/vera-process.js';

const ROOT = join(import.meta.dirname, '../..');
const PACKAGE = join(ROOT, 'packages/vera-client');
const work = mkdtempSync(join(tmpdir(), 'vera-client-pack-'));
let vp: VeraProcess | null = null;
afterAll(async () => {
  await vp?.stop();
  vp?.removeData();
  rmSync(work, { recursive: true, force: true });
});

const PROGRAM = `import { connect } from 'vera-client';
import { KvClient } from 'vera-client/kv';
import { Mutex } from 'vera-client/recipes';

const client = await connect(process.argv[2]!);
await client.push('/client-only/hello', { from: 'vera-client' }, { persistent: true });
const kv = new KvClient(client);
await kv.put('/client-only/config', { version: 1 });
const put = await kv.put('/client-only/config', { version: 2 });
const locked = await new Mutex(client, '/client-only/lock').withLock(async (handle) => handle.fencingToken > 0);
console.log(JSON.stringify({
  hello: (await client.get('/client-only/hello')).items.map((i) => i.data),
  config: (await client.get('/client-only/config')).items.map((i) => i.data),
  replaced: put.deleted,
  locked,
}));
await client.close();
`;

/** Bytes of every file under `dir` (what the install puts on disk, before the file system's rounding). */
function sizeOf(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) total += sizeOf(path);
    else if (e.isFile()) total += statSync(path).size;
  }
  return total;
}

describe('the client-only package', () => {
  it('packs the client without the server, installs with only ws and msgpackr, and runs against a server', async () => {
    // From what the main build left in dist/ (npm run build runs the same script).
    execFileSync(process.execPath, [join(ROOT, 'scripts/build-client-package.mjs')], { cwd: ROOT, encoding: 'utf8' });
    const packed = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: PACKAGE, encoding: 'utf8' });
    const { filename, files } = (JSON.parse(packed) as Array<{ filename: string; files: Array<{ path: string }> }>)[0]!;
    const paths = files.map((f) => f.path);
    expect(paths).toEqual(
      expect.arrayContaining(['package.json', 'LICENSE', 'dist/client/index.js', 'dist/client/index.d.ts', 'dist/client/recipes/index.js', 'dist/families/kv/client.js', 'dist/families/journal/client.js', 'dist/ui/vera-client.js', 'dist/client/browser.d.ts']),
    );
    // Nothing of the server, the CLI or the dashboard.
    expect(paths.filter((p) => /^dist\/(server|raft|statemachine|cli|keys|log)\//.test(p) || /\/(server|apply|commands|state)\.js$/.test(p) || p.startsWith('bin/') || p === 'dist/ui/app.js')).toEqual([]);
    // Every export names a file the package holds.
    const manifest = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8')) as { exports: Record<string, string | { types: string; default: string }>; dependencies: Record<string, string> };
    // A `*` stands for each family folder with that file: every family's client is in, the example family's too.
    const clientFamilies = readdirSync(join(ROOT, 'src/families')).filter((name) => existsSync(join(ROOT, 'src/families', name, 'client.ts')));
    expect(clientFamilies).toContain('counter');
    for (const target of Object.values(manifest.exports)) {
      for (const file of typeof target === 'string' ? [target] : [target.types, target.default]) {
        for (const one of file.includes('*') ? clientFamilies.map((name) => file.replace('*', name)) : [file]) expect(paths).toContain(one.slice(2));
      }
    }
    expect(Object.keys(manifest.dependencies).sort()).toEqual(['msgpackr', 'ws']);

    const project = join(work, 'app');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', type: 'module', private: true }));
    // Dependencies come from npm's cache (the project's own npm ci filled it); the registry only if missing.
    execFileSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', join(work, filename)], { cwd: project, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const installed = readdirSync(join(project, 'node_modules')).filter((n) => !n.startsWith('.'));
    expect(installed).toEqual(expect.arrayContaining(['vera-client', 'ws', 'msgpackr']));
    for (const serverOnly of ['classic-level', 'pino', 'pino-pretty', 'prom-client', 'preact', 'uplot', 'vera']) expect(installed).not.toContain(serverOnly);
    const size = sizeOf(join(project, 'node_modules'));
    console.log(`vera-client install: ${installed.length} packages in node_modules (${installed.join(', ')}), ${(size / 1024 / 1024).toFixed(1)} MB`);
    expect(size).toBeLessThan(5 * 1024 * 1024);

    writeFileSync(join(project, 'main.ts'), PROGRAM);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, outDir: 'out', skipLibCheck: false, lib: ['ES2022'], types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')] }, files: ['main.ts'] }),
    );
    const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', project], { encoding: 'utf8' });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);

    vp = await startLeader();
    const run = spawnSync(process.execPath, [join(project, 'out/main.js'), vp.url], { encoding: 'utf8', timeout: 30_000 });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ hello: [{ from: 'vera-client' }], config: [{ version: 2 }], replaced: 1, locked: true });
  }, 120_000);
});

describe("the client package's build", () => {
  /** A project with a made-up dist/: the client entry imports `imported` (a relative module, or a package). */
  function projectImporting(imported: string): string {
    const root = mkdtempSync(join(work, 'root-'));
    mkdirSync(join(root, 'packages/vera-client'), { recursive: true });
    mkdirSync(join(root, 'dist/client'), { recursive: true });
    mkdirSync(join(root, 'dist/server'), { recursive: true });
    mkdirSync(join(root, 'dist/ui'), { recursive: true });
    const manifest = { name: 'vera-client', exports: { '.': { types: './dist/client/index.d.ts', default: './dist/client/index.js' } }, dependencies: { ws: '*' } };
    writeFileSync(join(root, 'packages/vera-client/package.json'), JSON.stringify(manifest));
    writeFileSync(join(root, 'dist/client/index.js'), `import { x } from '${imported}';\nimport { WebSocket } from 'ws';\nimport { join } from 'node:path';\nexport const y = x;\n`);
    writeFileSync(join(root, 'dist/client/index.d.ts'), `export declare const y: number;\n`);
    writeFileSync(join(root, 'dist/client/helper.js'), `export const x = 1;\n`);
    writeFileSync(join(root, 'dist/client/helper.d.ts'), `export declare const x: number;\n`);
    writeFileSync(join(root, 'dist/server/index.js'), `export const server = true;\n`);
    writeFileSync(join(root, 'dist/ui/vera-client.js'), `export {};\n`);
    return root;
  }

  const build = (root: string) => spawnSync(process.execPath, [join(ROOT, 'scripts/build-client-package.mjs'), '--root', root], { encoding: 'utf8' });

  it('copies what the entries import, and only that', () => {
    const root = projectImporting('./helper.js');
    const r = build(root);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = join(root, 'packages/vera-client/dist');
    expect(readdirSync(join(out, 'client')).sort()).toEqual(['helper.d.ts', 'helper.js', 'index.d.ts', 'index.js']);
    expect(readdirSync(out).sort()).toEqual(['client', 'ui']);
  });

  it('fails when a client module imports a package the client does not depend on', () => {
    const root = projectImporting('classic-level');
    const r = build(root);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/dist\/client\/index\.js imports classic-level, which is not a dependency of vera-client/);
  });
});
