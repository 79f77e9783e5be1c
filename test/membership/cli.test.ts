// `vera member`/`vera leader` argument handling and `vera start --join`
// configuration, without a server (usage errors exit 2 before any network use).
import { describe, expect, it } from 'vitest';
import { parseArgs } from '../../src/cli/args.js';
import { buildServerConfig, START_FLAGS, type ServerConfig } from '../../src/cli/config.js';
import { UsageError } from '../../src/cli/errors.js';
import { main } from '../../src/cli/main.js';
import { formatMembers } from '../../src/cli/member.js';
import { captureIO } from '../client/cli-io.js';
import { freePort } from '../support/vera-process.js';

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = captureIO();
  const code = await main(argv, io);
  return { code, out: io.out(), err: io.err() };
}

function startConfig(argv: string[], files: Record<string, string> = {}): ServerConfig {
  const args = parseArgs(argv, START_FLAGS, 'vera start');
  return buildServerConfig({
    flags: args.flags,
    env: {},
    cwd: '/srv',
    readFile: (path) => {
      const text = files[path];
      if (text === undefined) throw new Error(`ENOENT ${path}`);
      return text;
    },
  });
}

describe('vera member / vera leader arguments', () => {
  it.each([
    [['member'], /expected one of: list, add, promote, remove/],
    [['member', 'grow'], /expected one of/],
    [['member', 'add', 'n2'], /needs --peer HOST:PORT and --client HOST:PORT/],
    [['member', 'add', '--peer', 'h:1', '--client', 'h:2'], /exactly one member id, got none/],
    [['member', 'promote', 'n2', 'n3'], /exactly one member id, got n2 n3/],
    [['member', 'list', 'extra'], /takes no arguments/],
    [['member', 'remove', 'n2', '--peer', 'h:1'], /--peer is only for 'vera member add'/],
    [['leader', 'elect', 'n2'], /expected 'vera leader transfer ID'/],
    [['leader', 'transfer'], /exactly one member id/],
    [['member', 'list', '--bogus'], /unknown flag --bogus/],
    [['member', 'list', '--timeout', 'soon'], /--timeout must be a positive number/],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await run(argv);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
    expect(r.out).toBe('');
  });

  it('prints help for both verbs and lists them in the main help', async () => {
    expect((await run(['member', '--help'])).out).toMatch(/vera member add ID --peer HOST:PORT --client HOST:PORT/);
    expect((await run(['leader', '-h'])).out).toMatch(/Usage: vera leader transfer ID/);
    expect((await run(['--help'])).out).toMatch(/member\s+list, add, promote or remove cluster members/);
  });

  it('exits 3 when no member answers', async () => {
    const port = await freePort();
    const r = await run(['member', 'list', '--server', `ws://127.0.0.1:${port}`, '--timeout', '2000']);
    expect(r.code).toBe(3);
    expect(r.err).toMatch(new RegExp(`cannot reach http://127.0.0.1:${port}/v1/members`));
  });

  it('formats the member list one aligned line per member', () => {
    const text = formatMembers({
      id: 'n1',
      role: 'leader',
      leader: 'n1',
      members: [
        { id: 'n1', role: 'voter', peer: '10.0.0.1:2919', client: '10.0.0.1:1919', match: 9, lag: 0 },
        { id: 'n10', role: 'learner', peer: null, client: null, match: 0, lag: 9 },
      ],
    });
    expect(text.split('\n')).toEqual([
      'members as seen by leader n1:',
      '  n1   voter    peer=10.0.0.1:2919  client=10.0.0.1:1919  match=9 lag=0  (leader)',
      '  n10  learner  peer=?              client=?              match=0 lag=9',
    ]);
  });
});

describe('vera start --join', () => {
  it('does not need this member in --peers, taking its own addresses from --client/--peer', () => {
    const c = startConfig(['--id', 'n4', '--join', '--secret', 's', '--client', '10.0.0.4:1919', '--peer', '10.0.0.4:2919', '--peers', 'n1=10.0.0.1:2919/1919']);
    expect(c.join).toBe(true);
    expect(c.peers).toEqual([
      { id: 'n1', host: '10.0.0.1', peerPort: 2919, clientPort: 1919 },
      { id: 'n4', host: '10.0.0.4', peerPort: 2919, clientPort: 1919 },
    ]);
  });

  it('listens where its own --peers entry says when it has one', () => {
    const c = startConfig(['--id', 'n2', '--join', '--secret', 's', '--peers', 'n1=10.0.0.1:2919/1919,n2=10.0.0.2:2920/1920']);
    expect(c).toMatchObject({ join: true, client: { host: '10.0.0.2', port: 1920 }, peer: { host: '10.0.0.2', port: 2920 } });
  });

  it('is off by default and may be set in a config file', () => {
    expect(startConfig([]).join).toBe(false);
    const files = { '/srv/v.json': JSON.stringify({ id: 'n2', join: true, secret: 's', peers: 'n1=10.0.0.1:2919/1919' }) };
    expect(startConfig(['--config', 'v.json'], files).join).toBe(true);
  });

  it.each([
    [['--join', '--secret', 's'], /--join needs --peers listing at least one existing member/],
    [['--id', 'n1', '--join', '--secret', 's', '--peers', 'n1=10.0.0.1:2919/1919'], /--join needs --peers listing at least one existing member/],
    [['--join', '--peers', 'n2=10.0.0.2:2919/1919'], /--join needs the cluster's shared secret/],
  ])('refuses %j', (argv, message) => {
    expect(() => startConfig(argv)).toThrow(UsageError);
    expect(() => startConfig(argv)).toThrow(message);
  });

  it('refuses a config-file join that is not a boolean', () => {
    const files = { '/srv/v.json': JSON.stringify({ join: 'yes' }) };
    expect(() => startConfig(['--config', 'v.json'], files)).toThrow(/join must be true or false/);
  });
});
