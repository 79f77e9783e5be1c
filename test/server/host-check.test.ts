// DNS rebinding: a page on a name the attacker points at 127.0.0.1 sends its own
// name as Host and as Origin. A member refuses every request (WebSocket upgrade,
// every HTTP route, /ui) whose Host is not a name it answers to, before routing,
// and --allowed-hosts adds names (docs/security.md).
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { hostNameOf, hostRefusal, type KnownHosts } from '../../src/server/guard/host-check.js';
import { captureIO } from '../client/cli-io.js';
import { startLeader } from './fixture.js';
import { upgradeStatus } from '../support/upgrade.js';
import type { VeraProcess } from '../support/vera-process.js';

let vp: VeraProcess | null = null;
afterEach(async () => {
  await vp?.stop();
  vp = null;
});

/** One HTTP request with exactly these headers (Host included); its status and body. */
function send(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the Host a member answers to', () => {
  const known = (allowed: string[] = []): KnownHosts => ({ listenHost: '10.0.0.1', allowed, memberHosts: () => new Set(['n2.example']) });

  it('parses Host headers to lower-case names', () => {
    expect(hostNameOf('LocalHost:1919')).toBe('localhost');
    expect(hostNameOf('[::1]:1919')).toBe('::1');
    expect(hostNameOf('vera.example.')).toBe('vera.example');
    expect(hostNameOf('evil.example:1919')).toBe('evil.example');
    expect(hostNameOf('a b')).toBeNull();
    expect(hostNameOf('user@evil.example')).toBeNull();
  });

  it('serves loopback, IP literals, its own and its members\' hosts and allowed names; refuses the rest', () => {
    for (const ok of ['localhost', 'localhost:1919', '127.0.0.1:1919', '[::1]:1919', '[::1]', '10.0.0.1:1919', '192.168.1.7:1919', 'n2.example:1920', 'other.localhost:1919']) {
      expect(hostRefusal(ok, '1.1', known())).toBeNull();
    }
    expect(hostRefusal('evil.example:1919', '1.1', known())).toMatch(/evil\.example:1919.*--allowed-hosts/);
    expect(hostRefusal('localhost.evil.example', '1.1', known())).not.toBeNull();
    expect(hostRefusal('vera.example:1919', '1.1', known(['vera.example']))).toBeNull();
    expect(hostRefusal('anything.example', '1.1', known(['*']))).toBeNull();
    // HTTP/1.1 requires Host; only HTTP/1.0 clients (never a browser) may leave it out.
    expect(hostRefusal(undefined, '1.1', known())).toMatch(/without a Host header/);
    expect(hostRefusal(undefined, '1.0', known())).toBeNull();
  });

  it('a member refuses a rebound Host on every route and the WebSocket, and serves its own and --allowed-hosts names', async () => {
    vp = await startLeader({ args: ['--allowed-hosts', 'vera.example'] });
    const port = vp.clientPort;
    const evil = { host: `evil.example:${port}`, origin: `http://evil.example:${port}` };
    expect(await upgradeStatus(`ws://127.0.0.1:${port}`, { headers: { host: evil.host }, origin: evil.origin })).toBe(403);
    for (const [method, path] of [
      ['GET', '/v1/snapshot'],
      ['GET', '/v1/status'],
      ['GET', '/v1/data/app'],
      ['POST', '/v1/defrag'],
      ['POST', '/v1/auth/login'],
      ['GET', '/ui'],
      ['GET', '/ui/app.js'],
      ['GET', '/metrics'],
    ] as const) {
      const r = await send(port, method, path, { ...evil, 'content-type': 'application/json' }, method === 'POST' ? '{}' : undefined);
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(JSON.parse(r.body)).toMatchObject({ error: { code: 'FORBIDDEN', message: expect.stringMatching(/evil\.example.*--allowed-hosts/) } });
    }
    // Nothing reached a handler: no defrag ran.
    expect(vp.logs.some((l) => l.event === 'defrag')).toBe(false);
    expect(vp.logs.some((l) => l.event === 'host-refused' && l.host === evil.host)).toBe(true);

    // A missing Host on HTTP/1.1 is refused too (Node's client always sends one: written by hand).
    expect(await rawStatus(port, 'GET /v1/status HTTP/1.1\r\nconnection: close\r\n\r\n')).toBe(403);

    // Names it answers to: loopback, its own address, and --allowed-hosts (with a matching origin, as a page there sends).
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `vera.example:${port}`]) {
      expect(await upgradeStatus(`ws://127.0.0.1:${port}`, { headers: { host }, origin: `http://${host}` }), host).toBe(101);
      expect((await send(port, 'GET', '/v1/status', { host })).status, host).toBe(200);
    }
    expect((await send(port, 'GET', '/ui', { host: `vera.example:${port}` })).status).not.toBe(403);
    // Nothing but a bad flag value changes: --allowed-hosts takes host names.
    const io = captureIO({});
    expect(await main(['start', '--allowed-hosts', 'https://x.example/', '--data', '/nonexistent/x'], io)).toBe(2);
    expect(io.err()).toMatch(/--allowed-hosts.*not a host name/);
  });
});

/** Writes a raw request and reads the status line of the answer. */
async function rawStatus(port: number, text: string): Promise<number> {
  const { connect } = await import('node:net');
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let got = '';
    socket.setEncoding('utf8').on('data', (c: string) => (got += c));
    socket.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0)));
    socket.on('error', reject);
  });
}
