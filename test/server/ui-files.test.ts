// A member serves the dashboard's files from dist/ui at /ui on its client port
// (src/server/http/ui-files.ts): the redirect, index.html, the bundles with their
// content types, ETags and no-cache, HEAD, 405 for other methods, 404 for what
// is not there, and nothing outside dist/ui whatever the target says.
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultUiDirectory } from '../../src/server/http/ui-files.js';
import { startLeader } from './fixture.js';
import type { VeraProcess } from '../support/vera-process.js';

const ROOT = resolve(import.meta.dirname, '../..');
const UI = join(ROOT, 'dist/ui');

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** One request with the target exactly as given (fetch would normalise `..` and encodings away). */
function raw(vp: VeraProcess, method: string, target: string, headers: Record<string, string> = {}): Promise<Answer> {
  const { hostname, port } = new URL(vp.httpUrl);
  return new Promise((resolvePromise, reject) => {
    const req = request({ host: hostname, port, method, path: target, headers, agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${target}: no answer`)));
    req.on('error', reject);
    req.end();
  });
}

let vp: VeraProcess;
beforeAll(async () => {
  vp = await startLeader();
});
afterAll(async () => {
  await vp?.stop();
});

describe('the dashboard files at /ui', () => {
  it('are found in dist/ui, also when the server runs from its sources', () => {
    expect(defaultUiDirectory()).toBe(UI);
  });

  it('/ui redirects to /ui/, which is index.html, never cached without asking', async () => {
    const redirect = await raw(vp, 'GET', '/ui');
    expect(redirect.status).toBe(301);
    expect(redirect.headers.location).toBe('/ui/');
    expect((await raw(vp, 'GET', '/ui?x=1')).headers.location).toBe('/ui/?x=1');

    const index = await raw(vp, 'GET', '/ui/');
    expect(index.status).toBe(200);
    expect(index.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(index.headers['cache-control']).toBe('no-cache');
    expect(index.headers['x-frame-options']).toBe('DENY');
    expect(index.body).toBe(readFileSync(join(UI, 'index.html'), 'utf8'));
    expect((await raw(vp, 'GET', '/ui/index.html')).body).toBe(index.body);
  });

  it('serves the client bundle as JavaScript with an ETag, answers a matching If-None-Match with 304, and HEAD without a body', async () => {
    const js = await raw(vp, 'GET', '/ui/vera-client.js');
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['cache-control']).toBe('no-cache');
    expect(js.headers['x-content-type-options']).toBe('nosniff');
    expect(js.headers['access-control-allow-origin']).toBe('*'); // pages of other origins may import it
    expect(js.body).toBe(readFileSync(join(UI, 'vera-client.js'), 'utf8'));
    expect(js.body).toMatch(/export\s*\{/); // an ES module
    const etag = js.headers.etag as string;
    expect(etag).toMatch(/^"[0-9a-f]+-[0-9a-f]+"$/);

    const again = await raw(vp, 'GET', '/ui/vera-client.js', { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    expect((await raw(vp, 'GET', '/ui/vera-client.js', { 'if-none-match': '"other"' })).status).toBe(200);

    const head = await raw(vp, 'HEAD', '/ui/vera-client.js');
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe(String(Buffer.byteLength(js.body)));
    expect(head.body).toBe('');

    const map = await raw(vp, 'GET', '/ui/vera-client.js.map');
    expect(map.status).toBe(200);
    expect(map.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('answers GET and HEAD only', async () => {
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const r = await raw(vp, method, '/ui/vera-client.js');
      expect(r.status, method).toBe(405);
      expect(r.headers.allow).toBe('GET, HEAD');
    }
  });

  it('answers 404 for a file that is not there', async () => {
    const r = await raw(vp, 'GET', '/ui/nothing-here.js');
    expect(r.status).toBe(404);
    expect(r.body).toBe('no file /ui/nothing-here.js\n');
  });

  it('never reads outside dist/ui: dot segments, encoded ones, encoded slashes, hidden names and absolute paths are 404', async () => {
    const targets = [
      '/ui/../package.json',
      '/ui/../../package.json',
      '/ui/%2e%2e/%2e%2e/package.json',
      '/ui/..%2f..%2fpackage.json',
      '/ui/..%5c..%5cpackage.json',
      '/ui/%2e%2e%2f%2e%2e%2fpackage.json',
      '/ui//etc/passwd',
      '/ui/.%2e/.%2e/package.json',
      '/ui/./index.html',
      '/ui/.hidden',
      '/ui/vera-client.js/',
      '/ui/vera-client.js%00.html',
      '/ui/%2fetc%2fpasswd',
      '/ui/\\..\\..\\package.json',
    ];
    for (const target of targets) {
      const r = await raw(vp, 'GET', target);
      expect(r.status, target).toBe(404);
      expect(r.body, target).not.toMatch(/"name": "vera"|root:/);
    }
  });

  it('sends a browser opening the member itself (/) to the dashboard', async () => {
    const r = await raw(vp, 'GET', '/');
    expect(r.status).toBe(302);
    expect(r.headers.location).toBe('/ui/');
  });

  it('serves a tab icon at /favicon.ico and /ui/favicon.svg, which the dashboard links', async () => {
    for (const target of ['/favicon.ico', '/ui/favicon.svg']) {
      const r = await raw(vp, 'GET', target);
      expect(r.status, target).toBe(200);
      expect(r.headers['content-type'], target).toBe('image/svg+xml');
      expect(r.body, target).toMatch(/^<svg /);
      const head = await raw(vp, 'HEAD', target);
      expect(head.status, target).toBe(200);
      expect(head.body, target).toBe('');
    }
    expect(readFileSync(join(ROOT, 'src/ui/index.html'), 'utf8')).toContain('href="/ui/favicon.svg"');
  });

  it('leaves the other endpoints where they were', async () => {
    expect((await raw(vp, 'GET', '/healthz')).status).toBe(200);
    expect((await raw(vp, 'GET', '/uix')).status).toBe(404);
    expect(JSON.parse((await raw(vp, 'GET', '/v1/status')).body)).toHaveProperty('role', 'leader');
  });
});
