// A client certificate is an identity: with authentication on, a client that
// presents a certificate verified against --client-ca is the user its CN
// names, over the WebSocket and over HTTPS, without a password or token; a
// certificate naming no user is refused like a wrong password.
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../src/client/index.js';
import { AuthClient } from '../../src/families/auth/client.js';
import { VeraError } from '../../src/protocol/index.js';
import { startLeader, untilCommandVersion } from '../server/fixture.js';
import { killAll } from '../support/vera-process.js';
import { httpsGet, Pki, type CertFiles } from './pki.js';

let pki: Pki;
let ca: CertFiles;
let server: CertFiles;
let alice: CertFiles;
let carol: CertFiles;

beforeAll(() => {
  pki = Pki.create();
  ca = pki.ca('id-ca');
  server = pki.issue(ca, 'server', { cn: 'vera-n1' });
  alice = pki.issue(ca, 'alice', { cn: 'alice' });
  carol = pki.issue(ca, 'carol', { cn: 'carol' });
});
const clients: VeraClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  await killAll();
});
afterAll(() => pki?.remove());

const pem = (path: string): Buffer => readFileSync(path);

describe('client certificates as identities', () => {
  it('authenticate the user the CN names, judged by its roles, and refuse a CN that is no user', async () => {
    const vp = await startLeader({ args: ['--client-cert', server.cert, '--client-key', server.key, '--client-ca', ca.cert] });
    const url = `wss://127.0.0.1:${vp.clientPort}`;
    const tls = { ca: pem(ca.cert), connectTimeoutMs: 3000, requestTimeoutMs: 5000 };
    const setup = await connect(url, tls);
    clients.push(setup);
    const admin = new AuthClient(setup);
    await untilCommandVersion(() => admin.addUser('root', 'root-pw'));
    await admin.grantRole('root', 'root');
    await admin.addUser('alice'); // no password: a certificate is its only way in
    await admin.addRole('writer');
    await admin.grantPermission('writer', '/a', ['read', 'write']);
    await admin.grantRole('alice', 'writer');
    await admin.enable();

    const asAlice = await connect(url, { ...tls, cert: pem(alice.cert), key: pem(alice.key) });
    clients.push(asAlice);
    expect(await new AuthClient(asAlice).status()).toEqual({ enabled: true, user: 'alice' });
    await asAlice.push('/a/x', 'by certificate', { persistent: true });
    await expect(asAlice.push('/b/x', 'no')).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect((await httpsGet(vp.clientPort, '/v1/data/a/x', ca.cert, alice)).status).toBe(200);
    expect((await httpsGet(vp.clientPort, '/v1/data/b/x', ca.cert, alice)).status).toBe(403);

    // carol's certificate is good, but no user is called carol.
    const refused = await connect(url, { ...tls, connectTimeoutMs: 1500, cert: pem(carol.cert), key: pem(carol.key) }).then(
      (c) => (clients.push(c), null),
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(VeraError);
    expect((refused as VeraError).code).toBe('UNAUTHORIZED');
    expect((refused as VeraError).message).toMatch(/names carol, who is not a user here/);
    expect((await httpsGet(vp.clientPort, '/v1/data/a/x', ca.cert, carol)).status).toBe(401);
  });
});
