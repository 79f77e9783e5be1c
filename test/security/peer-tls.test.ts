// Mutual TLS between members (--peer-cert, --peer-key, --peer-ca): a cluster of
// three real processes whose peer ports speak only TLS elects a leader and
// replicates, with the cluster-secret handshake still on top; a member whose peer
// certificate comes from another CA (a stranger that knows the secret) is refused
// at the TLS handshake both ways and never joins.
import { readFileSync } from 'node:fs';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { Members } from '../membership/support.js';
import { pollUntil } from '../support/poll.js';
import { Pki, type CertFiles } from './pki.js';

let pki: Pki;
let ca: CertFiles;
let strangerCa: CertFiles;
let m: Members;

beforeAll(() => {
  pki = Pki.create();
  ca = pki.ca('cluster-ca');
  strangerCa = pki.ca('stranger-ca');
});
afterAll(async () => {
  await m?.cleanup();
  pki?.remove();
});

/** Each member's certificate files, at fixed paths (so they can be replaced). */
const placed = new Map<string, CertFiles>();

/** --peer-* flags for `id` with a certificate signed by `by` (the member also trusts `by`). */
function peerArgs(id: string, by: CertFiles): string[] {
  const cert = pki.place(pki.issue(by, id, { cn: id }), `peer-${id}`);
  placed.set(id, cert);
  return ['--peer-cert', cert.cert, '--peer-key', cert.key, '--peer-ca', by.cert];
}

/** The serial of the certificate a new TLS connection to `port` is shown (presenting `client`, as a member must). */
function servedSerial(port: number, client: CertFiles): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: readFileSync(ca.cert), cert: readFileSync(client.cert), key: readFileSync(client.key) }, () => {
      const serial = socket.getPeerCertificate().serialNumber;
      socket.destroy();
      resolve(serial.toUpperCase().replace(/^0+(?=.)/, ''));
    });
    socket.on('error', reject);
  });
}

describe('mutual TLS between members', () => {
  it('a cluster of three elects a leader and replicates over TLS', async () => {
    m = await Members.plan(['n1', 'n2', 'n3', 'n4']);
    const three = ['n1', 'n2', 'n3'];
    const peers = m.peersFlag(three);
    await Promise.all(three.map((id) => m.start(id, { peers, args: peerArgs(id, ca) })));
    for (const id of three) {
      expect(m.proc(id).logs.find((l) => l.event === 'peer.listening')).toMatchObject({ tls: true });
      expect(m.proc(id).logs.find((l) => l.event === 'started')).toMatchObject({ peerTls: true, clientTls: false });
    }
    await m.leader(three);
    const items = ['a', 'b', 'c'];
    await m.pushAll(three, '/peer-tls', items);
    for (const id of three) await m.holds(id, '/peer-tls', items);
    // Every member authenticated every other one (the secret handshake, inside TLS).
    for (const id of three) {
      for (const other of three.filter((o) => o !== id)) await m.waitForLog(id, (l) => l.event === 'peer.connected' && l.peer === other);
    }
  });

  it('a member serves a peer certificate replaced on disk without a restart, and the cluster carries on', async () => {
    const three = ['n1', 'n2', 'n3'];
    const files = placed.get('n1')!;
    const port = m.spec('n1').peerPort;
    expect(await servedSerial(port, placed.get('n2')!)).toBe(files.serial);
    const next = pki.issue(ca, 'n1-next', { cn: 'n1' });
    pki.replace(files, next);
    await m.waitForLog('n1', (l) => l.event === 'tls-reloaded' && l.port === 'peer port' && l.serial === next.serial, 10_000);
    await pollUntil('n1\'s peer port to show the new certificate', async () => ((await servedSerial(port, placed.get('n2')!)) === next.serial ? true : undefined), 10_000);
    await m.push(three, '/peer-tls', 'after-rotation');
    for (const id of three) await m.holds(id, '/peer-tls', ['a', 'b', 'c', 'after-rotation']);
  });

  it('a member with a certificate from another CA is refused both ways and never joins', async () => {
    const three = ['n1', 'n2', 'n3'];
    const leader = await m.leader(three);
    const n4 = m.spec('n4');
    const add = await m.cli(['member', 'add', 'n4', '--peer', `127.0.0.1:${n4.peerPort}`, '--client', `127.0.0.1:${n4.clientPort}`, '--server', m.url(leader)]);
    expect(add.err).toBe('');
    expect(add.code).toBe(0);
    // The stranger knows the cluster secret (Members gives every member the same); only its certificate is wrong.
    await m.start('n4', { peers: m.peersFlag([...three, 'n4']), args: ['--join', ...peerArgs('n4', strangerCa)] });

    // The leader dials n4 to replicate to it: n4's certificate does not verify against the cluster CA ...
    const outbound = await m.waitForLog(leader, (l) => l.event === 'peer.tlsRefused' && l.peer === 'n4' && l.direction === 'outbound');
    expect(String(outbound.err)).toMatch(/certificate/i);
    // ... and n4 saw that dial's TLS handshake fail (its CA does not know the leader's certificate either).
    await m.waitForLog('n4', (l) => l.event === 'peer.tlsRefused' && l.direction === 'inbound');

    // A stranger dialing a member's peer port is refused at the handshake: the member asks for a certificate of its CA.
    const stranger = pki.issue(strangerCa, 'stranger-dial', { cn: 'n4' });
    const dial = await new Promise<string>((resolve) => {
      const ws = new WebSocket(`wss://127.0.0.1:${m.spec('n1').peerPort}/vera/peer`, {
        ca: readFileSync(ca.cert),
        cert: readFileSync(stranger.cert),
        key: readFileSync(stranger.key),
      });
      ws.on('open', () => {
        ws.terminate();
        resolve('open');
      });
      ws.on('error', (err) => resolve(err.message));
    });
    expect(dial).not.toBe('open');
    const refused = await m.waitForLog('n1', (l) => l.event === 'peer.tlsRefused' && l.direction === 'inbound' && String(l.msg).includes('does not verify'));
    expect(refused.msg).toMatch(/^refused a peer connection from 127\.0\.0\.1:\d+: its certificate does not verify against --peer-ca \([A-Z_]+\)$/);
    // Nor does a plaintext dial get anywhere.
    const plain = await new Promise<string>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${m.spec('n1').peerPort}/vera/peer`);
      ws.on('open', () => {
        ws.terminate();
        resolve('open');
      });
      ws.on('error', (err) => resolve(err.message));
    });
    expect(plain).not.toBe('open');

    // n4 never learned the cluster (no member ever authenticated to it), and the leader has replicated nothing to it.
    expect(m.proc('n4').logs.some((l) => l.event === 'peer.clusterLearned' || l.event === 'peer.connected')).toBe(false);
    const members = await m.admin(leader, 'GET', '/v1/members');
    const line = (members.body.members as Array<{ id: string; role: string; match?: number }>).find((x) => x.id === 'n4');
    expect(line).toMatchObject({ role: 'learner', match: 0 });
    expect((await m.status('n4')).leader).toBeNull();

    // The cluster carries on without it.
    await m.push(three, '/peer-tls', 'd');
    for (const id of three) await m.holds(id, '/peer-tls', ['a', 'b', 'c', 'after-rotation', 'd']);
  });
});
