// Certificates made at test time with the openssl command: certificate
// authorities, and certificates they sign for servers (127.0.0.1 and localhost in
// subjectAltName) and clients (a CN that names the user), expired ones included.

import { execFileSync } from 'node:child_process';
import { request as httpsRequest } from 'node:https';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CertFiles {
  /** PEM certificate. */
  readonly cert: string;
  /** PEM private key. */
  readonly key: string;
  /** Hex serial number, as Node's getPeerCertificate() shows it (upper case). */
  readonly serial: string;
}

export interface IssueOptions {
  /** Subject CN. */
  readonly cn: string;
  /** Days of validity; negative: expired already. Default 2. */
  readonly days?: number;
  /** subjectAltName; default IP:127.0.0.1 and DNS:localhost. */
  readonly san?: string;
}

function openssl(args: readonly string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A temporary directory of certificates; remove() deletes it. */
export class Pki {
  private constructor(readonly dir: string) {}

  static create(): Pki {
    return new Pki(mkdtempSync(join(tmpdir(), 'vera-pki-')));
  }

  /** A self-signed CA (basicConstraints CA:TRUE, from openssl's v3_ca section). */
  ca(name: string): CertFiles {
    const cert = join(this.dir, `${name}.pem`);
    const key = join(this.dir, `${name}.key`);
    openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '3', '-subj', `/CN=${name}`], this.dir);
    return { cert, key, serial: serialOf(cert) };
  }

  /** A certificate for `name` signed by `ca`, with a fresh random serial. */
  issue(ca: CertFiles, name: string, options: IssueOptions): CertFiles {
    const sub = join(this.dir, `${name}-${randomBytes(4).toString('hex')}`);
    mkdirSync(sub);
    const key = join(sub, 'key.pem');
    const csr = join(sub, 'req.csr');
    const cert = join(sub, 'cert.pem');
    const ext = join(sub, 'ext.cnf');
    writeFileSync(ext, `subjectAltName=${options.san ?? 'IP:127.0.0.1,DNS:localhost'}\n`);
    openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${options.cn}`], sub);
    const serial = `0x${randomBytes(8).toString('hex').replace(/^0/, '1')}`;
    openssl(['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-set_serial', serial, '-days', String(options.days ?? 2), '-extfile', ext, '-out', cert], sub);
    return { cert, key, serial: serialOf(cert) };
  }

  /** Copies `from` to fixed paths `name.pem` and `name.key` (what a member is started with). */
  place(from: CertFiles, name: string): CertFiles {
    const cert = join(this.dir, `${name}.pem`);
    const key = join(this.dir, `${name}.key`);
    copyFileSync(from.cert, cert);
    copyFileSync(from.key, key);
    return { cert, key, serial: from.serial };
  }

  /** Replaces `at`'s files with `from`'s the way an operator would: each written beside, then renamed over. */
  replace(at: CertFiles, from: CertFiles): void {
    for (const [src, dst] of [[from.key, at.key], [from.cert, at.cert]] as const) {
      const temporary = `${dst}.new`;
      writeFileSync(temporary, readFileSync(src));
      renameSync(temporary, dst);
    }
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The serial as Node reports it: upper-case hex without leading zeros. */
function serialOf(cert: string): string {
  const out = execFileSync('openssl', ['x509', '-in', cert, '-noout', '-serial'], { encoding: 'utf8' });
  return out.trim().replace(/^serial=/, '').replace(/^0+(?=.)/, '').toUpperCase();
}

/** GET over https trusting `caFile`; status and body. */
export function httpsGet(port: number, path: string, caFile: string, client?: CertFiles): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: '127.0.0.1', port, path, agent: false, ca: readFileSync(caFile), ...(client === undefined ? {} : { cert: readFileSync(client.cert), key: readFileSync(client.key) }), timeout: 5000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

