// The production files in deploy/: the systemd unit passes `systemd-analyze
// verify`, and the example configuration is one `vera start --config` takes
// (with a secret from the environment, as the unit gives it).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildServerConfig } from '../../src/cli/config.js';

const ROOT = join(import.meta.dirname, '../..');

describe('deploy/', () => {
  it('has a systemd unit that systemd-analyze verifies', () => {
    const r = spawnSync('systemd-analyze', ['verify', join(ROOT, 'deploy/vera.service')], { encoding: 'utf8' });
    expect(r.error).toBeUndefined();
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(spawnSync('systemd-analyze', ['verify', join(ROOT, 'test/deploy/broken.service')], { encoding: 'utf8' }).status).not.toBe(0);
  });

  it('has an example configuration that vera start takes', () => {
    const config = buildServerConfig({ flags: new Map([['config', join(ROOT, 'deploy/vera.json')]]), env: { VERA_CLUSTER_SECRET: 'from-the-environment-file' }, cwd: '/' });
    expect(config).toMatchObject({
      id: 'n1',
      dataDir: '/var/lib/vera',
      client: { host: '10.0.0.1', port: 1919 },
      secret: 'from-the-environment-file',
      metricsNeedAuth: true,
      principalLimits: { sessions: 1000, requestsPerSecond: 10_000 },
      clientTls: { certFile: '/etc/vera/tls/n1.pem', caFile: '/etc/vera/tls/ca.pem' },
    });
    expect(config.peers.map((p) => p.id)).toEqual(['n1', 'n2', 'n3']);
  });
});
