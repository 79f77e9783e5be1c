// The client is a package another project installs: `npm pack` the project,
// install the tarball into a fresh project, type-check a small program that
// imports `vera` (and family clients) with the package's own types, and run it
// against a real server: lists, a journal, put, a transaction, a lease and a
// binary value. The installed `vera` command answers --version.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startLeader } from '../server/fixture.js';
import type { VeraProcess } from '../support/vera-process.js';

const ROOT = join(import.meta.dirname, '../..');
const work = mkdtempSync(join(tmpdir(), 'vera-pack-'));
let vp: VeraProcess | null = null;
afterAll(async () => {
  await vp?.stop();
  vp?.removeData();
  rmSync(work, { recursive: true, force: true });
});

const PROGRAM = `import { connect, type Item } from 'vera';
import { JournalClient } from 'vera/journal';
import { KvClient } from 'vera/kv';
import { LeaseClient } from 'vera/lease';
import { discover, LeaderElection, Mutex, register, type Leadership } from 'vera/recipes';

const url = process.argv[2]!;
const client = await connect(url);
const pushed: Item = await client.push('/packed/hello', { from: 'an installed package' }, { persistent: true });
const read = await client.get('/packed/hello');
const journal = new JournalClient(client);
await journal.create('packed');
await journal.add('packed', [{ key: 'k', data: 1 }]);
const claim = await journal.claim('packed', { max: 1 });

// put, a transaction, a lease and a binary value
const kv = new KvClient(client);
const leases = new LeaseClient(client);
await kv.put('/packed/config', { version: 1 });
const put = await kv.put('/packed/config', { version: 2 });
const { lease } = await leases.grant(10_000);
const txn = await kv.txn({
  compare: [{ path: '/packed/config', target: 'newest', value: put.item.index }],
  success: [
    { op: 'put', path: '/packed/owner', data: 'me', lease },
    { op: 'push', path: '/packed/blob', data: new Uint8Array([1, 2, 3]), persistent: true },
  ],
});
const blob = (await client.get('/packed/blob')).items[0]!.data as Uint8Array;
await leases.revoke(lease);
const owner = await client.get('/packed/owner');

// the recipes: leader election with a fencing token, a mutex, a service registry
const leadership: Leadership = await new LeaderElection(client, '/packed/election').campaign({ data: 'me' });
const locked = await new Mutex(client, '/packed/lock').withLock(async (handle) => handle.fencingToken > 0);
await register(client, 'packed', { port: 1 });
const discovery = await discover(client, 'packed');
const instances = discovery.instances().map((i) => i.data);
await discovery.close();
await leadership.resign();
console.log(JSON.stringify({
  index: pushed.index,
  items: read.items.length,
  claimed: claim.items.map((i) => i.key),
  config: (await client.get('/packed/config')).items.map((i) => i.data),
  replaced: put.deleted,
  txn: txn.succeeded,
  blob: blob instanceof Uint8Array ? [...blob] : null,
  ownerAfterRevoke: owner.items.length,
  fencingToken: leadership.fencingToken > 0,
  locked,
  instances,
}));
await client.close();
`;

/** The JSON block under "ES modules only" in docs/client.md. */
function documentedTsconfig(): { compilerOptions: Record<string, unknown> } {
  const doc = readFileSync(join(ROOT, 'docs/client.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### ES modules only'));
  const block = /```json\n([\s\S]*?)\n```/.exec(section);
  if (block === null) throw new Error('docs/client.md has no tsconfig under "ES modules only"');
  return JSON.parse(block[1]!) as { compilerOptions: Record<string, unknown> };
}

describe('the packed package', () => {
  it('installs into a fresh project, type-checks with its own types and runs against a server', async () => {
    // Packs what is built now (npm pack would run prepare, the whole build, again).
    const packed = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: ROOT, encoding: 'utf8' });
    const { filename, files } = (JSON.parse(packed) as Array<{ filename: string; files: Array<{ path: string }> }>)[0]!;
    const paths = files.map((f: { path: string }) => f.path);
    expect(paths).toEqual(expect.arrayContaining(['dist/client/index.js', 'dist/client/index.d.ts', 'bin/vera.js', 'LICENSE', 'dist/ui/vera-client.js']));
    expect(paths.some((p) => p.startsWith('test/') || p.startsWith('bench/') || p.startsWith('src/'))).toBe(false);
    expect(paths).toEqual(expect.arrayContaining(['dist/client/recipes/index.js', 'dist/client/recipes/index.d.ts']));
    // Not for a package's users: the dashboard's source maps and the docs' screenshots.
    expect(paths.filter((p) => p.startsWith('dist/ui/') && p.endsWith('.map'))).toEqual([]);
    expect(paths.filter((p) => p.endsWith('.png'))).toEqual([]);
    expect(paths).toContain('dist/ui/app.js');

    const project = join(work, 'app');
    execFileSync('mkdir', ['-p', project]);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', type: 'module', private: true }));
    // Dependencies come from npm's cache (the project's own npm ci filled it); the registry only if missing.
    execFileSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts=false', join(work, filename)], { cwd: project, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    writeFileSync(join(project, 'main.ts'), PROGRAM);
    // The minimal tsconfig docs/client.md gives, plus where this test keeps Node's types and its output.
    const documented = documentedTsconfig();
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { ...documented.compilerOptions, outDir: 'out', skipLibCheck: false, lib: ['ES2022'], types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')] }, files: ['main.ts'] }),
    );
    const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', project], { encoding: 'utf8' });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);

    vp = await startLeader();
    const run = spawnSync(process.execPath, [join(project, 'out/main.js'), vp.url], { encoding: 'utf8', timeout: 30_000 });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toMatchObject({ items: 1, claimed: ['k'], config: [{ version: 2 }], replaced: 1, txn: true, blob: [1, 2, 3], ownerAfterRevoke: 0, fencingToken: true, locked: true, instances: [{ port: 1 }] });

    // From CommonJS, with a dynamic import() as docs/client.md says.
    writeFileSync(join(project, 'from-cjs.cjs'), "import('vera').then((m) => import('vera/recipes').then((r) => console.log(typeof m.connect, typeof r.LeaderElection)));\n");
    const cjs = spawnSync(process.execPath, [join(project, 'from-cjs.cjs')], { cwd: project, encoding: 'utf8' });
    expect(cjs.stderr).toBe('');
    expect(cjs.stdout).toBe('function function\n');

    const version = spawnSync(join(project, 'node_modules/.bin/vera'), ['--version'], { encoding: 'utf8' });
    expect(version.stdout).toBe(`vera ${(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version}\n`);
  }, 120_000);
});
