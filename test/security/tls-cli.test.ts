// TLS from the command line: `vera start`'s TLS flags as validated into
// ServerConfig, and the client verbs, status, member and snapshot save over
// wss:// and https:// with --ca (or $VERA_CA) and, for a member that demands
// client certificates, --cert and --key.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseArgs } from '../../src/cli/args.js';
import { buildServerConfig, START_FLAGS, type ServerConfig } from '../../src/cli/config.js';
import { UsageError } from '../../src/cli/errors.js';
import { main } from '../../src/cli/main.js';
import { captureIO } from '../client/cli-io.js';
import { startLeader } from '../server/fixture.js';
import { killAll } from '../support/vera-process.js';
import { Pki, type CertFiles } from './pki.js';

const CWD = '/srv/vera';

function config(argv: string[]): ServerConfig {
  const args = parseArgs(argv, START_FLAGS, 'vera start');
  return buildServerConfig({ flags: args.flags, env: {}, cwd: CWD });
}

function usageError(argv: string[]): string {
  try {
    config(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error(`expected ${argv.join(' ')} to be rejected`);
}

describe('vera start TLS flags', () => {
  it('configure the client port and the peer port, paths resolved against the working directory', () => {
    const c = config(['--client-cert', 'tls/c.pem', '--client-key', '/etc/k.pem', '--client-ca', 'ca.pem', '--client-cert-required', '--peer-cert', 'p.pem', '--peer-key', 'p.key', '--peer-ca', 'pca.pem', '--secret', 's', '--tls-min-version', 'TLSv1.3']);
    expect(c.clientTls).toEqual({ certFile: '/srv/vera/tls/c.pem', keyFile: '/etc/k.pem', caFile: '/srv/vera/ca.pem', clientCertRequired: true, minVersion: 'TLSv1.3' });
    expect(c.peerTls).toEqual({ certFile: '/srv/vera/p.pem', keyFile: '/srv/vera/p.key', caFile: '/srv/vera/pca.pem', minVersion: 'TLSv1.3' });
    const plain = config([]);
    expect(plain.clientTls).toBeUndefined();
    expect(plain.peerTls).toBeUndefined();
    expect(config(['--client-cert', 'c', '--client-key', 'k']).clientTls).toEqual({ certFile: '/srv/vera/c', keyFile: '/srv/vera/k', clientCertRequired: false, minVersion: 'TLSv1.2' });
  });

  it('refuses incomplete or contradictory TLS settings', () => {
    expect(usageError(['--client-cert', 'c'])).toMatch(/--client-cert and --client-key go together/);
    expect(usageError(['--peer-key', 'k', '--secret', 's'])).toMatch(/--peer-cert and --peer-key go together/);
    expect(usageError(['--client-ca', 'ca'])).toMatch(/--client-ca needs --client-cert and --client-key/);
    expect(usageError(['--client-cert', 'c', '--client-key', 'k', '--client-cert-required'])).toMatch(/--client-cert-required needs --client-ca/);
    expect(usageError(['--peer-cert', 'c', '--peer-key', 'k'])).toMatch(/--peer-cert needs the cluster's shared secret/);
    expect(usageError(['--client-cert', 'c', '--client-key', 'k', '--tls-min-version', 'TLSv1.1'])).toMatch(/--tls-min-version must be one of TLSv1.2, TLSv1.3/);
    expect(usageError(['--tls-min-version', 'TLSv1.3'])).toMatch(/no port serves TLS/);
  });

  it('a member whose certificate files do not load refuses to start, saying which file', async () => {
    const io = captureIO({ cwd: tmpdir() });
    const dir = mkdtempSync(join(tmpdir(), 'vera-tls-start-'));
    try {
      const code = await main(['start', '--data', join(dir, 'data'), '--client', '127.0.0.1:0', '--client-cert', join(dir, 'missing.pem'), '--client-key', join(dir, 'missing.key'), '--log-level', 'silent'], io);
      expect(code).toBe(1);
      expect(io.err()).toMatch(/cannot start: cannot read the client port certificate file .*missing\.pem/);
      // Nothing was created: the certificates are checked before the store is opened.
      expect(existsSync(join(dir, 'data'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the CLI over TLS', () => {
  let pki: Pki;
  let ca: CertFiles;
  let server: CertFiles;
  let client: CertFiles;
  let dir: string;
  beforeAll(() => {
    pki = Pki.create();
    ca = pki.ca('cli-ca');
    server = pki.issue(ca, 'server', { cn: 'n1' });
    client = pki.issue(ca, 'operator', { cn: 'operator' });
    dir = mkdtempSync(join(tmpdir(), 'vera-tls-cli-'));
  });
  afterEach(() => killAll());
  afterAll(() => {
    pki?.remove();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  async function vera(argv: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
    const io = captureIO({ env, cwd: dir });
    const code = await main(argv, io);
    return { code, out: io.out(), err: io.err() };
  }

  it('push, get, status, member list and snapshot save work over wss:// and https:// with --ca or $VERA_CA; without it the certificate is refused', async () => {
    const vp = await startLeader({ args: ['--client-cert', server.cert, '--client-key', server.key] });
    const url = `wss://127.0.0.1:${vp.clientPort}`;
    const push = await vera(['push', '/cli/tls', '"secret"', '--persistent', '--server', url, '--ca', ca.cert, '--json']);
    expect(push.err).toBe('');
    expect(push.code).toBe(0);
    const get = await vera(['get', '/cli/tls', '--server', url, '--json'], { VERA_CA: ca.cert });
    expect(get.code).toBe(0);
    expect((JSON.parse(get.out) as { items: Array<{ data: unknown }> }).items.map((i) => i.data)).toEqual(['secret']);

    const status = await vera(['status', '--server', url, '--ca', ca.cert, '--json']);
    expect(status.err).toBe('');
    expect(JSON.parse(status.out)).toMatchObject({ role: 'leader', leaderUrl: url });
    // An https:// address is the same server.
    expect((await vera(['status', '--server', `https://127.0.0.1:${vp.clientPort}`, '--ca', ca.cert])).code).toBe(0);

    const members = await vera(['member', 'list', '--server', url, '--ca', ca.cert, '--json']);
    expect(members.err).toBe('');
    expect(JSON.parse(members.out)).toMatchObject({ role: 'leader', members: [{ id: 'n1', role: 'voter' }] });

    const saved = await vera(['snapshot', 'save', 'backup.vera', '--server', url, '--ca', ca.cert, '--json']);
    expect(saved.err).toBe('');
    expect(saved.code).toBe(0);
    expect(existsSync(join(dir, 'backup.vera'))).toBe(true);

    // Without the CA: the server's certificate is not trusted, and the CLI says so.
    const refusedWs = await vera(['get', '/cli/tls', '--server', url, '--timeout', '1000']);
    expect(refusedWs.code).toBe(3);
    expect(refusedWs.err).toMatch(/certificate/i);
    const refusedHttp = await vera(['status', '--server', url]);
    expect(refusedHttp.code).toBe(3);
    expect(refusedHttp.err).toMatch(/certificate/i);
    // A CA file that is not there is a usage error.
    expect((await vera(['status', '--server', url, '--ca', 'nowhere.pem'])).err).toMatch(/--ca \(or \$VERA_CA\): cannot read nowhere\.pem/);
  });

  it('--cert and --key present a client certificate to a member that requires one', async () => {
    const vp = await startLeader({ args: ['--client-cert', server.cert, '--client-key', server.key, '--client-ca', ca.cert, '--client-cert-required'] });
    const url = `wss://127.0.0.1:${vp.clientPort}`;
    const tls = ['--ca', ca.cert, '--cert', client.cert, '--key', client.key];
    expect((await vera(['push', '/cli/mtls', '1', '--persistent', '--server', url, ...tls])).code).toBe(0);
    expect((await vera(['status', '--server', url, ...tls])).code).toBe(0);
    expect((await vera(['status', '--server', url], { VERA_CA: ca.cert, VERA_CERT: client.cert, VERA_KEY: client.key })).code).toBe(0);
    // Without one: refused.
    expect((await vera(['get', '/cli/mtls', '--server', url, '--ca', ca.cert, '--timeout', '1000'])).code).toBe(3);
    expect((await vera(['status', '--server', url, '--ca', ca.cert])).code).toBe(3);
    expect((await vera(['status', '--server', url, '--ca', ca.cert, '--cert', client.cert])).err).toMatch(/--cert and --key go together/);
  });
});
