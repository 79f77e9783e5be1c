import { describe, expect, it } from 'vitest';
import { parseArgs } from '../../src/cli/args.js';
import { buildServerConfig, START_FLAGS, type ServerConfig } from '../../src/cli/config.js';
import { UsageError } from '../../src/cli/errors.js';
import { main } from '../../src/cli/main.js';
import { captureIO } from './cli-io.js';

const CWD = '/srv/vera';

function config(argv: string[], options: { env?: Record<string, string>; files?: Record<string, string> } = {}): ServerConfig {
  const args = parseArgs(argv, START_FLAGS, 'vera start');
  return buildServerConfig({
    flags: args.flags,
    env: options.env ?? {},
    cwd: CWD,
    readFile: (path) => {
      const text = options.files?.[path];
      if (text === undefined) throw new Error(`ENOENT: no such file, open '${path}'`);
      return text;
    },
  });
}

function usageError(argv: string[], options: Parameters<typeof config>[1] = {}): string {
  try {
    config(argv, options);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error(`expected ${argv.join(' ')} to be rejected`);
}

describe('vera start configuration', () => {
  it('defaults to a single-node server on 127.0.0.1:1919 with data in ./vera-data', () => {
    expect(config([])).toEqual({
      id: 'n1',
      dataDir: '/srv/vera/vera-data',
      client: { host: '127.0.0.1', port: 1919 },
      peer: { host: '127.0.0.1', port: 2919 },
      peers: [{ id: 'n1', host: '127.0.0.1', peerPort: 2919, clientPort: 1919 }],
      secret: null,
      logLevel: 'info',
      sessionTimeout: { min: 1000, max: 60000, default: 10000 },
      limits: { dataBytes: 1048576, frameBytes: 16777216, pathBytes: 1024, sessionsMax: 10000, sessionsPerAddress: 1000, watchesPerSession: 1000, itemsPerSession: 100_000, bytesPerSession: 256 * 1024 * 1024, itemsPerList: 1_000_000, diskReserveBytes: 64 * 1024 * 1024, inflightPerConnection: 256, connectionsMax: 10000, connectionsPerAddress: 256, helloTimeoutMs: 10000 },
      compaction: { everyEntries: 10000, keepEntries: 1000 },
      principalLimits: { connections: 1000, sessions: 1000, watches: 100_000, requestsPerSecond: 10_000, items: 1_000_000, bytes: 1024 ** 3 },
      join: false,
    });
  });

  it('takes the limits per user', () => {
    expect(
      config(['--connections-per-user', '5', '--sessions-per-user', '6', '--watches-per-user', '7', '--requests-per-user', '8', '--items-per-user', '9', '--bytes-per-user', '10KiB']).principalLimits,
    ).toEqual({ connections: 5, sessions: 6, watches: 7, requestsPerSecond: 8, items: 9, bytes: 10 * 1024 });
    expect(usageError(['--bytes-per-user', 'lots'])).toMatch(/bytes-per-user/);
    expect(usageError(['--requests-per-user', 'many'])).toMatch(/requests-per-user/);
  });

  it('takes every flag of PROTOCOL.md "Starting servers" exactly as written', () => {
    const c = config([
      '--id', 'n2',
      '--data', 'd2',
      '--client', '127.0.0.1:1920',
      '--peer', '127.0.0.1:2920',
      '--peers', 'n1=127.0.0.1:2919/1919,n2=127.0.0.1:2920/1920,n3=127.0.0.1:2921/1921',
      '--secret', 's3cret',
    ]);
    expect(c).toMatchObject({
      id: 'n2',
      dataDir: '/srv/vera/d2',
      client: { host: '127.0.0.1', port: 1920 },
      peer: { host: '127.0.0.1', port: 2920 },
      secret: 's3cret',
      peers: [
        { id: 'n1', host: '127.0.0.1', peerPort: 2919, clientPort: 1919 },
        { id: 'n2', host: '127.0.0.1', peerPort: 2920, clientPort: 1920 },
        { id: 'n3', host: '127.0.0.1', peerPort: 2921, clientPort: 1921 },
      ],
    });
  });

  it('accepts --flag=value, absolute data dirs, port 0 for the client, IPv6 and host names', () => {
    const c = config(['--id=a.b-c_1', '--data=/var/lib/vera', '--client=[::1]:0', '--peer', 'vera-1.internal:2919']);
    expect(c).toMatchObject({ id: 'a.b-c_1', dataDir: '/var/lib/vera', client: { host: '::1', port: 0 }, peer: { host: 'vera-1.internal', port: 2919 } });
  });

  it('takes the secret from VERA_CLUSTER_SECRET, with --secret winning', () => {
    const peers = ['--peers', 'n1=127.0.0.1:2919/1919,n2=127.0.0.1:2920/1920'];
    expect(config(peers, { env: { VERA_CLUSTER_SECRET: 'from-env' } }).secret).toBe('from-env');
    expect(config([...peers, '--secret', 'from-flag'], { env: { VERA_CLUSTER_SECRET: 'from-env' } }).secret).toBe('from-flag');
  });

  it('listens where its own --peers entry says when --client/--peer are not given', () => {
    const c = config(['--id', 'n2', '--secret', 's', '--peers', 'n1=10.0.0.1:2919/1919,n2=10.0.0.2:2929/1929']);
    expect(c.client).toEqual({ host: '10.0.0.2', port: 1929 });
    expect(c.peer).toEqual({ host: '10.0.0.2', port: 2929 });
  });

  it('parses the extra flags: log level, session timeouts, limits', () => {
    const c = config([
      '--log-level', 'debug',
      '--session-timeout-min', '500ms',
      '--session-timeout-max', '2m',
      '--data-limit', '4MiB',
      '--frame-limit', '32MiB',
      '--sessions-max', '50',
      '--watches-per-session', '7',
      '--sessions-per-address', '11',
      '--items-per-session', '12',
      '--bytes-per-session', '13KiB',
      '--items-per-list', '14',
      '--disk-reserve', '15MiB',
      '--connections-max', '300',
      '--connections-per-address', '20',
      '--hello-timeout', '2500ms',
      '--inflight-per-connection', '9',
    ]);
    expect(c.logLevel).toBe('debug');
    expect(c.sessionTimeout).toEqual({ min: 500, max: 120_000, default: 10_000 });
    expect(c.limits).toEqual({ dataBytes: 4 * 1024 * 1024, frameBytes: 32 * 1024 * 1024, pathBytes: 1024, sessionsMax: 50, sessionsPerAddress: 11, watchesPerSession: 7, itemsPerSession: 12, bytesPerSession: 13 * 1024, itemsPerList: 14, diskReserveBytes: 15 * 1024 * 1024, inflightPerConnection: 9, connectionsMax: 300, connectionsPerAddress: 20, helloTimeoutMs: 2500 });
  });

  it('clamps the default session timeout into [min, max]', () => {
    expect(config(['--session-timeout-min', '20s', '--session-timeout-max', '30s']).sessionTimeout).toEqual({ min: 20_000, max: 30_000, default: 20_000 });
    expect(config(['--session-timeout-max', '3s']).sessionTimeout).toEqual({ min: 1000, max: 3000, default: 3000 });
  });

  it('reads a JSON config file keyed by flag names, flags winning', () => {
    const files = {
      '/srv/vera/vera.json': JSON.stringify({
        id: 'n3',
        data: '/data/n3',
        peers: ['n1=127.0.0.1:2919/1919', { id: 'n3', host: '127.0.0.1', peerPort: 2921, clientPort: 1921 }],
        secret: 'file-secret',
        'data-limit': 2048 * 1024,
        'session-timeout-max': '45s',
      }),
    };
    const c = config(['--config', 'vera.json', '--data', '/override'], { files });
    expect(c).toMatchObject({
      id: 'n3',
      dataDir: '/override',
      secret: 'file-secret',
      client: { host: '127.0.0.1', port: 1921 },
      peers: [{ id: 'n1' }, { id: 'n3', peerPort: 2921 }],
      sessionTimeout: { max: 45_000 },
      limits: { dataBytes: 2 * 1024 * 1024 },
    });
    // The environment beats the file for the secret.
    expect(config(['--config', 'vera.json'], { files, env: { VERA_CLUSTER_SECRET: 'env' } }).secret).toBe('env');
  });

  const BAD: Array<[string, string[], RegExp, Record<string, string>?]> = [
    ['an unknown flag', ['--bogus', '1'], /unknown flag --bogus/],
    ['a flag without its value', ['--id'], /--id needs a value/],
    ['a flag followed by another flag', ['--data', '--id', 'x'], /--data needs a value/],
    ['a repeated flag', ['--id', 'a', '--id', 'b'], /--id is given more than once/],
    ['a port over 65535', ['--client', '127.0.0.1:70000'], /--client has an invalid port "70000"/],
    ['a non-numeric port', ['--peer', '127.0.0.1:http'], /--peer has an invalid port "http"/],
    ['a missing port', ['--client', '127.0.0.1'], /--client must be HOST:PORT/],
    ['a bad host', ['--client', 'bad host:1919'], /--client has an invalid host "bad host"/],
    ['a bare IPv6 host', ['--client', '::1:1919'], /--client has an invalid host/],
    ['an invalid member id', ['--id', 'n=1'], /--id must be 1-64 letters/],
    ['--peers without this member', ['--id', 'n9', '--secret', 's', '--peers', 'n1=127.0.0.1:2919/1919'], /--peers must include this member \(--id n9\)/],
    ['--peers with a duplicate id', ['--secret', 's', '--peers', 'n1=127.0.0.1:2919/1919,n1=127.0.0.1:2920/1920'], /lists member n1 twice/],
    ['--peers with a duplicate address', ['--secret', 's', '--peers', 'n1=127.0.0.1:2919/1919,n2=127.0.0.1:2919/1920'], /gives peer address 127.0.0.1:2919 to two members/],
    ['a malformed --peers entry', ['--peers', 'n1=127.0.0.1:2919'], /--peers entry "n1=127.0.0.1:2919" is not ID=HOST:PEERPORT\/CLIENTPORT/],
    ['a peer client port of 0', ['--peers', 'n1=127.0.0.1:2919/0'], /--peers entry for n1 has an invalid port "0"/],
    ['more than one member without a secret', ['--peers', 'n1=127.0.0.1:2919/1919,n2=127.0.0.1:2920/1920'], /a cluster of 2 members needs a shared secret/],
    ['an empty secret', ['--secret', ''], /--secret must not be empty/],
    ['a bogus log level', ['--log-level', 'loud'], /--log-level must be one of fatal, error, warn, info, debug, trace, silent/],
    ['a bad duration', ['--session-timeout-min', '5 hours'], /--session-timeout-min must be a duration like 5000 \(milliseconds\), 500ms, 5s, 2m, 1h, 7d or 1h30m, got "5 hours"/],
    ['a zero duration', ['--session-timeout-max', '0'], /--session-timeout-max must be a duration/],
    ['min above max', ['--session-timeout-min', '10s', '--session-timeout-max', '5s'], /--session-timeout-min \(10000 ms\) is larger than --session-timeout-max \(5000 ms\)/],
    ['overlapping hibernation roots', ['--hibernate-roots', '/users,/users/a'], /--hibernate-roots \/users and \/users\/a overlap/],
    ['a hibernation root named twice', ['--hibernate-roots', '/users,/users'], /--hibernate-roots names \/users twice/],
    ['a bad size', ['--data-limit', '1GB'], /--data-limit must be a size like/],
    ['data limit too close to the frame limit', ['--data-limit', '16MiB'], /--data-limit \(16777216 bytes\) must be at least 64 KiB below --frame-limit/],
    ['a tiny frame limit', ['--frame-limit', '1000'], /--frame-limit must be at least 131072 bytes/],
    ['a missing config file', ['--config', 'nope.json'], /cannot read config file \/srv\/vera\/nope.json/],
  ];

  it('takes the documented hibernation start line: disjoint roots and a duration in days', () => {
    expect(config(['--hibernate-roots', '/users,/teams,/usersx', '--hibernate-after', '30d']).hibernation).toEqual({
      roots: ['/users', '/teams', '/usersx'],
      afterMs: 30 * 86_400_000,
    });
  });

  for (const [name, argv, message] of BAD) {
    it(`rejects ${name}`, () => {
      expect(usageError(argv)).toMatch(message);
    });
  }

  it('rejects config files that are not a JSON object, have unknown keys or wrongly typed values', () => {
    const files = {
      '/srv/vera/array.json': '[1]',
      '/srv/vera/broken.json': '{"id": ',
      '/srv/vera/typo.json': '{"client-port": 1919}',
      '/srv/vera/typed.json': '{"id": 7}',
    };
    expect(usageError(['--config', 'array.json'], { files })).toMatch(/must hold a JSON object/);
    expect(usageError(['--config', 'broken.json'], { files })).toMatch(/cannot read config file \/srv\/vera\/broken.json/);
    expect(usageError(['--config', 'typo.json'], { files })).toMatch(/unknown key "client-port"/);
    expect(usageError(['--config', 'typed.json'], { files })).toMatch(/id must be a string, got 7/);
  });
});

describe('vera start through main()', () => {
  it('exits 2 with a clear message on bad flags, before starting anything', async () => {
    const io = captureIO();
    expect(await main(['start', '--client', 'localhost:99999'], io)).toBe(2);
    expect(io.err()).toMatch(/^vera start: --client has an invalid port "99999" \(expected 0-65535\)\nRun 'vera start --help' for usage\.\n$/);
    expect(io.out()).toBe('');
  });

  it('exits 2 for more than one member without a secret', async () => {
    const io = captureIO();
    expect(await main(['start', '--peers', 'n1=127.0.0.1:2919/1919,n2=127.0.0.1:2920/1920'], io)).toBe(2);
    expect(io.err()).toMatch(/needs a shared secret: pass --secret or set VERA_CLUSTER_SECRET/);
  });

  it('prints help with --help and -h', async () => {
    for (const flag of ['--help', '-h']) {
      const io = captureIO();
      expect(await main(['start', flag], io)).toBe(0);
      expect(io.out()).toMatch(/--peers ID=HOST:PEERPORT\/CLIENTPORT/);
    }
  });

  it('rejects positional arguments', async () => {
    const io = captureIO();
    expect(await main(['start', 'now'], io)).toBe(2);
    expect(io.err()).toMatch(/takes no arguments, got now/);
  });
});
