// TLS on the client port (docs/security.md "TLS"): a member started with
// --client-cert/--client-key serves https and wss. A client that trusts its CA
// works; one with another CA, or facing an expired certificate, is refused with a
// certificate error; a plaintext client is told the port speaks TLS; certificates
// replaced on disk are served to new connections without a restart (and a broken
// replacement keeps the old one). With --client-ca, client certificates are asked
// for and verified, and certificateUser() names the one presented.
import { connect as netConnect } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { connect, type VeraClient } from '../../src/client/index.js';
import { pollUntil } from '../support/poll.js';
import { killAll } from '../support/vera-process.js';
import { startLeader } from '../server/fixture.js';
import { httpsGet, Pki, type CertFiles } from './pki.js';

let pki: Pki;
let ca: CertFiles;
let otherCa: CertFiles;
let serverCert: CertFiles;
let expiredCert: CertFiles;
let alice: CertFiles;
let mallory: CertFiles;

beforeAll(() => {
  pki = Pki.create();
  ca = pki.ca('vera-ca');
  otherCa = pki.ca('other-ca');
  serverCert = pki.issue(ca, 'server', { cn: 'vera-n1' });
  expiredCert = pki.issue(ca, 'expired', { cn: 'vera-n1', days: -1 });
  alice = pki.issue(ca, 'alice', { cn: 'alice' });
  mallory = pki.issue(otherCa, 'mallory', { cn: 'mallory' });
});

const clients: VeraClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  await killAll();
});
afterAll(() => pki?.remove());

const pem = (path: string): Buffer => readFileSync(path);

function tlsArgs(cert: CertFiles, extra: readonly string[] = []): string[] {
  return ['--client-cert', cert.cert, '--client-key', cert.key, ...extra];
}

async function open(url: string, options: Parameters<typeof connect>[1] = {}): Promise<VeraClient> {
  const c = await connect(url, { connectTimeoutMs: 3000, requestTimeoutMs: 5000, ...options });
  clients.push(c);
  return c;
}

/** Why connect() failed (it must fail). */
async function refusal(url: string, options: Parameters<typeof connect>[1] = {}): Promise<string> {
  try {
    const c = await connect(url, { connectTimeoutMs: 2500, requestTimeoutMs: 2500, ...options });
    clients.push(c);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`connecting to ${url} worked`);
}

/** The serial number of the certificate a new TLS connection to `port` is shown. */
function servedSerial(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: pem(ca.cert) }, () => {
      const serial = socket.getPeerCertificate().serialNumber;
      socket.end();
      resolve(normalSerial(serial));
    });
    socket.on('error', reject);
  });
}

const normalSerial = (s: string): string => s.toUpperCase().replace(/^0+(?=.)/, '');

describe('TLS on the client port', () => {
  it('serves wss and https to a client that trusts its CA: hello, push, get, status with wss:// URLs', async () => {
    const vp = await startLeader({ args: tlsArgs(serverCert) });
    expect(vp.logs.find((l) => l.event === 'started')).toMatchObject({ clientTls: true, peerTls: false });
    const url = `wss://127.0.0.1:${vp.clientPort}`;
    const c = await open(url, { ca: pem(ca.cert) });
    expect(c.session).toMatch(/./);
    const item = await c.push('/tls/a', { hello: 'over tls' }, { persistent: true });
    const got = await c.get('/tls/a');
    expect(got.items.map((i) => i.data)).toEqual([{ hello: 'over tls' }]);
    expect(got.items[0]!.index).toBe(item.index);
    // https too, and the member names itself by a wss:// URL.
    const status = await httpsGet(vp.clientPort, '/v1/status', ca.cert);
    expect(status.status).toBe(200);
    const body = JSON.parse(status.body) as { leaderUrl: string; members: Array<{ clientUrl: string }> };
    expect(body.leaderUrl).toBe(`wss://127.0.0.1:${vp.clientPort}`);
    expect(body.members[0]!.clientUrl).toBe(`wss://127.0.0.1:${vp.clientPort}`);
    // It stops cleanly with a session open and a socket that never finished its TLS handshake.
    const silent = netConnect({ host: '127.0.0.1', port: vp.clientPort });
    await new Promise((resolve) => silent.once('connect', resolve));
    const t0 = performance.now();
    expect(await vp.stop()).toBe(0);
    expect(performance.now() - t0).toBeLessThan(5000);
    silent.destroy();
  });

  it('is refused by a client that trusts another CA, with a certificate error', async () => {
    const vp = await startLeader({ args: tlsArgs(serverCert) });
    const why = await refusal(`wss://127.0.0.1:${vp.clientPort}`, { ca: pem(otherCa.cert) });
    expect(why).toMatch(/certificate/i);
    // Nor does a client without any CA option trust a private CA.
    expect(await refusal(`wss://127.0.0.1:${vp.clientPort}`)).toMatch(/certificate/i);
  });

  it('an expired server certificate is refused by the client, and the member warns of it at start', async () => {
    const vp = await startLeader({ args: tlsArgs(expiredCert) });
    expect(vp.logs.some((l) => l.event === 'tls-certificate-expired')).toBe(true);
    const why = await refusal(`wss://127.0.0.1:${vp.clientPort}`, { ca: pem(ca.cert) });
    expect(why).toMatch(/certificate has expired/i);
  });

  it('a plaintext client is told the port speaks TLS (ws://, the client library, and http://)', async () => {
    const vp = await startLeader({ args: tlsArgs(serverCert) });
    // The client library says what the server answered.
    const why = await refusal(`ws://127.0.0.1:${vp.clientPort}`);
    expect(why).toMatch(/400: this port speaks TLS; use https:\/\/ or wss:\/\//);
    // A bare WebSocket sees a 400.
    const status = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${vp.clientPort}/v1/connect`);
      ws.on('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        ws.terminate();
      });
      ws.on('open', () => reject(new Error('a plaintext WebSocket was accepted')));
      ws.on('error', reject);
    });
    expect(status).toBe(400);
    // And plain HTTP gets the reason in the body, naming the URL to use.
    const res = await fetch(`http://127.0.0.1:${vp.clientPort}/v1/status`, { signal: AbortSignal.timeout(5000) });
    expect(res.status).toBe(400);
    expect(await res.text()).toBe(`this port speaks TLS; use https:// or wss:// (wss://127.0.0.1:${vp.clientPort} or https://127.0.0.1:${vp.clientPort})\n`);
    // The member still serves TLS clients after that.
    await open(`wss://127.0.0.1:${vp.clientPort}`, { ca: pem(ca.cert) });
  });

  it('serves a replaced certificate to new connections without a restart; a broken replacement keeps the old one', async () => {
    const files = pki.place(serverCert, 'rotating');
    const vp = await startLeader({ args: tlsArgs(files) });
    const port = vp.clientPort;
    expect(await servedSerial(port)).toBe(normalSerial(serverCert.serial));
    const before = await open(`wss://127.0.0.1:${port}`, { ca: pem(ca.cert) });

    const next = pki.issue(ca, 'server-next', { cn: 'vera-n1' });
    expect(next.serial).not.toBe(serverCert.serial);
    pki.replace(files, next);
    await pollUntil('a new connection to be shown the new certificate', async () => ((await servedSerial(port)) === normalSerial(next.serial) ? true : undefined), 10_000);
    await vp.waitForLog((l) => l.event === 'tls-reloaded' && l.serial !== undefined && normalSerial(String(l.serial)) === normalSerial(next.serial));
    // The connection opened before the rotation carries on.
    await before.push('/rotated', 1, { persistent: true });
    await open(`wss://127.0.0.1:${port}`, { ca: pem(ca.cert) });

    // A key that is not a key: logged, and the current certificate stays.
    writeFileSync(files.key, 'not a key\n');
    await vp.waitForLog((l) => l.event === 'tls-reload-failed', 10_000);
    expect(await servedSerial(port)).toBe(normalSerial(next.serial));
    await open(`wss://127.0.0.1:${port}`, { ca: pem(ca.cert) });
  });

  it('admission counts TLS sockets: a silent one is cut after the hello timeout, a session is not', async () => {
    const vp = await startLeader({ args: tlsArgs(serverCert, ['--hello-timeout', '500ms']) });
    const c = await open(`wss://127.0.0.1:${vp.clientPort}`, { ca: pem(ca.cert) });
    let lost = false;
    c.on('disconnected', () => (lost = true));
    const silent = netConnect({ host: '127.0.0.1', port: vp.clientPort });
    const cut = new Promise<number>((resolve) => silent.once('close', () => resolve(performance.now())));
    const opened = performance.now();
    silent.on('error', () => undefined);
    // The silent socket goes at the hello timeout ...
    expect((await cut) - opened).toBeGreaterThanOrEqual(400);
    // ... and the session, whose socket sent its request long ago, is still there (well past the timeout).
    await c.push('/admission', 'still here', { persistent: true });
    expect(lost).toBe(false);
  });

  describe('client certificates (--client-ca)', () => {
    it('are optional by default: verified when presented (a stranger\'s refused), anonymous clients served', async () => {
      const vp = await startLeader({ args: tlsArgs(serverCert, ['--client-ca', ca.cert]) });
      const url = `wss://127.0.0.1:${vp.clientPort}`;
      await open(url, { ca: pem(ca.cert), cert: pem(alice.cert), key: pem(alice.key) });
      await open(url, { ca: pem(ca.cert) });
      // A certificate from another CA is refused, not treated as none.
      await refusal(url, { ca: pem(ca.cert), cert: pem(mallory.cert), key: pem(mallory.key) });
      await vp.waitForLog((l) => l.event === 'tls-client-refused');
    });

    it('with --client-cert-required, a client without a certificate is refused', async () => {
      const vp = await startLeader({ args: tlsArgs(serverCert, ['--client-ca', ca.cert, '--client-cert-required']) });
      const url = `wss://127.0.0.1:${vp.clientPort}`;
      const c = await open(url, { ca: pem(ca.cert), cert: pem(alice.cert), key: pem(alice.key) });
      await c.push('/mtls', 'alice was here', { persistent: true });
      const why = await refusal(url, { ca: pem(ca.cert) });
      expect(why).toMatch(/certificate|socket hang up|ECONNRESET|closed/i);
      expect((await httpsGet(vp.clientPort, '/v1/status', ca.cert, alice)).status).toBe(200);
      await expect(httpsGet(vp.clientPort, '/v1/status', ca.cert)).rejects.toThrow();
    });
  });
});
