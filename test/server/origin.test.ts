// Web pages cannot drive a member: a WebSocket upgrade or HTTP request whose
// Origin is neither the member's own nor allowed by --allowed-origins is refused
// with 403 and reaches nothing; clients that send no Origin are served as before.
// And a client port beyond loopback needs authentication on, or --insecure.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exposureProblem } from '../../src/server/guard/exposure.js';
import { main } from '../../src/cli/main.js';
import { originOfClientUrl, originRefusal } from '../../src/server/guard/origin.js';
import { captureIO } from '../client/cli-io.js';
import { startLeader } from './fixture.js';
import { upgradeStatus } from '../support/upgrade.js';
import type { VeraProcess } from '../support/vera-process.js';

let vp: VeraProcess | null = null;
afterEach(async () => {
  await vp?.stop();
  vp = null;
});

/** The upgrade's status with `origin` (none: a client that is not a browser). */
const upgrade = (url: string, origin: string | undefined): Promise<number> => upgradeStatus(url, origin === undefined ? {} : { origin });

describe('Origin', () => {
  it('judges an origin: none, the member\'s own, an allowed one, or refused', () => {
    expect(originRefusal(undefined, '127.0.0.1:1919', [])).toBeNull();
    expect(originRefusal('http://127.0.0.1:1919', '127.0.0.1:1919', [])).toBeNull();
    expect(originRefusal('https://127.0.0.1:1919', '127.0.0.1:1919', [])).toBeNull();
    expect(originRefusal('http://127.0.0.1:1920', '127.0.0.1:1919', [])).toMatch(/refused/);
    expect(originRefusal('https://evil.example', '127.0.0.1:1919', ['https://dash.example'])).toMatch(/evil\.example/);
    expect(originRefusal('https://dash.example', '127.0.0.1:1919', ['https://dash.example'])).toBeNull();
    expect(originRefusal('https://anything.example', '127.0.0.1:1919', ['*'])).toBeNull();
    // Another member's pages (the dashboard following the leader) come with that member's origin.
    expect(originOfClientUrl('ws://127.0.0.1:1920')).toBe('http://127.0.0.1:1920');
    expect(originOfClientUrl('wss://n2.example:1919')).toBe('https://n2.example:1919');
    expect(originRefusal('http://127.0.0.1:1920', '127.0.0.1:1919', [originOfClientUrl('ws://127.0.0.1:1920')])).toBeNull();
  });

  it('a member refuses WebSockets and HTTP requests from other origins, and serves its own, allowed ones and non-browsers', async () => {
    vp = await startLeader({ args: ['--allowed-origins', 'https://dash.example'] });
    const host = new URL(vp.httpUrl).host;
    expect(await upgrade(vp.url, 'https://evil.example')).toBe(403);
    expect(await upgrade(vp.url, `http://${host}`)).toBe(101);
    expect(await upgrade(vp.url, 'https://dash.example')).toBe(101);
    expect(await upgrade(vp.url, undefined)).toBe(101);
    const evil = await fetch(`${vp.httpUrl}/v1/defrag`, { method: 'POST', headers: { origin: 'https://evil.example', 'content-type': 'application/json' }, body: '{}' });
    expect(evil.status).toBe(403);
    expect(await evil.json()).toMatchObject({ error: { code: 'FORBIDDEN', message: expect.stringContaining('allowed-origins') } });
    expect((await fetch(`${vp.httpUrl}/v1/status`, { headers: { origin: 'https://dash.example' } })).status).toBe(200);
    expect((await fetch(`${vp.httpUrl}/v1/status`)).status).toBe(200);
    // --allowed-origins takes origins only.
    const io = captureIO({});
    expect(await main(['start', '--allowed-origins', 'dash.example/path', '--data', '/nonexistent/x'], io)).toBe(2);
    expect(io.err()).toMatch(/not an origin/);
  });
});

describe('a client port beyond loopback', () => {
  it('is refused with authentication off unless --insecure, saying why', async () => {
    expect(exposureProblem({ client: { host: '127.0.0.1' } }, false)).toBeNull();
    expect(exposureProblem({ client: { host: 'localhost' } }, false)).toBeNull();
    expect(exposureProblem({ client: { host: '0.0.0.0' }, insecure: true }, false)).toBeNull();
    expect(exposureProblem({ client: { host: '0.0.0.0' } }, true)).toBeNull(); // authentication on
    expect(exposureProblem({ client: { host: '0.0.0.0' } }, false)).toMatch(/authentication off.*vera auth enable.*--insecure/);
    const dir = mkdtempSync(join(tmpdir(), 'vera-exposed-'));
    try {
      const io = captureIO({});
      // Refused before the port is bound: the store (new, so authentication off) is opened, judged and closed.
      expect(await main(['start', '--client', '0.0.0.0:0', '--peer', '127.0.0.1:0', '--data', dir], io)).toBe(1);
      expect(io.err()).toMatch(/cannot start: the client port would listen on 0\.0\.0\.0, beyond this machine, with authentication off.*--insecure/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
