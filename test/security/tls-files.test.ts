// src/server/guard/tls.ts in-process: loading and checking certificate files, reloading
// them when they change (and keeping the old ones when the new ones are broken),
// and certificateUser(), which names the client by its verified certificate's CN.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { MemberDirectory, wsUrl } from '../../src/server/admin/membership.js';
import { initialMembers } from '../../src/statemachine/index.js';
import { certificateUser, ClientPortTls, loadTlsMaterial, TlsFiles, TlsLoadError } from '../../src/server/guard/tls.js';
import type { ClientTlsConfig } from '../../src/server/config.js';
import { Pki, type CertFiles } from './pki.js';

interface Line {
  level: 'info' | 'warn' | 'error';
  obj: Record<string, unknown>;
  msg?: string;
}

function memoryLogger(): { lines: Line[]; info: (o: object, m?: string) => void; warn: (o: object, m?: string) => void; error: (o: object, m?: string) => void } {
  const lines: Line[] = [];
  const at = (level: Line['level']) => (obj: object, msg?: string) => void lines.push({ level, obj: obj as Record<string, unknown>, ...(msg === undefined ? {} : { msg }) });
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

let pki: Pki;
let ca: CertFiles;
let otherCa: CertFiles;
let server: CertFiles;
let alice: CertFiles;
let mallory: CertFiles;

beforeAll(() => {
  pki = Pki.create();
  ca = pki.ca('ca');
  otherCa = pki.ca('other');
  server = pki.issue(ca, 'server', { cn: 'server' });
  alice = pki.issue(ca, 'alice', { cn: 'alice' });
  mallory = pki.issue(otherCa, 'mallory', { cn: 'mallory' });
});
afterAll(() => pki?.remove());

const fronts: Array<{ close: () => void; listener: NetServer }> = [];
afterEach(async () => {
  for (const f of fronts.splice(0)) {
    f.close();
    await new Promise<void>((r) => f.listener.close(() => r()));
  }
});

describe('loading certificate files', () => {
  it('loads a certificate, its key and a CA', () => {
    const m = loadTlsMaterial({ certFile: server.cert, keyFile: server.key, caFile: ca.cert, minVersion: 'TLSv1.2' }, 'client port');
    expect(m.cert.toString()).toMatch(/BEGIN CERTIFICATE/);
    expect(m.ca?.toString()).toMatch(/BEGIN CERTIFICATE/);
  });

  it('refuses, naming the file: a missing file, a key of another certificate, a CA file without a certificate', () => {
    expect(() => loadTlsMaterial({ certFile: `${server.cert}.missing`, keyFile: server.key, minVersion: 'TLSv1.2' }, 'client port')).toThrow(/cannot read the client port certificate file .*missing/);
    expect(() => loadTlsMaterial({ certFile: server.cert, keyFile: alice.key, minVersion: 'TLSv1.2' }, 'peer port')).toThrow(TlsLoadError);
    expect(() => loadTlsMaterial({ certFile: server.cert, keyFile: alice.key, minVersion: 'TLSv1.2' }, 'peer port')).toThrow(/cannot be used together/);
    expect(() => loadTlsMaterial({ certFile: server.cert, keyFile: server.key, caFile: server.key, minVersion: 'TLSv1.2' }, 'peer port')).toThrow(/CA file .* holds no PEM certificate/);
  });

  it('reloads a changed file, and keeps the current certificate when the new files do not load', () => {
    const placed = pki.place(server, 'reload');
    const log = memoryLogger();
    const files = new TlsFiles({ certFile: placed.cert, keyFile: placed.key, minVersion: 'TLSv1.2' }, 'client port', log, 60_000);
    let reloads = 0;
    const stop = files.onReload(() => reloads++);
    try {
      expect(files.check()).toBe(false); // nothing changed
      const original = files.material.cert;

      // Half a rotation: the certificate replaced, the key not yet.
      const next = pki.issue(ca, 'server-2', { cn: 'server' });
      writeFileSync(placed.cert, readFileSync(next.cert));
      expect(files.check()).toBe(false);
      expect(log.lines.filter((l) => l.obj.event === 'tls-reload-failed')).toHaveLength(1);
      expect(files.material.cert).toEqual(original);
      expect(files.check()).toBe(false); // the same broken state is not retried (or logged) again

      // The key follows: the pair loads.
      writeFileSync(placed.key, readFileSync(next.key));
      expect(files.check()).toBe(true);
      expect(files.material.cert).toEqual(readFileSync(next.cert));
      expect(reloads).toBe(1);
      expect(log.lines.find((l) => l.obj.event === 'tls-reloaded')?.obj.serial).toBe(next.serial);
    } finally {
      stop();
    }
  });
});

describe('certificateUser', () => {
  /** An https client port (front listener included) whose handler answers certificateUser(req). */
  async function serve(config: Partial<ClientTlsConfig>): Promise<number> {
    const log = memoryLogger();
    const tls = new ClientPortTls({ certFile: server.cert, keyFile: server.key, minVersion: 'TLSv1.2', clientCertRequired: false, ...config }, log, 60_000);
    const https = tls.createServer({}, (req: IncomingMessage, res: ServerResponse) => res.end(JSON.stringify({ user: certificateUser(req) })));
    const listener = tls.front(https, () => undefined);
    fronts.push({ close: () => tls.close(), listener });
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', () => r()));
    return (listener.address() as AddressInfo).port;
  }

  function whoAmI(port: number, client?: CertFiles): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const req = httpsRequest(
        { host: '127.0.0.1', port, path: '/', agent: false, ca: readFileSync(ca.cert), ...(client === undefined ? {} : { cert: readFileSync(client.cert), key: readFileSync(client.key) }) },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve((JSON.parse(body) as { user: unknown }).user));
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  it('is the CN of a client certificate that verified against --client-ca, and null without one', async () => {
    const port = await serve({ caFile: ca.cert });
    expect(await whoAmI(port, alice)).toBe('alice');
    expect(await whoAmI(port)).toBeNull();
    // A certificate of another CA never names a user: the connection is refused.
    await expect(whoAmI(port, mallory)).rejects.toThrow();
  });

  it('is null when the port asks for no client certificates (no CA)', async () => {
    const port = await serve({});
    expect(await whoAmI(port, alice)).toBeNull();
  });
});

describe('--tls-min-version', () => {
  /** The protocol a handshake settled on, or the error that ended it. */
  function handshake(port: number, maxVersion: 'TLSv1.2' | 'TLSv1.3'): Promise<string> {
    return new Promise((resolve) => {
      const socket = tlsConnect({ host: '127.0.0.1', port, ca: readFileSync(ca.cert), maxVersion }, () => {
        resolve(socket.getProtocol() ?? '?');
        socket.destroy();
      });
      socket.on('error', (err) => resolve(`error: ${err.message}`));
    });
  }

  it('refuses older clients, before and after a reload', async () => {
    const files = pki.place(server, 'min-version');
    const tls = new ClientPortTls({ certFile: files.cert, keyFile: files.key, minVersion: 'TLSv1.3', clientCertRequired: false }, memoryLogger(), 60_000);
    const https = tls.createServer({}, (_req: IncomingMessage, res: ServerResponse) => res.end());
    const listener = tls.front(https, () => undefined);
    fronts.push({ close: () => tls.close(), listener });
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', () => r()));
    const port = (listener.address() as AddressInfo).port;
    expect(await handshake(port, 'TLSv1.3')).toBe('TLSv1.3');
    expect(await handshake(port, 'TLSv1.2')).toMatch(/^error: .*(protocol version|unsupported protocol)/);
    pki.replace(files, pki.issue(ca, 'min-version-2', { cn: 'server' }));
    expect(tls.files.check()).toBe(true);
    expect(await handshake(port, 'TLSv1.2')).toMatch(/^error: .*(protocol version|unsupported protocol)/);
    expect(await handshake(port, 'TLSv1.3')).toBe('TLSv1.3');
  });
});

describe('client URLs with TLS', () => {
  it('members advertise wss:// when their client ports serve TLS (leader hints, /v1/status)', async () => {
    const seed = [
      { id: 'n1', host: '127.0.0.1', peerPort: 2919, clientPort: 1919 },
      { id: 'n2', host: '::1', peerPort: 2920, clientPort: 1920 },
    ];
    const secure = new MemberDirectory('n1', seed, () => wsUrl('127.0.0.1', 1919, true), null, () => undefined, pino({ level: 'silent' }), true);
    await secure.update(initialMembers(seed));
    expect(secure.clientUrl('n1')).toBe('wss://127.0.0.1:1919');
    expect(secure.clientUrl('n2')).toBe('wss://[::1]:1920');
    const plain = new MemberDirectory('n1', seed, () => wsUrl('127.0.0.1', 1919), null, () => undefined, pino({ level: 'silent' }));
    await plain.update(initialMembers(seed));
    expect(plain.clientUrl('n2')).toBe('ws://[::1]:1920');
  });
});
