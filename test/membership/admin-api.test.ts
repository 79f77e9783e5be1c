// The membership endpoints against a scripted member: authentication, input
// checks, the guards (caught-up promotion, last voter, pending change), follower
// redirects and leadership transfer. The real cluster is in cluster.test.ts.
import { operatorAuthorization } from '../../src/server/admin/operator-auth.js';
import { OperatorChallenges } from '../../src/server/admin/operator-challenges.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MemberChange } from '../../src/raft/config.js';
import { RaftError } from '../../src/raft/driver.js';
import type { NodeId, Status } from '../../src/raft/types.js';
import { authorizeOperator, handleAdmin, issueChallenge, LeaderWatch, MemberDirectory, type AdminContext, type MembershipNode } from '../../src/server/admin/membership.js';
import { VeraError } from '../../src/protocol/index.js';
import { initialMembers, type Member } from '../../src/statemachine/index.js';

const SECRET = 'admin-secret';
const logger = pino({ level: 'silent' });
const SEED = [
  { id: 'n1', host: '127.0.0.1', peerPort: 2919, clientPort: 1919 },
  { id: 'n2', host: '127.0.0.1', peerPort: 2920, clientPort: 1920 },
];

class ScriptedNode implements MembershipNode {
  status_: Status = {
    id: 'n1',
    role: 'leader',
    term: 3,
    leader: 'n1',
    commit: 500,
    applied: 500,
    lastIndex: 500,
    config: { voters: ['n1', 'n2'], learners: [] },
    progress: { n2: { match: 500, next: 501, recentActive: true } },
  };
  book: Member[] = initialMembers(SEED);
  readonly proposed: MemberChange[] = [];
  readonly transfers: NodeId[] = [];
  /** What the next proposal does. */
  outcome: () => Promise<{ index: number }> = async () => ({ index: 501 });
  transferAccepted = true;

  status(): Status {
    return this.status_;
  }
  members(): readonly Member[] {
    return this.book;
  }
  proposeConfigChange(change: MemberChange): Promise<{ index: number }> {
    this.proposed.push(change);
    return this.outcome();
  }
  transferLeadership(to: NodeId): boolean {
    this.transfers.push(to);
    return this.transferAccepted;
  }
  readonly waitedFor: number[] = [];
  waitApplied(index: number): Promise<void> {
    this.waitedFor.push(index);
    return Promise.resolve();
  }
  set(patch: Partial<Status>): void {
    this.status_ = { ...this.status_, ...patch };
  }
}

let node: ScriptedNode;
let watch: LeaderWatch;
let server: Server;
let base: string;
let secret: string | null;
let challenges: OperatorChallenges;

function context(): AdminContext {
  return {
    node,
    directory: new MemberDirectory('n1', SEED, () => 'ws://127.0.0.1:1919', null, () => undefined, logger),
    leaderWatch: watch,
    secret,
    canGrow: true,
    promoteMaxLag: 100,
    transferTimeoutMs: 300,
    toError: (err) =>
      err instanceof RaftError && err.code === 'UNAVAILABLE'
        ? new VeraError('UNAVAILABLE', err.message, { retryAfterMs: 200 })
        : new VeraError('INTERNAL', String(err)),
    logger,
    defrag: async () => void defrags++,
    // Authentication off (as here): proof of the cluster secret, or loopback without one.
    authorize: async (req, what, body) => authorizeOperator(secret, challenges, req, what, body),
    challenges,
  };
}
let defrags = 0;

beforeEach(async () => {
  node = new ScriptedNode();
  watch = new LeaderWatch();
  secret = SECRET;
  challenges = new OperatorChallenges();
  server = createServer((req, res) => {
    const ctx = context();
    void ctx.directory.update(node.book).then(() => handleAdmin(ctx, req, res, new URL(req.url ?? '/', 'http://x').pathname));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function call(method: string, path: string, body?: unknown, auth: string | null = `Bearer ${SECRET}`): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (auth !== null) headers.authorization = auth;
  const res = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const errorOf = (r: { body: Record<string, unknown> }): Record<string, unknown> => r.body.error as Record<string, unknown>;

describe('authentication', () => {
  it('needs the cluster secret as a bearer token when one is configured', async () => {
    for (const auth of [null, 'Bearer wrong', SECRET, 'Basic x']) {
      const r = await call('GET', '/v1/members', undefined, auth);
      expect(r.status).toBe(401);
      expect(errorOf(r).code).toBe('UNAUTHORIZED');
    }
    expect((await call('GET', '/v1/members')).status).toBe(200);
    expect(node.proposed).toEqual([]);
  });

  it('without a secret, answers loopback clients only', async () => {
    secret = null;
    expect((await call('GET', '/v1/members', undefined, null)).status).toBe(200);
    const written: { status?: number; body?: string } = {};
    const res = {
      writeHead: (status: number) => void (written.status = status),
      end: (body: string) => void (written.body = body),
    } as unknown as ServerResponse;
    const req = { method: 'GET', headers: {}, socket: { remoteAddress: '10.1.2.3' } } as unknown as IncomingMessage;
    const done = new Promise<void>((resolve) => (res.end = ((body: string) => ((written.body = body), resolve())) as ServerResponse['end']));
    handleAdmin(context(), req, res, '/v1/members');
    await done;
    expect(written.status).toBe(403);
    expect(JSON.parse(written.body!).error.code).toBe('FORBIDDEN');
  });
});

describe('the member directory', () => {
  it('forgets the data directory of a member removed and added again, even when one book shows both changes at once', async () => {
    const removed: string[] = [];
    const directory = new MemberDirectory('n1', SEED, () => 'ws://127.0.0.1:1919', null, (id) => removed.push(id), logger);
    const address = (port: number) => ({ host: '127.0.0.1', peerPort: port, clientPort: port + 1 });
    await directory.update([
      { id: 'n1', voter: true, address: address(2000) },
      { id: 'n2', voter: true, address: address(2010) },
      { id: 'n3', voter: false, address: address(2020) },
    ]);
    expect(removed).toEqual([]);
    // n2 removed and added back (a learner again) between two books; n3 promoted.
    await directory.update([
      { id: 'n1', voter: true, address: address(2000) },
      { id: 'n2', voter: false, address: address(2010) },
      { id: 'n3', voter: true, address: address(2020) },
    ]);
    expect(removed).toEqual(['n2']);
    await directory.update([{ id: 'n1', voter: true, address: address(2000) }, { id: 'n3', voter: true, address: address(2020) }]);
    expect(removed).toEqual(['n2', 'n2']);
  });
});

describe('challenge and response', () => {
  it('proves the secret without sending it: a fresh nonce once, signed for its method, path and body', async () => {
    const sign = (nonce: string, method: string, path: string, body: unknown = undefined, secret = SECRET): string =>
      operatorAuthorization(secret, nonce, method, path, Buffer.from(body === undefined ? '' : JSON.stringify(body)));
    const nonce = (): string => issueChallenge(challenges, '127.0.0.1').nonce;
    const n1 = nonce();
    expect((await call('GET', '/v1/members', undefined, sign(n1, 'GET', '/v1/members'))).status).toBe(200);
    // A nonce serves one request: the same request again is refused, as is another one under it.
    expect(errorOf(await call('GET', '/v1/members', undefined, sign(n1, 'GET', '/v1/members')))).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringContaining('challenge') });
    expect((await call('POST', '/v1/defrag', {}, sign(n1, 'POST', '/v1/defrag', {}))).status).toBe(401);
    // Signed for another path, method, body or secret, or a nonce never issued: refused.
    expect((await call('POST', '/v1/defrag', {}, sign(nonce(), 'GET', '/v1/members'))).status).toBe(401);
    expect((await call('POST', '/v1/defrag', {}, sign(nonce(), 'POST', '/v1/defrag', {}, 'not the secret'))).status).toBe(401);
    expect((await call('POST', '/v1/defrag', {}, sign('x'.repeat(32), 'POST', '/v1/defrag', {}))).status).toBe(401);
    const add = { action: 'add', id: 'n3', peer: '127.0.0.1:2921', client: '127.0.0.1:1921' };
    expect((await call('POST', '/v1/members', { ...add, id: 'n9' }, sign(nonce(), 'POST', '/v1/members', add))).status).toBe(401);
    // A wrong answer uses the nonce up: the right one after it is refused.
    const n2 = nonce();
    expect((await call('POST', '/v1/defrag', {}, sign(n2, 'POST', '/v1/defrag', { other: 1 }))).status).toBe(401);
    expect((await call('POST', '/v1/defrag', {}, sign(n2, 'POST', '/v1/defrag', {}))).status).toBe(401);
    expect(node.proposed).toEqual([]);
    expect((await call('POST', '/v1/defrag', {}, sign(nonce(), 'POST', '/v1/defrag', {}))).status).toBe(200);
    expect((await call('POST', '/v1/members', add, sign(nonce(), 'POST', '/v1/members', add))).status).toBe(200);
    expect(node.proposed.length).toBe(1);
  });

  it('refuses the secret itself sent from beyond loopback', async () => {
    const written: { status?: number; body?: string } = {};
    const res = { writeHead: (status: number) => void (written.status = status) } as unknown as ServerResponse;
    const req = { method: 'GET', url: '/v1/members', headers: { authorization: `Bearer ${SECRET}` }, socket: { remoteAddress: '10.1.2.3' } } as unknown as IncomingMessage;
    const done = new Promise<void>((resolve) => (res.end = ((body: string) => ((written.body = body), resolve())) as ServerResponse['end']));
    handleAdmin(context(), req, res, '/v1/members');
    await done;
    expect(written.status).toBe(401);
    expect(JSON.parse(written.body!).error.message).toMatch(/sent in the clear/);
  });
});

describe('POST /v1/defrag', () => {
  it('compacts this member\'s db for a caller with the secret, and only by POST', async () => {
    defrags = 0;
    expect((await call('POST', '/v1/defrag', {}, 'Bearer wrong')).status).toBe(401);
    expect((await call('GET', '/v1/defrag')).status).toBe(400);
    expect(defrags).toBe(0);
    const r = await call('POST', '/v1/defrag', {});
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ defragmented: true, ms: expect.any(Number) });
    expect(defrags).toBe(1);
    expect(node.proposed).toEqual([]);
  });
});

describe('GET /v1/members', () => {
  it('lists members with roles, addresses and, on the leader, their progress', async () => {
    node.set({ config: { voters: ['n1', 'n2'], learners: ['n3'] }, progress: { n2: { match: 480, next: 481, recentActive: true } } });
    node.book = [...node.book, { id: 'n3', voter: false, address: { host: 'vera-3', peerPort: 2919, clientPort: 1919 } }];
    const r = await call('GET', '/v1/members');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: 'n1', role: 'leader', leader: 'n1', leaderUrl: 'ws://127.0.0.1:1919', lastIndex: 500 });
    expect(r.body.members).toEqual([
      { id: 'n1', role: 'voter', peer: '127.0.0.1:2919', client: '127.0.0.1:1919', clientUrl: 'ws://127.0.0.1:1919', match: 500, lag: 0 },
      { id: 'n2', role: 'voter', peer: '127.0.0.1:2920', client: '127.0.0.1:1920', clientUrl: 'ws://127.0.0.1:1920', match: 480, lag: 20 },
      { id: 'n3', role: 'learner', peer: 'vera-3:2919', client: 'vera-3:1919', clientUrl: 'ws://vera-3:1919', match: 0, lag: 500 },
    ]);
  });

  it('on a follower, lists without progress', async () => {
    node.set({ role: 'follower', leader: 'n2' });
    const r = await call('GET', '/v1/members');
    expect(r.body).toMatchObject({ role: 'follower', leader: 'n2', leaderUrl: 'ws://127.0.0.1:1920' });
    expect((r.body.members as Array<Record<string, unknown>>).every((m) => m.match === undefined)).toBe(true);
  });
});

describe('POST /v1/members', () => {
  it('adds a learner with its address, the base configuration and the address book', async () => {
    const r = await call('POST', '/v1/members', { action: 'add', id: 'n3', peer: '127.0.0.1:2921', client: '127.0.0.1:1921' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ action: 'add', member: 'n3', index: 501, id: 'n1' });
    expect(node.proposed).toEqual([
      {
        type: 'addLearner',
        node: 'n3',
        address: { host: '127.0.0.1', peerPort: 2921, clientPort: 1921 },
        base: { voters: ['n1', 'n2'], learners: [] },
        book: [
          { id: 'n1', address: { host: '127.0.0.1', peerPort: 2919, clientPort: 1919 } },
          { id: 'n2', address: { host: '127.0.0.1', peerPort: 2920, clientPort: 1920 } },
        ],
      },
    ]);
  });

  it.each([
    ['a body that is not JSON', 'nope', 400, 'BAD_REQUEST', /JSON object/],
    ['an unknown action', { action: 'demote', id: 'n2' }, 400, 'BAD_REQUEST', /action must be/],
    ['a bad member id', { action: 'remove', id: '../x' }, 400, 'BAD_REQUEST', /member id/],
    ['a bad address', { action: 'add', id: 'n3', peer: 'host', client: 'h:1' }, 400, 'BAD_REQUEST', /peer must be HOST:PORT/],
    ['an unexpected field', { action: 'promote', id: 'n2', peer: 'h:1' }, 400, 'BAD_REQUEST', /unexpected field "peer"/],
    ['adding a member twice', { action: 'add', id: 'n2', peer: '127.0.0.1:2999', client: '127.0.0.1:1999' }, 409, 'CONFLICT', /already a voter/],
    ['a peer address in use', { action: 'add', id: 'n3', peer: '127.0.0.1:2920', client: '127.0.0.1:1999' }, 409, 'CONFLICT', /belongs to n2/],
    ['promoting a voter', { action: 'promote', id: 'n2' }, 409, 'CONFLICT', /already a voter/],
    ['promoting a stranger', { action: 'promote', id: 'n7' }, 404, 'NOT_FOUND', /not a member/],
    ['removing a stranger', { action: 'remove', id: 'n7' }, 404, 'NOT_FOUND', /not a member/],
  ])('refuses %s without proposing anything', async (_what, body, status, code, message) => {
    const r = await call('POST', '/v1/members', body);
    expect(r.status).toBe(status);
    expect(errorOf(r).code).toBe(code);
    expect(String(errorOf(r).message)).toMatch(message);
    expect(node.proposed).toEqual([]);
  });

  it('promotes a learner only once it has caught up', async () => {
    node.set({ config: { voters: ['n1', 'n2'], learners: ['n3'] }, progress: { n3: { match: 0, next: 1, recentActive: false } } });
    const never = await call('POST', '/v1/members', { action: 'promote', id: 'n3' });
    expect([never.status, errorOf(never).code]).toEqual([409, 'CONFLICT']);
    node.set({ progress: { n3: { match: 350, next: 351, recentActive: true } } });
    const behind = await call('POST', '/v1/members', { action: 'promote', id: 'n3' });
    expect(String(errorOf(behind).message)).toMatch(/has not caught up: it holds the log up to 350, the leader up to 500 \(150 behind/);
    expect(node.proposed).toEqual([]);
    node.set({ progress: { n3: { match: 420, next: 421, recentActive: true } } });
    expect((await call('POST', '/v1/members', { action: 'promote', id: 'n3' })).status).toBe(200);
    expect(node.proposed.map((c) => [c.type, c.node])).toEqual([['promote', 'n3']]);
  });

  it('never removes the last voter', async () => {
    node.set({ config: { voters: ['n1'], learners: ['n2'] } });
    const r = await call('POST', '/v1/members', { action: 'remove', id: 'n1' });
    expect([r.status, errorOf(r).code]).toEqual([409, 'CONFLICT']);
    expect(String(errorOf(r).message)).toMatch(/last voter/);
    expect((await call('POST', '/v1/members', { action: 'remove', id: 'n2' })).status).toBe(200);
  });

  it('takes one change at a time, each checked against the configuration after the one before', async () => {
    let finish!: () => void;
    node.outcome = () =>
      new Promise((resolve) => {
        finish = () => {
          node.set({ config: { voters: ['n1', 'n2'], learners: ['n3'] }, applied: 501 });
          resolve({ index: 501 });
        };
      });
    const body = { action: 'add', id: 'n3', peer: '127.0.0.1:2921', client: '127.0.0.1:1921' };
    const first = call('POST', '/v1/members', body);
    while (node.proposed.length === 0) await new Promise((resolve) => setImmediate(resolve));
    const second = call('POST', '/v1/members', body);
    finish();
    expect((await first).status).toBe(200);
    const again = await second;
    expect([again.status, String(errorOf(again).message)]).toEqual([409, 'n3 is already a learner']);
    expect(node.proposed).toHaveLength(1);
    // Each waited until everything handed out for applying had been applied.
    expect(node.waitedFor).toEqual([500, 501]);
  });

  it('answers UNAVAILABLE with retryAfterMs while another change is pending', async () => {
    node.outcome = () => Promise.reject(new RaftError('UNAVAILABLE', 'a membership change is in progress', 'n1'));
    const r = await call('POST', '/v1/members', { action: 'remove', id: 'n2' });
    expect(r.status).toBe(503);
    expect(errorOf(r)).toMatchObject({ code: 'UNAVAILABLE', retryAfterMs: 200 });
  });

  it('on a follower, names the leader (421 NOT_LEADER), or says none is known (503 NO_LEADER)', async () => {
    node.set({ role: 'follower', leader: 'n2' });
    const r = await call('POST', '/v1/members', { action: 'remove', id: 'n2' });
    expect(r.status).toBe(421);
    expect(errorOf(r)).toMatchObject({ code: 'NOT_LEADER', leader: 'ws://127.0.0.1:1920' });
    node.set({ leader: null });
    const none = await call('POST', '/v1/members', { action: 'remove', id: 'n2' });
    expect([none.status, errorOf(none).code]).toEqual([503, 'NO_LEADER']);
    expect(node.proposed).toEqual([]);
  });
});

describe('POST /v1/leader/transfer', () => {
  it('answers once the chosen member leads', async () => {
    const pending = call('POST', '/v1/leader/transfer', { to: 'n2' });
    // Wait until the transfer was started, then play the role changes it causes.
    while (node.transfers.length === 0) await new Promise((resolve) => setImmediate(resolve));
    watch.notify({ role: 'follower', leader: null });
    watch.notify({ role: 'follower', leader: 'n2' });
    const r = await pending;
    expect(r).toEqual({ status: 200, body: { leader: 'n2', leaderUrl: 'ws://127.0.0.1:1920' } });
  });

  it('times out when nobody takes over, and refuses learners and strangers', async () => {
    const r = await call('POST', '/v1/leader/transfer', { to: 'n2' });
    expect([r.status, errorOf(r).code]).toEqual([504, 'TIMEOUT']);
    node.set({ config: { voters: ['n1'], learners: ['n2'] } });
    expect(errorOf(await call('POST', '/v1/leader/transfer', { to: 'n2' })).code).toBe('CONFLICT');
    expect(errorOf(await call('POST', '/v1/leader/transfer', { to: 'n9' })).code).toBe('NOT_FOUND');
    expect(node.transfers).toEqual(['n2']);
  });
});
