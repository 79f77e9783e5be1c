import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { connect } from '../../src/client/index.js';
import { parseData } from '../../src/cli/client-commands.js';
import { main } from '../../src/cli/main.js';
import { captureIO } from './cli-io.js';
import { FakeServer } from './fake-server.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fake(): Promise<FakeServer> {
  const s = await FakeServer.start();
  cleanups.push(() => s.stop());
  return s;
}

async function http(handler: (path: string, method: string) => { status: number; body: string }): Promise<string> {
  const server: Server = createServer((req, res) => {
    const { status, body } = handler(req.url ?? '/', req.method ?? 'GET');
    res.writeHead(status, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closedPortUrl(): Promise<string> {
  const s = await FakeServer.start();
  const url = s.url;
  await s.stop();
  return url;
}

describe('vera client verbs', () => {
  it('push then get, readable and --json', async () => {
    const s = await fake();
    const push = captureIO();
    expect(await main(['push', '/demo', '{"hello":"world"}', '--persistent', '--server', s.url], push)).toBe(0);
    expect(push.out()).toBe('pushed /demo #1 persistent {"hello":"world"}\n');

    const get = captureIO();
    expect(await main(['get', '/demo', '--server', s.url], get)).toBe(0);
    expect(get.out()).toBe('/demo at index 1: 1 item(s)\n#1 persistent {"hello":"world"}\n');

    const json = captureIO();
    expect(await main(['get', '/demo', '--json', '--encoding', 'json', '--server', s.url], json)).toBe(0);
    expect(JSON.parse(json.out())).toEqual({ index: 1, items: [{ index: 1, owner: null, data: { hello: 'world' } }] });
    expect(s.received.find((r) => r.request.op === 'get' && !r.binary)?.request).toMatchObject({ path: '/demo' });
  });

  it('takes the server from VERA_SERVER', async () => {
    const s = await fake();
    const io = captureIO({ env: { VERA_SERVER: s.url } });
    expect(await main(['ls', '/'], io)).toBe(0);
    expect(s.received.map((r) => r.request.op)).toContain('ls');
  });

  it('parses push data as JSON, falling back to a plain string', () => {
    expect(parseData('{"a":[1,true,null]}')).toEqual({ a: [1, true, null] });
    expect(parseData('42')).toBe(42);
    expect(parseData('"42"')).toBe('42');
    expect(() => parseData('hello world')).toThrow(/DATA is not valid JSON.*--string/);
    expect(() => parseData('{broken')).toThrow(/not valid JSON/);
    expect(parseData('hello world', true)).toBe('hello world');
    expect(parseData('42', true)).toBe('42');
  });

  it('warns that an ephemeral push ends with the command, and ls/delete print what they did', async () => {
    const s = await fake();
    const io = captureIO();
    expect(await main(['push', '/a/b', 'plain text', '--string', '--server', s.url], io)).toBe(0);
    expect(io.out()).toMatch(/^pushed \/a\/b #1 owner=s1 "plain text"\n$/);
    expect(io.err()).toMatch(/ephemeral and is deleted as this command ends its session/);

    await main(['push', '/a/c', '1', '--persistent', '--server', s.url], captureIO());
    const ls = captureIO();
    expect(await main(['ls', '/a', '--server', s.url], ls)).toBe(0);
    expect(ls.out()).toBe('c\n'); // /a/b went with its session
    const del = captureIO();
    expect(await main(['delete', '/a/c', '3', '--json', '--server', s.url], del)).toBe(0);
    expect(JSON.parse(del.out())).toEqual({ path: '/a/c', index: 3, deleted: true });
  });

  it('takes DATA from stdin or a file, refuses text that is not JSON unless --string', async () => {
    const s = await fake();
    const typo = captureIO();
    expect(await main(['push', '/d', '{"a":1', '--server', s.url], typo)).toBe(2);
    expect(typo.err()).toMatch(/DATA is not valid JSON.*pass --string/);
    const fromStdin = captureIO({ stdin: '{"from":"stdin"}\n' });
    expect(await main(['push', '/d', '-', '--persistent', '--json', '--server', s.url], fromStdin)).toBe(0);
    expect(JSON.parse(fromStdin.out()).data).toEqual({ from: 'stdin' });
    const dir = mkdtempSync(join(tmpdir(), 'vera-cli-data-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'v.txt'), 'line one\nline two\n');
    const fromFile = captureIO({ cwd: dir });
    expect(await main(['push', '/d', '@v.txt', '--string', '--persistent', '--json', '--server', s.url], fromFile)).toBe(0);
    expect(JSON.parse(fromFile.out()).data).toBe('line one\nline two');
    const literal = captureIO();
    expect(await main(['push', '/d', '@@handle', '--string', '--persistent', '--json', '--server', s.url], literal)).toBe(0);
    expect(JSON.parse(literal.out()).data).toBe('@handle');
    const missing = captureIO({ cwd: dir });
    expect(await main(['push', '/d', '@nope.json', '--server', s.url], missing)).toBe(2);
    expect(missing.err()).toMatch(/cannot read DATA from nope\.json/);
  });

  it('holds an ephemeral item with --hold until stopped', async () => {
    const s = await fake();
    const io = captureIO();
    const run = main(['push', '/held', '"x"', '--hold', '--server', s.url], io);
    await io.waitForOut(/pushed \/held/);
    const reader = await connect(s.url);
    cleanups.push(() => reader.close());
    expect((await reader.get('/held')).items).toHaveLength(1);
    io.stopNow();
    expect(await run).toBe(0);
    expect((await reader.get('/held')).items).toHaveLength(0);
  });

  it('passes --if-last-index and exits 1 on the server CONFLICT', async () => {
    const s = await fake();
    await main(['push', '/cas', '1', '--persistent', '--server', s.url], captureIO());
    const io = captureIO();
    expect(await main(['push', '/cas', '2', '--if-last-index', '0', '--server', s.url], io)).toBe(1);
    expect(io.err()).toMatch(/^vera: CONFLICT: /);
  });

  it('exits 1 with the code and message of a server error', async () => {
    const s = await fake();
    const io = captureIO();
    expect(await main(['delete', '/nothing', '5', '--server', s.url], io)).toBe(1);
    expect(io.err()).toBe('vera: NOT_FOUND: no item 5 in /nothing\n');
  });

  it('exits 3 when it cannot connect', async () => {
    const url = await closedPortUrl();
    const io = captureIO();
    expect(await main(['get', '/a', '--server', url, '--timeout', '200'], io)).toBe(3);
    expect(io.err()).toMatch(/^vera: UNAVAILABLE: could not connect to/);
  });

  const USAGE_ERRORS: Array<[string, string[], RegExp]> = [
    ['a relative path', ['get', 'demo'], /path must start with '\/'/],
    ['the root path for get', ['get', '/'], /root path/],
    ['a missing argument', ['push', '/a'], /'vera push' takes PATH DATA, got 1 argument\(s\)/],
    ['an extra argument', ['ls', '/', '/b'], /'vera ls' takes PATH, got 2/],
    ['a bad index', ['delete', '/a', 'seven'], /INDEX must be a non-negative whole number, got "seven"/],
    ['a negative if-last-index', ['push', '/a', '1', '--if-last-index', '-1'], /--if-last-index must be a non-negative whole number/],
    ['an unknown flag', ['get', '/a', '--fast'], /unknown flag --fast for 'vera get'/],
    ['a bad encoding', ['get', '/a', '--encoding', 'xml'], /--encoding must be msgpack or json/],
    ['a bad timeout', ['get', '/a', '--timeout', 'soon'], /--timeout must be a positive number of milliseconds/],
    ['a bad server URL', ['get', '/a', '--server', 'http://[oops'], /invalid server address/],
    ['a server URL with another scheme', ['get', '/a', '--server', 'ftp://x:1'], /must use ws:\/\/ or wss:\/\//],
    ['an unknown command', ['frobnicate'], /unknown command "frobnicate"/],
  ];
  for (const [name, argv, message] of USAGE_ERRORS) {
    it(`exits 2 on ${name}, without connecting`, async () => {
      const io = captureIO({ env: { VERA_SERVER: 'ws://127.0.0.1:1' } });
      expect(await main(argv, io)).toBe(2);
      expect(io.err()).toMatch(message);
      expect(io.out()).toBe('');
    });
  }

  it('prints help for every verb, and the command list without one', async () => {
    for (const verb of ['push', 'get', 'ls', 'delete', 'watch', 'status']) {
      const io = captureIO();
      expect(await main([verb, '--help'], io)).toBe(0);
      expect(io.out()).toMatch(new RegExp(`^Usage: vera ${verb}`));
    }
    const bare = captureIO();
    expect(await main([], bare)).toBe(2);
    expect(bare.err()).toMatch(/^Usage: vera <command>/);
    const help = captureIO();
    expect(await main(['--help'], help)).toBe(0);
    expect(help.out()).toMatch(/Exit codes: 0 ok, 1 error from the server, 2 usage error, 3 cannot connect/);
  });
});

describe('vera watch', () => {
  it('prints the list, then each change as a JSON line, until stopped', async () => {
    const s = await fake();
    const io = captureIO();
    const run = main(['watch', '/w', '--json', '--server', s.url], io);
    await io.waitForOut(/"type":"watch"/);
    const writer = await connect(s.url);
    cleanups.push(() => writer.close());
    const item = await writer.push('/w', { n: 1 });
    await io.waitForOut(/"type":"push"/);
    await writer.delete('/w', item.index);
    await io.waitForOut(/"type":"delete"/);
    io.stopNow();
    expect(await run).toBe(0);
    const lines = io.out().trim().split('\n').map((l) => JSON.parse(l) as unknown);
    expect(lines).toEqual([
      { type: 'watch', path: '/w', index: 0, items: [] },
      { index: 1, type: 'push', path: '/w', item },
      { index: 2, type: 'delete', path: '/w', item },
    ]);
  });

  it('prints readable lines by default', async () => {
    const s = await fake();
    const io = captureIO();
    const run = main(['watch', '/r', '--server', s.url], io);
    await io.waitForOut(/watching \/r from index 0/);
    const writer = await connect(s.url);
    cleanups.push(() => writer.close());
    await writer.push('/r', 'hi', { persistent: true });
    await io.waitForOut(/\[1\] push \/r #1 persistent "hi"/);
    io.stopNow();
    expect(await run).toBe(0);
  });
});

describe('vera get --stale with several --server URLs', () => {
  it('goes on to the next server when one sends readers to the leader, and stops at any other error', async () => {
    const notLeader = await http(() => ({ status: 421, body: JSON.stringify({ error: { code: 'NOT_LEADER', message: 'not the leader', leader: 'ws://x' } }) }));
    const answers = await http((path) => ({ status: 200, body: JSON.stringify({ index: 7, items: path.startsWith('/v1/data/a?') ? [{ index: 3, owner: null, data: 'x' }] : [] }) }));
    const io = captureIO();
    expect(await main(['get', '/a', '--stale', '--json', '--server', `${notLeader},${answers}`], io)).toBe(0);
    expect(JSON.parse(io.out())).toEqual({ index: 7, items: [{ index: 3, owner: null, data: 'x' }] });
    const refused = await http(() => ({ status: 403, body: JSON.stringify({ error: { code: 'FORBIDDEN', message: 'no' } }) }));
    const denied = captureIO();
    expect(await main(['get', '/a', '--stale', '--server', `${refused},${answers}`], denied)).toBe(1);
    expect(denied.err()).toMatch(/FORBIDDEN/);
  });
});

describe('vera status', () => {
  it('prints GET /v1/status readably, or raw with --json', async () => {
    const status = { id: 'n1', role: 'leader', term: 3, members: [{ id: 'n1', voter: true, clientUrl: 'ws://127.0.0.1:1919' }] };
    const url = await http((path) => (path === '/v1/status' ? { status: 200, body: JSON.stringify(status) } : { status: 404, body: '{}' }));
    const io = captureIO();
    expect(await main(['status', '--server', url], io)).toBe(0);
    expect(io.out()).toBe('id: n1\nrole: leader\nterm: 3\nmembers:\n  - id=n1 voter=true clientUrl=ws://127.0.0.1:1919\n');
    const json = captureIO();
    expect(await main(['status', '--json', '--server', url], json)).toBe(0);
    expect(JSON.parse(json.out())).toEqual(status);
  });

  it('exits 1 when the server answers an error and 3 when it cannot be reached', async () => {
    const url = await http(() => ({ status: 503, body: '{"error":"not serving"}' }));
    const failing = captureIO();
    expect(await main(['status', '--server', url], failing)).toBe(1);
    expect(failing.err()).toMatch(/answered 503/);
    const unreachable = captureIO();
    expect(await main(['status', '--server', await closedPortUrl()], unreachable)).toBe(3);
    expect(unreachable.err()).toMatch(/cannot reach http:\/\/127\.0\.0\.1:\d+\/v1\/status/);
  });

  it('asks each --server in turn until one answers', async () => {
    const url = await http(() => ({ status: 200, body: '{"id":"n2","role":"follower"}' }));
    const dead = await closedPortUrl();
    const io = captureIO();
    expect(await main(['status', '--json', '--server', `${dead},${url}`], io)).toBe(0);
    expect(JSON.parse(io.out())).toEqual({ id: 'n2', role: 'follower' });
    expect(io.err()).toContain(`cannot reach ${dead.replace('ws:', 'http:')}/v1/status`);
  });
});

describe('vera member with several --server URLs', () => {
  /** A port that accepts connections and never answers (a hung member). */
  async function silentUrl(): Promise<string> {
    const sockets = new Set<import('node:net').Socket>();
    const server = createTcpServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(
      () =>
        new Promise((resolve) => {
          for (const socket of sockets) socket.destroy();
          server.close(() => resolve());
        }),
    );
    return `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it('a list goes on to the next member when one cannot be reached', async () => {
    const url = await http(() => ({ status: 200, body: JSON.stringify({ role: 'leader', members: [{ id: 'n2', role: 'leader', voter: true }] }) }));
    const io = captureIO();
    expect(await main(['member', 'list', '--json', '--server', `${await silentUrl()},${url}`, '--timeout', '300'], io)).toBe(0);
    expect(JSON.parse(io.out())).toMatchObject({ role: 'leader' });
  });

  it('a change goes on only past a refused connection, never past one that may have been received', async () => {
    const posts: string[] = [];
    const url = await http((path, method) => {
      if (method === 'POST') posts.push(path);
      return { status: 200, body: JSON.stringify({ ok: true, config: { voters: ['n1'], learners: [] } }) };
    });
    const refused = captureIO();
    expect(await main(['member', 'remove', 'n3', '--json', '--server', `${await closedPortUrl()},${url}`], refused)).toBe(0);
    expect(posts).toEqual(['/v1/members']);
    const hung = captureIO();
    expect(await main(['member', 'remove', 'n3', '--json', '--server', `${await silentUrl()},${url}`, '--timeout', '300'], hung)).toBe(3);
    expect(posts).toEqual(['/v1/members']); // not sent again: the hung member may have acted on it
  });
});
